// The island sources: one small reader per format, each filling an IslandMap
// (topo/fabric/island_map.hpp has the precedence between them).
//
//  gputopo.conf (topo/fabric/island_conf_reader.cpp), the file named by the plugin's
//  islands=PATH argument and `gputopo --islands PATH`:
//      Island=NAME Nodes=HOSTLIST        an island (any kind: a rack, a leaf, a pod)
//      BlockName=NAME Nodes=HOSTLIST     the same, in Slurm's topology/block words
//      BlockSizes=...                    accepted and ignored (copied block files)
//      TopologyConf=PATH                 also read this Slurm topology.conf (a
//                                        relative PATH is relative to gputopo.conf)
//  Slurm's topology.conf (topo/fabric/slurm_topology_reader.cpp):
//      SwitchName=NAME Nodes=HOSTLIST    a leaf switch: an island (topology/tree)
//      SwitchName=NAME Switches=HOSTLIST an upper switch: no island
//      BlockName=NAME Nodes=HOSTLIST     a block: an island (topology/block, 23.11+)
//      LinkSpeed=, BlockSizes=, RingName= lines: accepted, ignored
//  Task-local evidence (topo/fabric/island_local_evidence.cpp): SLURM_TOPOLOGY_ADDR and
//  the NVML fabric clique describe only the node a task runs on; they are
//  reported and checked against the files, never used to order ranks (no task
//  could know another node's value without communication).
//
// Every malformed line is one ParseError: "FILE:LINE: 'LINE': what is wrong
// (expected ...)".
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "topo/fabric/island_map.hpp"
#include "topo/core/model.hpp"

namespace gputopo {

// gputopo.conf from text (FILE names it in messages) or from a path. Paths in
// TopologyConf= lines are appended to *topology_confs (resolved against the
// directory of FILE) when topology_confs is given; otherwise such a line is
// an error.
void parse_island_conf(std::string_view text, const std::string& file, IslandMap& map,
                       std::vector<std::string>* topology_confs);
void read_island_conf(const std::string& path, IslandMap& map, std::vector<std::string>* topology_confs);

// Slurm's topology.conf (tree and/or block lines).
void parse_slurm_topology(std::string_view text, const std::string& file, IslandMap& map);
void read_slurm_topology(const std::string& path, IslandMap& map);
// The tree above the leaves: switch -> the switch whose Switches= lists it
// (for node labels: leaf -> spine -> core). Malformed lines throw as above.
std::map<std::string, std::string> parse_switch_parents(std::string_view text, const std::string& file);

// gputopo.conf and the topology.conf files it names, sealed. Throws
// TopologyError (unreadable file) or ParseError (malformed line, a node in two
// islands of one source).
IslandMap load_islands(const std::string& gputopo_conf);

// An island name as the files allow it: 1-128 characters from
// [A-Za-z0-9._:+@-]. Safe in environment values and logs.
bool valid_island_name(std::string_view name);

// The leaf switch in SLURM_TOPOLOGY_ADDR ("spine.leaf1.n1") given
// SLURM_TOPOLOGY_ADDR_PATTERN ("switch.switch.node", may be empty): the last
// switch before the node; "" when there is none.
std::string leaf_from_topology_addr(std::string_view addr, std::string_view pattern);

// The node's multi-node NVLink domain from NVML fabric info: "UUID:CLIQUE"
// when every GPU that reports one agrees; "" when none reports one. Throws
// nothing; GPUs that disagree give "" and a note in *why when given.
std::string nvml_clique_of(const Node& node, std::string* why = nullptr);

}  // namespace gputopo
