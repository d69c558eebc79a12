#include "step/user_gpu_bind.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"

namespace gputopo::step {

namespace {

// Slurm's long options that take no argument or an optional one (`--x VALUE`
// never consumes VALUE for them): the no_argument/optional_argument entries
// of Slurm 22.05 src/common/slurm_opt.c. Any other `--x` without '=' takes
// the next word.
const char* const kFlagOptions[] = {
    "bcast", "bell", "compress", "contiguous", "debugger-test", "disable-status", "exact", "exclusive",
    "get-user-env", "help", "hold", "ignore-pbs", "immediate", "interactive", "kill-command", "kill-on-bad-exit",
    "label", "multi-prog", "nice", "no-allocate", "no-bell", "no-kill", "no-requeue", "no-shell", "overcommit",
    "overlap", "oversubscribe", "parsable", "preserve-env", "propagate", "pty", "quiet", "quit-on-interrupt",
    "reboot", "requeue", "resv-ports", "send-libs", "spread-job", "test-only", "unbuffered", "usage",
    "use-min-nodes", "verbose", "version", "wait", "whole", "x11"};
// Short options with a required argument (same source, srun/sbatch/salloc).
const char* const kShortWithArg = "ABCDFGJLMNSTWabcdeimnopqrtwx";

bool is_flag(const std::string& name) {
    for (const char* f : kFlagOptions)
        if (name == f) return true;
    return false;
}

// "gres/gpu:X" (or "gpu:X") inside a --tres-bind value: X; "" when none.
std::string gpu_part_of_tres_bind(const std::string& v) {
    for (const char* key : {"gres/gpu:", "gpu:"}) {
        size_t at = v.find(key);
        if (at == std::string::npos) continue;
        std::string rest = v.substr(at + std::strlen(key));
        size_t plus = rest.find('+');  // several TRES: gres/gpu:...+gres/nic:...
        return plus == std::string::npos ? rest : rest.substr(0, plus);
    }
    return "";
}

// The binding the user chose: without "verbose", and "" for per_task[:N],
// the binding Slurm 23.11+ writes itself for --gpus-per-task
// (SLURM_TRES_BIND=gres/gpu:per_task:N in sbatch/salloc's environment): that
// is Slurm's default per-task set, which gputopo orders like any other.
std::string without_verbose(std::string v) {
    if (v == "verbose") return "";
    if (v.rfind("verbose,", 0) == 0) v = v.substr(8);
    if (v.rfind("per_task", 0) == 0) return "";
    return v;
}

// The value of the last of srun's long options `names` in argv (srun's own
// options only, up to the program); nullopt when none is given.
std::optional<std::string> srun_long_option(const std::vector<std::string>& argv,
                                            std::initializer_list<const char*> names) {
    std::optional<std::string> found;
    for (size_t i = 1; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a == "--" || a.empty() || a[0] != '-') break;  // the program starts here
        if (a.rfind("--", 0) == 0) {
            size_t eq = a.find('=');
            std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            std::string value;
            bool has_value = eq != std::string::npos;
            if (has_value) {
                value = a.substr(eq + 1);
            } else if (!is_flag(name) && i + 1 < argv.size()) {
                value = argv[++i];
                has_value = true;
            }
            if (!has_value) continue;
            for (const char* n : names)
                if (name == n) found = value;
            continue;
        }
        // Short options: "-n4", "-n 4", "-lv".
        if (a.size() == 2 && std::strchr(kShortWithArg, a[1]) && i + 1 < argv.size()) ++i;
    }
    return found;
}

}  // namespace

std::string user_gpu_bind(const std::vector<std::string>& argv, const Getenv& env) {
    std::string found;
    if (auto v = srun_long_option(argv, {"gpu-bind"})) found = *v;
    if (auto v = srun_long_option(argv, {"tres-bind"}); v && !gpu_part_of_tres_bind(*v).empty())
        found = gpu_part_of_tres_bind(*v);
    if (found.empty())
        if (auto v = env(env::kSlurmGpuBind); v && !v->empty()) found = *v;
    if (found.empty())
        if (auto v = env(env::kSlurmTresBind); v && !v->empty()) found = gpu_part_of_tres_bind(*v);
    return without_verbose(found);
}

std::string user_cpu_bind(const std::vector<std::string>& argv, const Getenv& env) {
    if (auto v = srun_long_option(argv, {"cpu-bind", "cpu_bind"})) return *v;
    if (auto v = env(env::kSlurmCpuBind); v) return *v;
    return "";
}

std::vector<int> task_gpus_from_slurm(const Getenv& task_env, const StepInputs& step) {
    auto read = [&](const char* var) -> std::optional<std::vector<int>> {
        auto v = task_env(var);
        if (!v || v->empty()) return std::nullopt;
        try {
            return parse_index_list(*v, var);
        } catch (const ParseError&) {
            return std::nullopt;
        }
    };
    std::optional<std::vector<int>> gpus = read(env::kSlurmStepGpus);
    std::optional<std::vector<int>> visible = read(env::kCudaVisibleDevices);
    if (!visible) visible = read(env::kRocrVisibleDevices);
    if (visible && (!gpus || visible->size() < gpus->size())) {
        if (!step.relative_numbering) return *visible;
        std::vector<int> base = step.gpus;  // sorted
        std::vector<int> out;
        for (int v : *visible) {
            if (v < 0 || static_cast<size_t>(v) >= base.size()) return {};
            out.push_back(base[static_cast<size_t>(v)]);
        }
        return out;
    }
    return gpus ? *gpus : std::vector<int>{};
}

}  // namespace gputopo::step
