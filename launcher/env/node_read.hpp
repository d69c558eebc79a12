// Where gputopo-launch reads its node: the one node read (step/node_read.hpp)
// from
//   --topology FILE when given (%n node name, %h host name);
//   else the site's: the gputopo.so line of plugstack.conf beside SLURM_CONF
//     (else in /etc/slurm), as `gputopo show --node` finds it: topology=,
//     cache=, nvml=, nvml_timeout=, nic_include=/nic_exclude=, the files the
//     plugin reads on this node;
//   else live discovery.
// GPUTOPO_NVML_LIBRARY and GPUTOPO_NVML_TIMEOUT, when set, name the NVML
// library and its timeout (the user's own process; secure_getenv); the site's
// nvml=/nvml_timeout= otherwise. --nic-include/--nic-exclude, when given,
// replace the site's NIC lists.
#pragma once

#include <optional>
#include <string>

#include "launcher/options/options.hpp"
#include "step/node_read.hpp"
#include "topo/core/model.hpp"

namespace gputopo::launch {

// The node's topology for this launcher, read at most once (the binding and
// --nccl-topo-file share it).
class NodeOnce {
public:
    // `problem`: why the source could not be made (then get() throws it);
    // `pattern_name`: where source.topology came from, for its messages.
    NodeOnce(step::NodeSource source, std::string node_name, std::string host, std::string problem = "",
             std::string pattern_name = "--topology");
    const Node& get();  // throws TopologyError (the same one each call)
    // Live discovery: why the live sources were incomplete ("" when complete, or not read live).
    const std::string& live_problem() const { return live_problem_; }

private:
    step::NodeSource source_;
    std::string node_name_;
    std::string host_;
    std::string pattern_name_;
    std::string error_;
    std::string live_problem_;
    bool tried_ = false;
    std::optional<Node> node_;
};

// The source above for this task (`get`: its environment, for SLURM_CONF).
// Throws TopologyError for a plugstack.conf that cannot be read or is wrong.
step::NodeSource launch_node_source(const Options& o, const Getenv& get);

// NodeOnce over launch_node_source; never throws (a bad source is get()'s error).
NodeOnce launch_node(const Options& o, const Getenv& get, const std::string& node_name, const std::string& host);

}  // namespace gputopo::launch
