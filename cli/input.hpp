// The node a subcommand works on: a topology file (--topology FILE, format
// recognised from the content) or, without one, this machine.
#pragma once

#include <string>

#include "cli/args.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/nic_policy.hpp"

namespace gputopo::cli {

// The --topology option every node-reading subcommand accepts.
OptionSpec topology_option();

// --node NAME: the topology the plugin reads for that node (show, plan).
OptionSpec node_option();
// The file the plugin's plugstack.conf line names for node NAME: topology= with %n and %h
// as NAME, else cache=DIR's NAME.xml. Throws TopologyError saying what is missing.
std::string plugin_topology_file(const std::string& node);

// --nic-include LIST, --nic-exclude LIST: the site's NIC policy, as the
// plugin's nic_include=/nic_exclude= (topo/sources/nic_policy.hpp).
std::vector<OptionSpec> nic_policy_options();
NicPolicy nic_policy(const ParsedArgs& args);  // UsageError for a bad list

// Reads --topology FILE, or --node NAME's file, when given, else discovers this machine; then the NIC
// policy options when the subcommand takes them (names that match no NIC of
// the node are warnings). Throws TopologyError (exit 1) when the file cannot
// be used, UsageError for a bad NIC list.
Node load_node(const ParsedArgs& args);

// --format table|json, default table. Throws UsageError on other values.
bool want_json(const ParsedArgs& args);
OptionSpec format_option();

// --format with the pictures too: table, json, svg or dot (default table).
OptionSpec picture_format_option();
std::string picture_format(const ParsedArgs& args);

// The plan gputopo plan makes without options: every GPU of the node, one
// task per GPU (one task when there are none), mode closest.
PlanRequest default_plan_request(const Node& node);

// The node's warnings on standard error, one "gputopo: warning: ..." line each
// (standard output stays the table, JSON or picture asked for).
void print_warnings(const Node& node);

}  // namespace gputopo::cli
