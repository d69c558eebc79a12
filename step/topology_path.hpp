// The topology file pattern (plugstack.conf topology=, gputopo-launch
// --topology) expanded for one node: the one definition both front ends use.
#pragma once

#include <string>

namespace gputopo::step {

// Expands %n (the Slurm node name), %h (the host name) and %% in `pattern`.
// Throws ParseError on any other % sequence, and when a name is empty, ".",
// ".." or contains '/' (it would change the directory).
std::string expand_path(const std::string& pattern, const std::string& node, const std::string& host);

}  // namespace gputopo::step
