// The plugin's arguments in plugstack.conf: `optional gputopo.so KEY=VALUE ...`.
// One table of keys (plugstack_args.cpp): adding a key is one entry there and
// one field here. Unknown keys and bad values throw ParseError naming the
// argument; the plugin then logs it and stays out of the way.
//   default=MODE[,FLAGS]  used when the user gives no --gpu-topo (default: none)
//   topology=PATH         read this hwloc/NCCL XML instead of discovering;
//                         %n = Slurm node name, %h = host name, %% = %
//   cache=DIR             where live discovery is cached (see topology_cache.hpp)
//   devices=DIR           where the node's GPU device files are (default /dev
//                         and /dev/dri; %n, %h as topology=): a task bound per
//                         task counts those it may open (step/device_probe.hpp)
//   islands=PATH          gputopo.conf: islands across nodes for --gpu-topo=island
//                         (topo/fabric/island_sources.hpp, man gputopo.conf(5))
//   nvml=PATH             the NVML library live discovery loads (default:
//                         libnvidia-ml.so.1); $GPUTOPO_NVML_LIBRARY is never
//                         read by the plugin (it would be dlopen'ed as root)
//   nvml_timeout=SECONDS  how long NVML may take (default 10, at most 600;
//                         topo/sources/nvml_source.hpp read_nvml)
//   readers=PATH          the topology readers module (default: found from the
//                         plugin's own path, readers/readers.hpp)
//   wrap=PATH             Slurm 23.11+: start every task of a --gpu-topo step as
//                         `PATH -- COMMAND...` (PATH: gputopo-launch)
//   nic_include=LIST      only these NICs carry GPU traffic (RDMA devices,
//                         netdevs or PCI bus ids, comma-separated)
//   nic_exclude=LIST      never these (storage NICs, a management HCA, a bond):
//                         topo/sources/nic_policy.hpp
// Paths must be absolute: they are the only files opened as root, and they come
// from the administrator, never from a user.
#pragma once

#include <string>
#include <vector>

#include "step/node_read.hpp"
#include "step/option_parser.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/source_merge.hpp"

namespace gputopo::spank {

struct PluginConfig {
    step::Options defaults;          // default=
    std::string topology;      // topology= (pattern, unexpanded)
    std::string cache_dir;     // cache=
    std::string devices;       // devices= (pattern, unexpanded; "" = /dev, /dev/dri)
    std::string islands;       // islands= (gputopo.conf path)
    std::string nvml_library;  // nvml= ("" = libnvidia-ml.so.1)
    double nvml_timeout_s = kDefaultNvmlTimeoutS;  // nvml_timeout= (seconds, (0, 600])
    std::string readers;       // readers= (gputopo-readers.so path)
    std::string wrap;          // wrap= (gputopo-launch path)
    NicPolicy nic_policy;      // nic_include=, nic_exclude=
};

// What live discovery reads on this node, as the administrator configured it.
LiveSources live_sources(const PluginConfig& config);

// Where this node's topology comes from, as the administrator configured it
// (topology=, cache=, nvml=, nvml_timeout=, nic_include=/nic_exclude=): what the
// plugin and gputopo-launch pass to step::read_step_node.
step::NodeSource node_source(const PluginConfig& config);

// argv as Slurm passes it (the words after the plugin path).
PluginConfig parse_plugstack_args(const std::vector<std::string>& argv);

// The key names, in table order (for messages and docs).
std::vector<std::string> plugstack_keys();

}  // namespace gputopo::spank
