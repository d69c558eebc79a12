// srun, sbatch and salloc (local and allocator contexts): the option value was
// already checked by its callback (plugin.cpp) — a bad value or `help` makes
// the command fail before anything is launched. Here: `strict` with a broken
// plugstack.conf fails early too, since the binding could never be applied.
extern "C" {
#include <slurm/spank.h>
}

#include <cstdio>

#include "spank/glue/state.hpp"

namespace gputopo::spank {

int local_init_post_opt(spank_t, int, char**) {
    try {
        SharedConfig& st = shared();
        if (st.user_options && st.user_options->strict && !st.config_ok) {
            std::fprintf(stderr, "gputopo: --gpu-topo=%s: strict, but the plugin is not configured: %s\n",
                         step::to_string(*st.user_options).c_str(), st.config_error.c_str());
            return -1;
        }
        return 0;
    } catch (...) {
        return 0;
    }
}

}  // namespace gputopo::spank
