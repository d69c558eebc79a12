#include "step/slurm_placement.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "step/slurm_rank_order.hpp"
#include "topo/core/conf_lines.hpp"
#include "topo/core/env_names.hpp"
#include "topo/fabric/slurm_islands.hpp"

namespace gputopo::step {

namespace {

constexpr uint64_t kMaxSegment = uint64_t{1} << 20;

// Whether the comma list `value` names `word` (case-insensitive).
bool lists(const std::string& value, std::string_view word) {
    std::stringstream in(value);
    std::string item;
    while (std::getline(in, item, ','))
        if (iequals(item, word)) return true;
    return false;
}

}  // namespace

SlurmPlacement parse_slurm_placement(std::string_view slurm_conf, const Getenv& job_env) {
    SlurmPlacement p;
    // One line at a time: a line Slurm would reject elsewhere in the file does
    // not hide these two keys.
    size_t start = 0;
    while (start <= slurm_conf.size()) {
        size_t end = slurm_conf.find('\n', start);
        if (end == std::string_view::npos) end = slurm_conf.size();
        try {
            for (const ConfLine& line : parse_conf_lines(slurm_conf.substr(start, end - start), "slurm.conf")) {
                if (const std::string* v = line.get("TopologyParam"); v && lists(*v, "BlockAsNodeRank"))
                    p.block_as_node_rank = true;
                if (const std::string* v = line.get("SelectTypeParameters"); v && lists(*v, "CR_NO_DIST_TOPO_BLOCK"))
                    p.no_dist_topo_block = true;
            }
        } catch (const std::exception&) {
        }
        start = end + 1;
    }
    if (const auto s = job_env(env::kSlurmJobSegmentSize);
        s && !s->empty() && s->size() <= 7 && s->find_first_not_of("0123456789") == std::string::npos) {
        const uint64_t n = std::strtoull(s->c_str(), nullptr, 10);
        if (n >= 1 && n <= kMaxSegment) p.segment_size = n;
    }
    return p;
}

SlurmPlacement read_slurm_placement(const Getenv& process_env, const Getenv& job_env) {
    const auto conf = process_env(env::kSlurmConf);
    const std::string file = conf && !conf->empty() ? *conf : slurm_config_dir(process_env) + "/slurm.conf";
    std::ifstream in(file);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    return parse_slurm_placement(text.str(), job_env);
}

bool slurm_places_by_topology(const Getenv& process_env) {
    return read_slurm_placement(process_env, [](const std::string&) { return std::nullopt; })
        .topology_order(built_slurm_release());
}

}  // namespace gputopo::step
