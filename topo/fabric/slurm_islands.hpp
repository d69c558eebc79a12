// Islands for a --gpu-topo=island step: gputopo.conf (islands=) and Slurm's
// own topology, as one map. Pure apart from reading files.
//
// Slurm's configuration directory, the one the running Slurm reads:
//   1. SLURM_CONF (a path to slurm.conf). slurmd always exports it before it
//      starts slurmstepd: its -f file, or <SlurmdSpoolDir>/conf-cache/slurm.conf
//      in configless mode (Slurm 22.05 src/slurmd/slurmd/slurmd.c, the
//      setenv("SLURM_CONF", conf->conffile, 1) calls in _establish_configuration
//      and _slurmd_init), so slurmstepd and this plugin inherit it.
//   2. the compiled default, /etc/slurm/slurm.conf (Debian and Slurm's own
//      default sysconfdir; -DGPUTOPO_SLURM_CONF_DEFAULT=... changes it).
// In that directory: topology.yaml (Slurm 25.05+; read first, as Slurm does)
// else topology.conf. Neither: no Slurm islands (every node its own island).
//
// Precedence (IslandMap layers): gputopo.conf Island=/BlockName= > blocks >
// tree leaves. islands= adds to Slurm's topology unless its gputopo.conf names
// a topology itself with TopologyConf= (then that one replaces Slurm's).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "topo/fabric/island_map.hpp"

namespace gputopo {

// topology.yaml (topo/fabric/slurm_topology_yaml.cpp).
void parse_slurm_topology_yaml(std::string_view text, const std::string& file, IslandMap& map);
void read_slurm_topology_yaml(const std::string& path, IslandMap& map);

// The directory of the slurm.conf the running Slurm uses (see above).
// `getenv` reads the process environment (slurmstepd's, not the job's).
std::string slurm_config_dir(const std::function<std::optional<std::string>(const std::string&)>& getenv);

// Slurm's topology file in DIR: DIR/topology.yaml, else DIR/topology.conf,
// else "" (none).
std::string slurm_topology_file(const std::string& dir);

struct StepIslandMap {
    IslandMap map;
    std::string sources;  // "gputopo.conf /etc/x.conf + Slurm /etc/slurm/topology.conf", for verbose
};

// gputopo.conf `islands_conf` ("" when not configured) and Slurm's topology
// file in `slurm_dir` ("" to skip). Throws TopologyError/ParseError naming
// the file. With neither, an empty map (sources: "none").
// `slurm_file` (optional): read this Slurm topology file (topology.conf or topology.yaml,
// told apart by content) in place of the one in `slurm_dir`, even when gputopo.conf names
// its own TopologyConf= (gputopo ranks --topology-conf).
StepIslandMap load_step_islands(const std::string& islands_conf, const std::string& slurm_dir,
                                const std::string& slurm_file = "");

// A Slurm topology file of either form: YAML (its first line that is not blank or a
// comment starts with "-" or "---", as topology.yaml(5)'s list of topologies does) or
// topology.conf (SwitchName=/BlockName= lines).
void read_slurm_topology_any(const std::string& path, IslandMap& map);

}  // namespace gputopo
