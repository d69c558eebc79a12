// This machine's host name: the one gethostname() for the CLI, the plugin and
// the launcher (a node's topology file is named after it, %h in paths).
#pragma once

#include <string>

namespace gputopo {

// gethostname(), "" when it fails; never throws.
std::string host_name();

}  // namespace gputopo
