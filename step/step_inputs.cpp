#include "step/step_inputs.hpp"

#include <algorithm>
#include <cctype>

#include "step/gpu_ids.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/fabric/hostlist.hpp"

namespace gputopo::step {

std::vector<int> parse_index_list(const std::string& text, const std::string& var) {
    auto bad = [&](const std::string& why) {
        std::string shown = text.size() > 64 ? text.substr(0, 64) + "..." : text;
        return ParseError(var + "='" + shown + "' is not a list of GPU indices (" + why + ")");
    };
    const std::string expected = "expected e.g. 0,1,4-7";
    auto number = [&](const std::string& s) {
        if (s.empty() || s.size() > 6) throw bad(expected);
        for (char c : s)
            if (!std::isdigit(static_cast<unsigned char>(c))) throw bad(expected);
        int n = std::stoi(s);
        if (n >= kMaxGpuIndex)
            throw bad("GPU index " + s + " is beyond what a node can have (below " + std::to_string(kMaxGpuIndex) + ")");
        return n;
    };
    // A bitmap of kMaxGpuIndex entries, never a list of expanded ranges: memory
    // stays fixed and time is at most kMaxGpuIndex per item of the text.
    std::vector<bool> seen(static_cast<size_t>(kMaxGpuIndex), false);
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        size_t dash = item.find('-');
        int a, b;
        if (dash == std::string::npos) {
            a = b = number(item);
        } else {
            a = number(item.substr(0, dash));
            b = number(item.substr(dash + 1));
            if (b < a) throw bad(expected);
        }
        for (int i = a; i <= b; ++i) seen[static_cast<size_t>(i)] = true;
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    std::vector<int> out;
    for (int i = 0; i < kMaxGpuIndex; ++i)
        if (seen[static_cast<size_t>(i)]) out.push_back(i);
    return out;
}

namespace {

// CUDA_VISIBLE_DEVICES may hold UUIDs, MIG ids or "NoDevFiles": then nullopt.
std::optional<std::vector<int>> try_indices(const std::optional<std::string>& v) {
    if (!v || v->empty()) return std::nullopt;
    try {
        return parse_index_list(*v, env::kCudaVisibleDevices);
    } catch (const ParseError&) {
        return std::nullopt;
    }
}

}  // namespace

StepInputs read_step_inputs(const Getenv& getenv) {
    StepInputs in;
    for (const char* var : {env::kSlurmStepGpus, env::kSlurmJobGpus}) {
        auto v = getenv(var);
        if (v && !v->empty()) {
            in.gpus = parse_index_list(*v, var);
            in.gpus_from = var;
            break;
        }
    }
    auto cvd = try_indices(getenv(env::kCudaVisibleDevices));
    if (!cvd) cvd = try_indices(getenv(env::kRocrVisibleDevices));
    if (in.gpus_from.empty() && cvd) {
        in.gpus = *cvd;
        in.gpus_from = getenv(env::kCudaVisibleDevices) ? env::kCudaVisibleDevices : env::kRocrVisibleDevices;
    } else if (cvd && *cvd != in.gpus && cvd->size() == in.gpus.size()) {
        bool zero_based = true;
        for (size_t i = 0; i < cvd->size(); ++i)
            if ((*cvd)[i] != static_cast<int>(i)) zero_based = false;
        in.relative_numbering = zero_based;
    }
    if (auto v = getenv(env::kCudaVisibleDevices); v && in.gpus_from != env::kCudaVisibleDevices)
        in.device_ids = split_device_uuids(*v);
    if (auto v = getenv(env::kUserGpuBind); v) in.gpu_bind = *v;
    if (auto v = getenv(env::kSlurmCpusPerTask)) {
        try {
            in.cpus_per_task = std::max(0, std::stoi(*v));
        } catch (const std::exception&) {
            in.cpus_per_task = 0;
        }
    }
    if (auto v = getenv(env::kSlurmCpuBind)) in.cpu_bind = *v;
    const std::optional<std::string> typed = getenv(env::kUserCpuBind);
    in.cpu_request = cpu_bind_request(typed, getenv(env::kSlurmCpuBindType));
    if (in.cpu_request != CpuBindRequest::Slurm) in.user_cpu_bind = typed ? *typed : in.cpu_bind;
    return in;
}

namespace {

// The binding words of a --cpu-bind value, without verbose/quiet.
std::vector<std::string> cpu_bind_words(const std::string& v) {
    std::vector<std::string> out;
    for (const std::string& w : split_nonempty(v, ',')) {
        if (w == "verbose" || w == "quiet" || w == "v" || w == "q") continue;
        out.push_back(w);
    }
    return out;
}

}  // namespace

CpuBindRequest cpu_bind_request(const std::optional<std::string>& typed, const std::optional<std::string>& bind_type) {
    if (typed) {
        std::vector<std::string> words = cpu_bind_words(*typed);
        if (words.empty()) return CpuBindRequest::Slurm;
        for (const auto& w : words)
            if (w == "none" || w == "no") return CpuBindRequest::None;
        return CpuBindRequest::User;
    }
    if (!bind_type || bind_type->empty()) return CpuBindRequest::Slurm;
    const std::string& t = *bind_type;
    if (t.rfind("none", 0) == 0) return CpuBindRequest::None;
    for (const char* kind : {"map_cpu", "map_ldom", "mask_ldom", "rank_ldom", "rank"})
        if (t.rfind(kind, 0) == 0) return CpuBindRequest::User;
    return CpuBindRequest::Slurm;
}

void resolve_step_devices(const Node& node, StepInputs& in) {
    if (in.device_ids.empty()) return;
    std::string unknown;
    if (auto parents = parent_gpus(node, in.device_ids, &unknown)) {
        in.device_parents = *parents;
        in.gpus = *parents;
        std::sort(in.gpus.begin(), in.gpus.end());
        in.gpus.erase(std::unique(in.gpus.begin(), in.gpus.end()), in.gpus.end());
        in.relative_numbering = false;
        return;
    }
    in.device_problem = "CUDA_VISIBLE_DEVICES names " + unknown +
                        ", which no GPU of this node's topology knows (no NVML, or a topology without UUIDs): "
                        "the visible devices stay as Slurm set them";
    // SLURM_STEP_GPUS counts GRES records, GPU indices only without MIG.
    std::vector<int> valid;
    for (int g : in.gpus)
        if (node.gpu(g)) valid.push_back(g);
    in.gpus = valid;
}

std::string slurm_node_name(const Getenv& getenv, int node_id, const std::string& host) {
    for (const char* var : {env::kSlurmStepNodelist, env::kSlurmJobNodelist, env::kSlurmNodelist}) {
        auto v = getenv(var);
        if (!v || v->empty() || node_id < 0) continue;
        try {
            Hostlist h = Hostlist::parse(*v);
            if (static_cast<uint64_t>(node_id) < h.count()) return h.nth(static_cast<uint64_t>(node_id));
        } catch (const std::exception&) {
        }
    }
    return host;
}

bool topology_cpus_on_host(const Node& node, const CpuSet& host_cpus) {
    return !node.cpus.empty() && host_cpus.contains(node.cpus);
}

std::optional<CpuSet> allowed_cpus(const Node& node, const CpuSet& host_cpus, const CpuSet& affinity) {
    if (!topology_cpus_on_host(node, host_cpus)) return std::nullopt;
    CpuSet a = affinity & node.cpus;
    if (a.empty()) return std::nullopt;
    return a;
}

}  // namespace gputopo::step
