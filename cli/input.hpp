// The node a subcommand works on: a topology file (--topology FILE, format
// recognised from the content) or, without one, this machine.
#pragma once

#include <string>

#include "cli/args.hpp"
#include "topo/core/model.hpp"

namespace gputopo::cli {

// The --topology option every node-reading subcommand accepts.
OptionSpec topology_option();

// Reads --topology FILE when given, else discovers this machine.
// Throws TopologyError (exit 1) when the file cannot be used.
Node load_node(const ParsedArgs& args);

// --format table|json, default table. Throws UsageError on other values.
bool want_json(const ParsedArgs& args);
OptionSpec format_option();

}  // namespace gputopo::cli
