// Islands across nodes: groups of nodes with full bandwidth between them (the
// nodes under one leaf switch of a fat tree, one NVL72 rack).
//
// An IslandMap is filled by the island sources (island_conf_reader,
// slurm_topology_reader) and answers "which island is node X in" without
// expanding hostlists: every host range is kept as numeric intervals keyed by
// its text prefix and digit count, so a lookup is a hash probe plus a binary
// search, and memory grows with the number of ranges, not of nodes.
//
// Precedence (highest first; a node takes its island from the first source
// that names it, see man/gputopo.conf.5 for the reasons):
//   1. gputopo.conf            Island=NAME Nodes=... and BlockName=NAME Nodes=...
//   2. topology.conf blocks    BlockName=NAME Nodes=...   (topology/block, NVL72 racks)
//   3. topology.conf tree      the leaf switch: SwitchName=NAME Nodes=...
// Within one source a node named in two islands is an error. Islands are
// identified by name: the same name from two sources is one island.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "topo/fabric/hostlist.hpp"

namespace gputopo {

enum class IslandSource { GputopoConf = 0, TopologyBlock = 1, TopologyTree = 2 };
inline constexpr int kIslandSourceCount = 3;
const char* island_source_name(IslandSource s);  // "gputopo.conf", "topology.conf block", "topology.conf tree"

struct Island {
    std::string name;
    IslandSource source = IslandSource::GputopoConf;  // of its first definition
    std::string origin;                               // "FILE:LINE" of its first definition
    uint64_t nodes = 0;                               // hosts listed for it (all sources)
    std::string power_domain;                         // gputopo.conf PowerDomain= ("" none): a failure domain of islands
};

class IslandMap {
public:
    static constexpr size_t npos = static_cast<size_t>(-1);
    // What one map may spend on names kept one by one (ranges whose names have
    // more than 18 digits cannot be kept as intervals): every source of the
    // map together, so a 55-byte line cannot cost gigabytes (issue 20, H7).
    static constexpr uint64_t kMaxLiteralBytes = uint64_t{16} << 20;

    // Adds NODES to island NAME from SOURCE; ORIGIN ("FILE:LINE") is used in
    // messages. Throws ParseError when a node is already in another island of
    // the same source (naming both islands and origins).
    void add(const std::string& name, const Hostlist& nodes, IslandSource source, const std::string& origin);

    size_t size() const { return islands_.size(); }
    bool empty() const { return islands_.empty(); }
    const Island& island(size_t id) const { return islands_.at(id); }
    const std::vector<Island>& islands() const { return islands_; }
    std::optional<size_t> id_of(std::string_view island_name) const;
    // Puts island `id` in power domain `domain` (gputopo.conf Island=... PowerDomain=).
    void set_power_domain(size_t id, const std::string& domain) { islands_.at(id).power_domain = domain; }

    // Island id of a node, or npos when no source names it.
    size_t find(std::string_view node) const;
    // The same for host `number` of a hostlist range, without building its name.
    size_t find(const HostRange& range, uint64_t number) const;
    // Which source decided a node's island (nothing when no source names it).
    std::optional<IslandSource> source_of(std::string_view node) const;

    // Sorts the intervals and checks that no node is in two islands of one
    // source; throws ParseError naming both islands and where they were
    // defined. Readers call it when done; find() calls it when needed.
    void seal() const;

private:
    struct Interval {
        uint64_t lo, hi;
        uint32_t island;
        uint32_t origin;  // index into origins_
    };
    struct Layer {
        std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> literal;  // name -> island, origin
        std::unordered_map<std::string, std::vector<Interval>> numeric;  // key: prefix '\0' digit count
    };
    // Island of a canonical (key, value) or literal name in the first layer
    // that has it; layer index through *layer_out.
    size_t find_key(const std::string& key, uint64_t value, bool literal, int* layer_out) const;
    size_t find_range_host(const HostRange& range, uint64_t number, int* layer_out) const;
    void insert(Layer& layer, uint32_t island, const HostRange& r, uint32_t origin);
    size_t intern(const std::string& name, IslandSource source, const std::string& origin);

    std::vector<Island> islands_;
    std::vector<std::string> origins_;
    uint64_t literal_bytes_ = 0;  // spent of kMaxLiteralBytes
    std::unordered_map<std::string, size_t> by_name_;
    mutable Layer layers_[kIslandSourceCount];
    // Sealed state and a stamp unique to these lookup tables (find() caches
    // pointers into them per thread). A copied or assigned map is unsealed,
    // so its next lookup reseals it under a new stamp.
    struct SealState {
        bool sealed = true;
        uint64_t generation = 0;
        SealState() = default;
        SealState(const SealState&) : sealed(false) {}
        SealState& operator=(const SealState&) {
            sealed = false;
            generation = 0;
            return *this;
        }
    };
    mutable SealState state_;
};

}  // namespace gputopo
