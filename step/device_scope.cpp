#include "step/device_scope.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "step/gpu_ids.hpp"
#include "step/user_gpu_bind.hpp"
#include "topo/core/conf_lines.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"
#include "topo/core/strings.hpp"

namespace gputopo::step {

namespace {

bool starts_with_ci(const std::string& s, const std::string& prefix) {
    if (s.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
            return false;
    return true;
}

// A small non-negative number (a count or a position), else -1.
long small_number(const std::string& s, int base) {
    if (s.empty() || s.size() > 18) return -1;
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, base);
    if (!end || *end != '\0' || v < 0) return -1;
    return v;
}

// Slurm reads map/mask entries with strtol(tok, NULL, 0): 0x.. hex, 0.. octal, else decimal.
long slurm_number(const std::string& s) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return small_number(s.substr(2), 16);
    return small_number(s, 10);
}

// The map/mask entry task `task` takes: entries "V" or "V*count", cycling
// through the list (Slurm's _get_usable_gres_map_or_mask). -1 when unreadable.
long entry_for_task(const std::string& list, int task) {
    std::vector<std::pair<long, long>> entries;  // value, repeat count
    long total = 0;
    for (const std::string& tok : split_fields(list, ',')) {
        if (entries.size() >= 1024) return -1;
        size_t star = tok.find('*');
        long value = slurm_number(tok.substr(0, star));
        long mult = star == std::string::npos ? 1 : small_number(tok.substr(star + 1), 10);
        if (value < 0 || mult < 0) return -1;
        if (mult == 0) mult = 1;  // Slurm: "Repetition count of 0 not allowed ..., using 1 instead"
        if (mult > 1 << 20) mult = 1 << 20;
        entries.emplace_back(value, mult);
        total += mult;
    }
    if (entries.empty() || total <= 0) return -1;
    long at = task % total;
    for (const auto& e : entries) {
        if (at < e.second) return e.first;
        at -= e.second;
    }
    return -1;
}

// Positions (or GPU indices) named by one entry: a map names one, a mask one per bit.
std::vector<long> named_by(const SlurmGpuBind& b, long value) {
    if (b.kind == SlurmGpuBind::Kind::MapGpu) return {value};
    std::vector<long> out;
    for (int bit = 0; bit < 63; ++bit)
        if ((value >> bit) & 1L) out.push_back(bit);
    return out;
}

std::vector<int> map_or_mask(const SlurmGpuBind& b, const std::vector<int>& step, int task, bool constrained) {
    std::vector<int> out;
    const long value = entry_for_task(b.list, task);
    if (value < 0) return out;
    for (long v : named_by(b, value)) {
        if (constrained) {
            if (v < static_cast<long>(step.size())) out.push_back(step[static_cast<size_t>(v)]);
        } else if (std::find(step.begin(), step.end(), v) != step.end()) {
            out.push_back(static_cast<int>(v));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The step's GPUs whose CPUs meet `cpus` (a GPU of unknown locality counts as near:
// Slurm's gres.conf line without Cores=).
std::vector<int> closest_to(const Node& node, const std::vector<int>& among, const CpuSet& cpus, bool locality) {
    std::vector<int> out;
    for (int g : among) {
        const Gpu* gpu = node.gpu(g);
        if (!gpu) continue;
        if (!locality || gpu->local_cpus.empty() || !(gpu->local_cpus & cpus).empty()) out.push_back(g);
    }
    return out;
}

}  // namespace

SlurmGpuBind parse_slurm_gpu_bind(const std::string& text) {
    SlurmGpuBind b;
    std::string s = text;
    for (const char* prefix : {"gres/gpu:", "gpu:"}) {
        size_t at = s.find(prefix);
        if (at != std::string::npos) {
            s = s.substr(at + std::string(prefix).size());
            break;
        }
    }
    size_t plus = s.find('+');  // several TRES: gres/gpu:...+gres/nic:...
    if (plus != std::string::npos) s = s.substr(0, plus);
    if (starts_with_ci(s, "verbose,")) s = s.substr(8);
    auto after = [&](const char* p) { return s.substr(std::string(p).size()); };
    if (starts_with_ci(s, "per_task:")) {
        long n = small_number(after("per_task:"), 10);
        if (n > 0 && n <= 4096) b = {SlurmGpuBind::Kind::PerTask, static_cast<int>(n), ""};
    } else if (starts_with_ci(s, "map_gpu:")) {
        b = {SlurmGpuBind::Kind::MapGpu, 0, after("map_gpu:")};
    } else if (starts_with_ci(s, "map:")) {
        b = {SlurmGpuBind::Kind::MapGpu, 0, after("map:")};
    } else if (starts_with_ci(s, "mask_gpu:")) {
        b = {SlurmGpuBind::Kind::MaskGpu, 0, after("mask_gpu:")};
    } else if (starts_with_ci(s, "mask:")) {
        b = {SlurmGpuBind::Kind::MaskGpu, 0, after("mask:")};
    } else if (starts_with_ci(s, "single:")) {
        long n = small_number(after("single:"), 10);
        b = {SlurmGpuBind::Kind::Single, n > 0 && n <= 4096 ? static_cast<int>(n) : 1, ""};
    } else if (starts_with_ci(s, "closest")) {
        b = {SlurmGpuBind::Kind::Closest, 0, ""};
    }
    return b;
}

PerTaskRule per_task_rule_for(unsigned long v) {
    return v >= 0x170b00UL ? PerTaskRule::NearestFirst : PerTaskRule::Blocks;  // 23.11
}

#ifndef GPUTOPO_SLURM_VERSION_NUMBER
#define GPUTOPO_SLURM_VERSION_NUMBER 0
#endif
PerTaskRule built_per_task_rule() { return per_task_rule_for(GPUTOPO_SLURM_VERSION_NUMBER); }

namespace {

const CpuSet& cpus_of(const std::vector<CpuSet>& task_cpus, int task) {
    static const CpuSet none;
    return task >= 0 && static_cast<size_t>(task) < task_cpus.size() ? task_cpus[static_cast<size_t>(task)] : none;
}

std::vector<int> per_task_blocks(const std::vector<int>& step, int count, int task) {
    std::vector<int> out;
    const size_t first = static_cast<size_t>(task) * static_cast<size_t>(count);
    for (size_t i = first; i < first + static_cast<size_t>(count) && i < step.size(); ++i) out.push_back(step[i]);
    return out;
}

// 23.11+: tasks 0..task in turn take `count` free GPUs, near their CPUs first.
std::vector<int> per_task_nearest_first(const Node& node, const std::vector<int>& step, int count, int task,
                                        const std::vector<CpuSet>& task_cpus, bool locality) {
    std::vector<int> free = step, mine;
    for (int t = 0; t <= task; ++t) {
        std::vector<int> took;
        auto take_from = [&](const std::vector<int>& candidates) {
            for (int g : candidates) {
                if (static_cast<int>(took.size()) >= count) break;
                auto it = std::find(free.begin(), free.end(), g);
                if (it == free.end()) continue;
                free.erase(it);
                took.push_back(g);
            }
        };
        take_from(closest_to(node, free, cpus_of(task_cpus, t), locality));
        take_from(std::vector<int>(free));
        if (t == task) mine = took;
    }
    std::sort(mine.begin(), mine.end());
    return mine;
}

}  // namespace

std::optional<std::vector<int>> slurm_task_gpus(const SlurmGpuBind& bind, const std::vector<int>& step_gpus, int task,
                                                bool constrained, const Node* node,
                                                const std::vector<CpuSet>& task_cpus, PerTaskRule rule,
                                                bool locality) {
    if (step_gpus.empty() || task < 0) return std::nullopt;
    std::vector<int> out;
    switch (bind.kind) {
    case SlurmGpuBind::Kind::None:
        return step_gpus;
    case SlurmGpuBind::Kind::PerTask:
        if (rule == PerTaskRule::Blocks) {
            out = per_task_blocks(step_gpus, bind.count, task);
        } else {
            if (!node) return std::nullopt;
            out = per_task_nearest_first(*node, step_gpus, bind.count, task, task_cpus, locality);
        }
        break;
    case SlurmGpuBind::Kind::MapGpu:
    case SlurmGpuBind::Kind::MaskGpu:
        if (entry_for_task(bind.list, task) < 0) return std::nullopt;
        out = map_or_mask(bind, step_gpus, task, constrained);
        break;
    case SlurmGpuBind::Kind::Closest:
    case SlurmGpuBind::Kind::Single: {
        if (!node) return std::nullopt;
        out = closest_to(*node, step_gpus, cpus_of(task_cpus, task), locality);
        if (bind.kind == SlurmGpuBind::Kind::Single && out.size() > 1) {
            const size_t n = static_cast<size_t>(task / bind.count) % out.size();
            out = {out[n]};
        }
        break;
    }
    }
    if (out.empty()) out.push_back(step_gpus.front());  // Slurm: "Binding to the first device in the allocation instead"
    return out;
}

std::vector<CpuSet> task_cpus_from_slurm(const std::optional<std::string>& bind_type,
                                         const std::optional<std::string>& bind_list, int ntasks, const CpuSet* within) {
    std::vector<CpuSet> out(static_cast<size_t>(std::clamp(ntasks, 0, 4096)));
    if (!bind_type || !bind_list || bind_list->empty() || out.empty()) return out;
    const bool mask = starts_with_ci(*bind_type, "mask_cpu");
    const bool map = starts_with_ci(*bind_type, "map_cpu");
    if (!mask && !map) return out;
    std::vector<CpuSet> entries;
    try {
        for (const std::string& e : split_fields(*bind_list, ',')) {
            if (entries.size() >= out.size()) break;
            if (mask) {
                entries.push_back(CpuSet::parse_hex_mask(e));
            } else {
                const long cpu = slurm_number(e);
                if (cpu < 0 || cpu > 65535) return out;
                CpuSet one;
                one.set(static_cast<int>(cpu));
                entries.push_back(one);
            }
        }
    } catch (const std::exception&) {
        return out;
    }
    if (entries.empty()) return out;
    if (within)  // CPUs the node lacks mean nothing: each copy below is the node's size, not the text's
        for (CpuSet& e : entries) e &= *within;
    for (size_t t = 0; t < out.size(); ++t) out[t] = entries[t % entries.size()];
    return out;
}

bool cgroup_conf_constrains_devices(const std::string& text) {
    bool on = false;
    try {
        for (const ConfLine& line : parse_conf_lines(text, "cgroup.conf"))
            for (const auto& [key, value] : line.pairs)
                if (iequals(key, "ConstrainDevices")) on = slurm_bool(value).value_or(false);  // the last one wins
    } catch (const ParseError&) {
        return false;  // a file Slurm refuses as well
    }
    return on;
}

bool slurm_constrains_devices(const std::string& slurm_dir) {
    if (slurm_dir.empty()) return false;
    try {
        ReadLimits limits;
        limits.max_bytes = kMaxConfigFileBytes;
        auto text = read_file_bounded(slurm_dir + "/cgroup.conf", limits);
        return text && cgroup_conf_constrains_devices(*text);
    } catch (const std::exception&) {
        return false;
    }
}

bool step_cgroup_numbering(const StepInputs& in, bool constrained) {
    return constrained && in.device_ids.empty() && !in.gpus.empty();
}

bool own_device_scope(const StepInputs& in, bool constrained, const std::optional<std::string>& tres_bind) {
    return step_cgroup_numbering(in, constrained) && tres_bind && parse_slurm_gpu_bind(*tres_bind).per_task();
}

bool keeps_slurm_gpus(const StepInputs& in) { return !in.gpu_bind.empty() || !in.device_ids.empty(); }

bool task_opens_step_gpus(std::optional<int> openable, size_t own, size_t step,
                          const std::optional<std::string>& visible) {
    if (own == 0 || own >= step) return false;
    if (openable && *openable > 0) return static_cast<size_t>(*openable) > own;
    if (!visible || visible->empty() || !split_device_uuids(*visible).empty()) return false;
    try {
        const std::vector<int> seen = parse_index_list(*visible, env::kCudaVisibleDevices);
        if (seen.size() != own) return false;  // Slurm gave another count: not this rule's (kept as set)
        for (int i : seen)
            if (i >= static_cast<int>(own)) return true;
    } catch (const ParseError&) {
    }
    return false;
}

namespace {

// task_cpus_from_slurm of the task's SLURM_CPU_BIND_TYPE/_LIST, cut to `node_cpus`.
// user_init asks once per local task with the same list: the last answer is kept,
// so a long list is parsed once per step, not once per task.
std::vector<CpuSet> local_task_cpus(const Getenv& current, int local_tasks, const CpuSet& node_cpus) {
    struct Last {
        std::optional<std::string> type, list;
        int tasks = -1;
        CpuSet within;
        std::vector<CpuSet> cpus;
    };
    static thread_local Last last;
    std::optional<std::string> type = current(env::kSlurmCpuBindType), list = current(env::kSlurmCpuBindList);
    if (last.tasks != local_tasks || last.type != type || last.list != list || last.within != node_cpus) {
        last.cpus = task_cpus_from_slurm(type, list, local_tasks, node_cpus.empty() ? nullptr : &node_cpus);
        last.type = std::move(type);
        last.list = std::move(list);
        last.tasks = local_tasks;
        last.within = node_cpus;
    }
    return last.cpus;
}

// Every local task's GPUs by Slurm's rule (closest and single: this task's
// alone, they read its CPUs); false when the rule cannot be read.
bool held_by_rule(const Node& node, const StepInputs& in, const DeviceRule& rule, int task, const Getenv& current,
                  const CpuSet* task_affinity, SlurmDevices& d) {
    const SlurmGpuBind bind = parse_slurm_gpu_bind(d.bind);
    const bool per_node = bind.kind != SlurmGpuBind::Kind::Closest && bind.kind != SlurmGpuBind::Kind::Single;
    // The tasks' CPUs only where the rule reads them (closest, single, 23.11's per_task),
    // cut to the node's CPUs: a user's 1M-bit --cpu-bind mask is not copied per task per task.
    const bool reads_cpus = !per_node || (bind.kind == SlurmGpuBind::Kind::PerTask && rule.per_task == PerTaskRule::NearestFirst);
    std::vector<CpuSet> task_cpus;
    if (reads_cpus) task_cpus = local_task_cpus(current, rule.local_tasks, node.cpus);
    if (task_affinity && static_cast<size_t>(task) < task_cpus.size()) task_cpus[static_cast<size_t>(task)] = *task_affinity;
    for (int t = 0; t < rule.local_tasks; ++t) {
        if (!per_node && t != task) continue;
        // The topology's GPU locality stands for gres.conf Cores= only on the host it describes.
        auto held = slurm_task_gpus(bind, in.gpus, t, true, &node, task_cpus, rule.per_task, rule.locality);
        if (!held) return false;
        if (t == task) d.gpus = *held;
        if (per_node) d.all.push_back(*held);
    }
    return true;
}

// The task's own device cgroup: its GPUs by Slurm's rule, checked against the
// count of its CUDA_VISIBLE_DEVICES (Slurm numbers them 0..k-1).
SlurmDevices own_cgroup_devices(const Node& node, const StepInputs& in, const DeviceRule& rule, int task,
                                const Getenv& current, const CpuSet* task_affinity, const std::string& tres) {
    SlurmDevices d;
    d.from = SlurmDevices::From::OwnCgroup;
    d.bind = tres;
    if (!held_by_rule(node, in, rule, task, current, task_affinity, d)) {
        d.problem = "cannot tell which GPUs Slurm gave this task (SLURMD_TRES_BIND=" + tres + ")";
        d.all.clear();
        return d;
    }
    if (auto cvd = current(env::kCudaVisibleDevices); cvd && !cvd->empty() && split_device_uuids(*cvd).empty()) {
        try {
            if (parse_index_list(*cvd, env::kCudaVisibleDevices).size() != d.gpus.size()) {
                d.problem = "Slurm gave this task " + *cvd + " (SLURMD_TRES_BIND=" + tres + "), not the " +
                            std::to_string(d.gpus.size()) + " GPU(s) its rule gives";
                d.gpus.clear();
                d.all.clear();
            }
        } catch (const ParseError&) {
        }
    }
    return d;
}

bool any_mig(const std::vector<std::string>& ids) {
    for (const auto& id : ids)
        if (id.rfind("MIG-", 0) == 0) return true;
    return false;
}

// The task holds only its own UUIDs: MIG instances (CUDA uses one per process),
// or whole GPUs in a device cgroup of its own (devices constrained, a per-task
// binding, and the task can open no more than its own).
bool only_own_ids(const StepInputs& in, const DeviceRule& rule, const std::vector<std::string>& own,
                  const Getenv& current, std::optional<int> openable) {
    if (any_mig(own)) return true;
    const std::optional<std::string> tres = current(env::kSlurmdTresBind);
    if (!rule.constrained || !tres || !parse_slurm_gpu_bind(*tres).per_task()) return false;
    return !task_opens_step_gpus(openable, own.size(), in.device_ids.size(), std::nullopt);
}

// The devices Slurm set in the task, kept as they are: the task's own UUIDs
// (Slurm narrows them per task) where it can open only those, else the
// step's; or its GPU indices.
SlurmDevices kept_devices(const Node& node, const StepInputs& in, const DeviceRule& rule, const Getenv& current,
                          std::optional<int> openable) {
    SlurmDevices d;
    d.from = SlurmDevices::From::Kept;
    if (!in.device_ids.empty()) {
        auto cvd = current(env::kCudaVisibleDevices);
        d.ids = cvd ? split_device_uuids(*cvd) : std::vector<std::string>{};
        if (d.ids.empty() || !only_own_ids(in, rule, d.ids, current, openable)) d.ids = in.device_ids;
        if (auto parents = parent_gpus(node, d.ids, nullptr)) {
            d.id_parents = *parents;
            d.gpus = *parents;
            std::sort(d.gpus.begin(), d.gpus.end());
            d.gpus.erase(std::unique(d.gpus.begin(), d.gpus.end()), d.gpus.end());
        }
        return d;
    }
    d.gpus = task_gpus_from_slurm(current, in);
    for (int g : d.gpus)
        if (!node.gpu(g)) d.gpus.clear();
    return d;
}

}  // namespace

SlurmDevices slurm_devices(const Node& node, const StepInputs& in, const DeviceRule& rule, int task,
                           const Getenv& current, const CpuSet* task_affinity, std::optional<int> openable) {
    const std::optional<std::string> tres = current(env::kSlurmdTresBind);
    if (own_device_scope(in, rule.constrained, tres)) {
        SlurmDevices own = own_cgroup_devices(node, in, rule, task, current, task_affinity, *tres);
        const size_t count =
            own.gpus.empty() ? static_cast<size_t>(parse_slurm_gpu_bind(*tres).count) : own.gpus.size();
        if (!task_opens_step_gpus(openable, count, in.gpus.size(), current(env::kCudaVisibleDevices))) return own;
        // Bound per task, yet the step's GPUs are the task's (allow-task-sharing):
        // numbered in the step's set, as with --gpus-per-node.
        SlurmDevices d = keeps_slurm_gpus(in) ? kept_devices(node, in, rule, current, openable) : SlurmDevices{};
        d.step_scope = true;
        d.bind = *tres;
        return d;
    }
    if (keeps_slurm_gpus(in)) return kept_devices(node, in, rule, current, openable);
    return {};
}

}  // namespace gputopo::step
