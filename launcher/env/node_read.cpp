#include "launcher/env/node_read.hpp"

#include <cstdlib>

#include "spank/plugstack_file.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/sources/nvml_source.hpp"

namespace gputopo::launch {

NodeOnce::NodeOnce(step::NodeSource source, std::string node_name, std::string host, std::string problem,
                   std::string pattern_name)
    : source_(std::move(source)),
      node_name_(std::move(node_name)),
      host_(std::move(host)),
      pattern_name_(std::move(pattern_name)),
      error_(std::move(problem)) {
    tried_ = !error_.empty();
}

const Node& NodeOnce::get() {
    if (!tried_) {
        tried_ = true;
        try {
            step::NodeRead r = step::read_step_node(source_, node_name_, host_);
            live_problem_ = std::move(r.live_problem);
            node_ = std::move(r.node);
        } catch (const ParseError& e) {  // the pattern: a node name that is not a plain name
            error_ = pattern_name_ + ": " + e.what();
        } catch (const std::exception& e) {
            error_ = e.what();
        }
    }
    if (!node_) throw TopologyError(error_);
    return *node_;
}

namespace {

// The user's GPUTOPO_NVML_LIBRARY and GPUTOPO_NVML_TIMEOUT over `site`.
LiveSources with_user_nvml(LiveSources site) {
    const LiveSources user = live_sources_from_environment();
    if (!user.nvml_library.empty()) site.nvml_library = user.nvml_library;
    if (const char* t = secure_getenv(kNvmlTimeoutEnv); t && *t) site.nvml_timeout_s = user.nvml_timeout_s;
    return site;
}

}  // namespace

step::NodeSource launch_node_source(const Options& o, const Getenv& get) {
    step::NodeSource s;
    if (!o.topology.empty()) {
        s.topology = o.topology;
    } else if (auto site = spank::site_plugin_config(slurm_config_dir(get) + "/plugstack.conf")) {
        s = spank::node_source(*site);
    }
    s.live = with_user_nvml(s.live);
    if (!o.nic_policy.include.empty() || !o.nic_policy.exclude.empty()) s.nic_policy = o.nic_policy;
    return s;
}

NodeOnce launch_node(const Options& o, const Getenv& get, const std::string& node_name, const std::string& host) {
    try {
        const std::string from = o.topology.empty() ? "plugstack.conf topology=" : "--topology";
        return NodeOnce(launch_node_source(o, get), node_name, host, "", from);
    } catch (const std::exception& e) {
        return NodeOnce({}, node_name, host, e.what());
    }
}

}  // namespace gputopo::launch
