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

// The first of `names` that is set and not empty.
std::optional<std::string> first_set(const Getenv& get, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (auto v = get(n); v && !v->empty()) return v;
    return std::nullopt;
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

void torchrun_env(const Getenv& get, const FrameworkInputs& in, std::vector<EnvVar>& out) {
    auto first = [&](std::initializer_list<const char*> names) { return first_set(get, names); };
    auto add = [&](const char* name, const std::string& value) { out.push_back({name, value, true}); };
    if (auto v = first({"SLURM_NODEID"})) {
        add(env::kGroupRank, *v);
        add(env::kNodeRank, *v);
    }
    if (auto v = first({"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"})) add(env::kGroupWorldSize, *v);
    if (auto v = first({"SLURM_PROCID"})) add(env::kRoleRank, *v);
    if (auto v = first({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})) add(env::kRoleWorldSize, *v);
    if (first({"SLURM_PROCID"})) add(env::kRoleName, "default");
    auto job = first({"SLURM_JOB_ID", "SLURM_JOBID"});
    if (job) {
        add(env::kTorchelasticRunId, *job);
        add(env::kTorchelasticRestartCount, first({"SLURM_RESTART_COUNT"}).value_or("0"));
    }
    if (in.max_restarts >= 0) add(env::kTorchelasticMaxRestarts, std::to_string(in.max_restarts));
    if (!in.error_file.empty()) add(env::kTorchelasticErrorFile, in.error_file);
}

std::string jax_device_problem(int local_id, const std::string& visible) {
    if (visible.empty() || local_id < 1) return "";
    int count = 1;
    for (char c : visible) count += c == ',';
    if (local_id < count) return "";
    return "JAX takes local device SLURM_LOCALID=" + std::to_string(local_id) + " but this task sees " +
           std::to_string(count) + " GPU(s) (CUDA_VISIBLE_DEVICES=" + visible +
           "): with --framework=jax do not isolate tasks (plugin --gpu-topo without ,isolate; srun --gpus-per-node "
           "instead of --gpus-per-task): JAX itself keeps each process on its own GPU";
}

std::vector<EnvVar> framework_env(const Getenv& get, const FrameworkInputs& in) {
    std::vector<EnvVar> out;
    auto first = [&](std::initializer_list<const char*> names) { return first_set(get, names); };
    auto add = [&](const char* name, const std::string& value) { out.push_back({name, value, true}); };

    if (auto v = first({"SLURM_PROCID"})) add(env::kRankVar, *v);
    if (auto v = first({"SLURM_LOCALID"})) add(env::kLocalRank, *v);
    if (auto v = first({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"})) add(env::kWorldSize, *v);
    if (auto tpn = first({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
        unsigned long long node = 0;
        if (auto id = first({"SLURM_NODEID"}); id && parse_uint(*id, node))
            add(env::kLocalWorldSize, std::to_string(tasks_on_node(*tpn, static_cast<int>(node))));
    }
    if (!in.master_addr.empty())
        add(env::kMasterAddr, in.master_addr);
    else if (auto nodes = first({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}))
        add(env::kMasterAddr, first_host(*nodes));
    unsigned long long job = 0, step = 0;
    auto job_text = first({"SLURM_JOB_ID", "SLURM_JOBID"});
    if (!in.master_port.empty()) {
        add(env::kMasterPort, in.master_port);
    } else if (job_text && parse_uint(*job_text, job)) {
        if (auto s = first({"SLURM_STEP_ID", "SLURM_STEPID"})) parse_uint(*s, step);
        add(env::kMasterPort, std::to_string(master_port(job, step, in.master_port_min, in.master_port_max)));
    }
    torchrun_env(get, in, out);
    return out;
}

}  // namespace gputopo::launch
