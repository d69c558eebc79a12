// Slurm's plugstack.conf as a file, for the tools that must see what the plugin sees
// (gputopo show/plan --node): the arguments of the line that loads gputopo.so.
// Slurm's syntax (spank(8)): "required|optional PATH [ARGS...]" and "include PATTERN"
// (a glob, relative to plugstack.conf's directory when not absolute); '#' starts a
// comment. At most kMaxIncludes files and kMaxIncludeDepth levels are read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spank/plugstack_args.hpp"

namespace gputopo::spank {

inline constexpr int kMaxIncludes = 256;
inline constexpr int kMaxIncludeDepth = 4;

// The words after PATH on the first line whose PATH ends in "/gputopo.so" (or is
// "gputopo.so"); nullopt when no line loads it. Throws TopologyError naming a file that
// cannot be read.
std::optional<std::vector<std::string>> gputopo_plugstack_args(const std::string& plugstack_conf);

// The site's configuration of the plugin as the tools on a node see it
// (gputopo-launch's node read): the gputopo.so line of `plugstack_conf`,
// parsed; nullopt when there is no such file or no such line. Throws
// TopologyError naming the file when it cannot be read or its arguments are
// wrong (parse_plugstack_args's message).
std::optional<PluginConfig> site_plugin_config(const std::string& plugstack_conf);

}  // namespace gputopo::spank
