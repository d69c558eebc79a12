// srun, sbatch and salloc (local and allocator contexts): the option value was
// already checked by its callback (plugin.cpp) — a bad value or `help` makes
// the command fail before anything is launched. Here: `strict` with a broken
// plugstack.conf fails early too, since the binding could never be applied.
extern "C" {
#include <slurm/spank.h>
}

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "spank/glue/state.hpp"
#include "step/user_gpu_bind.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/files.hpp"

namespace gputopo::spank {

namespace {

// srun's argv from /proc/self/cmdline (at most 1 MiB; none when longer).
std::vector<std::string> own_command_line() {
    std::vector<std::string> argv;
    const std::optional<std::string> text = read_file_bounded("/proc/self/cmdline", ReadLimits{1u << 20, true});
    if (!text) return argv;
    size_t start = 0;
    for (size_t i = 0; i < text->size(); ++i) {
        if ((*text)[i] != '\0') continue;
        argv.push_back(text->substr(start, i - start));
        start = i + 1;
    }
    return argv;
}

// Whether gputopo may bind the steps this srun launches: --gpu-topo given to
// it or to the job (sbatch/salloc hand it down in the environment), else
// plugstack.conf's default=. When not, srun does nothing more.
bool steps_may_bind(const SharedConfig& st) {
    if (!st.config_ok) return false;
    if (st.user_options) return st.user_options->mode != Mode::None;
    for (const char* var : kJobOptionVars)
        if (std::getenv(var)) return true;
    return st.config.defaults.mode != Mode::None;
}

}  // namespace

int local_init_post_opt(spank_t, int, char**) {
    try {
        SharedConfig& st = shared();
        if (st.user_options && st.user_options->strict && !st.config_ok) {
            std::fprintf(stderr, "gputopo: --gpu-topo=%s: strict, but the plugin is not configured: %s\n",
                         step::to_string(*st.user_options).c_str(), st.config_error.c_str());
            return -1;
        }
        // The user's --gpu-bind, for the step (step/user_gpu_bind.hpp). In srun
        // only: sbatch/salloc pass it to their srun through SLURM_GPU_BIND.
        // The user's --cpu-bind likewise ("" when none was typed): task/affinity
        // writes its automatic binding into the tasks just like the user's.
        if (spank_context() == S_CTX_LOCAL && steps_may_bind(st)) {
            const std::vector<std::string> argv = own_command_line();
            const step::Getenv getenv = [](const std::string& n) {
                const char* v = std::getenv(n.c_str());
                return v ? std::optional<std::string>(v) : std::nullopt;
            };
            std::string bind = step::user_gpu_bind(argv, getenv);
            // srun's environment goes to the tasks (spank_setenv is remote-only);
            // an srun without --gpu-bind inside a step must not inherit one.
            if (bind.empty())
                unsetenv(env::kUserGpuBind);
            else
                setenv(env::kUserGpuBind, bind.c_str(), 1);
            setenv(env::kUserCpuBind, step::user_cpu_bind(argv, getenv).c_str(), 1);
        }
        return 0;
    } catch (...) {
        return 0;
    }
}

}  // namespace gputopo::spank
