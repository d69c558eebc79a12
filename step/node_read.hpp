// This node, for this step: the one read of the node's topology that the
// plugin (spank/glue/remote_context), the launcher (launcher/env/binding
// NodeOnce) and the CLI (cli/input) make. Where it comes from is the site's
// choice (plugstack.conf: topology=, cache=, nvml=, nvml_timeout=,
// nic_include=/nic_exclude=; spank/plugstack_args node_source) or the front
// end's (--topology, GPUTOPO_NVML_LIBRARY, GPUTOPO_NVML_TIMEOUT):
//   1. a topology file (the pattern expanded for the node: %n, %h), read
//      through its snapshot in the cache directory when there is one;
//   2. else the cache (step/topology_cache.hpp: live discovery kept per node);
//   3. else live discovery: hwloc refined by NVML (the library and timeout
//      given) and the NIC port state (topo/sources/source_merge.hpp).
// Then a file read on this node is refined from its sysfs and the site's NIC
// policy applied (topo/sources/node_refine.hpp finish_step_node).
#pragma once

#include <string>

#include "topo/core/model.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/source_merge.hpp"

namespace gputopo::step {

struct NodeSource {
    std::string topology;   // a topology file pattern (%n, %h, %%), "" = none
    std::string cache_dir;  // cache=DIR, "" = none
    LiveSources live;       // what live discovery reads (and the cache's discovery)
    NicPolicy nic_policy;   // the site's NIC lists
    // The file describes the node it is read on (plugstack topology=,
    // gputopo-launch --topology): refine it from this node's sysfs. The CLI's
    // --topology may describe another machine: false there.
    bool file_on_this_node = true;
};

// The node read, and what the reader may want to report about the cache.
struct NodeRead {
    Node node;
    std::string cache_refused;    // the cache directory was refused (check_cache_dir's reason); read without it
    std::string cache_unwritten;  // the cache could not be written (the node was discovered all the same)
    std::string live_problem;     // live discovery: the live sources were incomplete (NVML did not answer in time, ...)
};

// Reads the node `node_name` (Slurm's name; `host` this host's name) from
// `source`. Throws TopologyError (a file or a discovery that fails) and
// ParseError (a pattern that cannot be expanded).
NodeRead read_step_node(const NodeSource& source, const std::string& node_name, const std::string& host);

}  // namespace gputopo::step
