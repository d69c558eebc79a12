// srun, sbatch and salloc (local and allocator contexts): the option value was
// already checked by its callback (plugin.cpp) — a bad value or `help` makes
// the command fail before anything is launched. Here: `strict` with a broken
// plugstack.conf fails early too, since the binding could never be applied.
extern "C" {
#include <slurm/spank.h>
}

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "spank/glue/state.hpp"
#include "step/user_gpu_bind.hpp"
#include "topo/core/env_names.hpp"

namespace gputopo::spank {

namespace {

// srun's argv from /proc/self/cmdline (at most 1 MiB read).
std::vector<std::string> own_command_line() {
    std::vector<std::string> argv;
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string arg;
    char c;
    size_t total = 0;
    while (in.get(c) && ++total <= (1u << 20)) {
        if (c == '\0') {
            argv.push_back(arg);
            arg.clear();
        } else {
            arg += c;
        }
    }
    return argv;
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
        if (spank_context() == S_CTX_LOCAL) {
            std::string bind = step::user_gpu_bind(own_command_line(), [](const std::string& n) {
                const char* v = std::getenv(n.c_str());
                return v ? std::optional<std::string>(v) : std::nullopt;
            });
            // srun's environment goes to the tasks (spank_setenv is remote-only);
            // an srun without --gpu-bind inside a step must not inherit one.
            if (bind.empty())
                unsetenv(env::kUserGpuBind);
            else
                setenv(env::kUserGpuBind, bind.c_str(), 1);
        }
        return 0;
    } catch (...) {
        return 0;
    }
}

}  // namespace gputopo::spank
