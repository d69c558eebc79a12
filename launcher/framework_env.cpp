#include "launcher/framework_env.hpp"

#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/hostlist.hpp"

namespace gputopo::launch {

namespace {

bool parse_uint(const std::string& s, unsigned long long& out) {
    if (s.empty() || s.size() > 18) return false;
    unsigned long long n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + static_cast<unsigned>(c - '0');
    }
    out = n;
    return true;
}

}  // namespace

int tasks_on_node(const std::string& text, int node_index) {
    auto bad = [&]() -> ParseError {
        return ParseError("tasks per node '" + text + "' (node index " + std::to_string(node_index) +
                          "): expected Slurm's form such as 2(x3),1 covering the node");
    };
    if (node_index < 0) throw bad();
    size_t pos = 0;
    long long seen = 0;
    while (pos < text.size()) {
        size_t comma = text.find(',', pos);
        std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        pos = comma == std::string::npos ? text.size() : comma + 1;
        unsigned long long count = 0, repeat = 1;
        size_t paren = item.find("(x");
        if (paren != std::string::npos) {
            if (item.back() != ')' || !parse_uint(item.substr(paren + 2, item.size() - paren - 3), repeat)) throw bad();
            item = item.substr(0, paren);
        }
        if (!parse_uint(item, count) || repeat == 0) throw bad();
        if (node_index < seen + static_cast<long long>(repeat)) return static_cast<int>(count);
        seen += static_cast<long long>(repeat);
    }
    throw bad();
}

std::string first_host(const std::string& hostlist) {
    Hostlist h = Hostlist::parse(hostlist);
    if (h.empty()) throw ParseError("node list '" + hostlist + "': expected at least one host name");
    return h.nth(0);
}

int master_port(unsigned long long job_id, unsigned long long step_id, int lo, int hi) {
    // FNV-1a over the two ids: neighbouring jobs land far apart.
    unsigned long long h = 1469598103934665603ULL;
    auto mix = [&](unsigned long long v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 1099511628211ULL;
        }
    };
    mix(job_id);
    mix(step_id);
    unsigned long long span = static_cast<unsigned long long>(hi - lo + 1);
    return lo + static_cast<int>(h % span);
}

std::vector<EnvVar> framework_env(const Getenv& get, const FrameworkInputs& in) {
    std::vector<EnvVar> out;
    auto first = [&](std::initializer_list<const char*> names) -> std::optional<std::string> {
        for (const char* n : names)
            if (auto v = get(n); v && !v->empty()) return v;
        return std::nullopt;
    };
    auto add = [&](const char* name, const std::string& value) { out.push_back({name, value, true}); };

    if (auto v = first({"SLURM_PROCID"})) add(env::kRankVar, *v);
    if (auto v = first({"SLURM_LOCALID"})) add(env::kLocalRank, *v);
    if (auto v = first({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})) add(env::kWorldSize, *v);
    if (auto tpn = first({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
        unsigned long long node = 0;
        if (auto id = first({"SLURM_NODEID"}); id && parse_uint(*id, node))
            add(env::kLocalWorldSize, std::to_string(tasks_on_node(*tpn, static_cast<int>(node))));
    }
    if (auto nodes = first({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}))
        add(env::kMasterAddr, first_host(*nodes));
    unsigned long long job = 0, step = 0;
    auto job_text = first({"SLURM_JOB_ID", "SLURM_JOBID"});
    if (job_text && parse_uint(*job_text, job)) {
        if (auto s = first({"SLURM_STEP_ID", "SLURM_STEPID"})) parse_uint(*s, step);
        add(env::kMasterPort, std::to_string(master_port(job, step, in.master_port_min, in.master_port_max)));
    }
    return out;
}

}  // namespace gputopo::launch
