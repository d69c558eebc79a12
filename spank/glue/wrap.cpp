// wrap=PATH (plugstack.conf, admin-set): every task of a step gputopo binds starts as
// `PATH -- COMMAND...` (PATH: gputopo-launch), so jobs get the launcher's NCCL/framework
// environment, signal forwarding and requeue without editing their scripts. Needs
// spank_prepend_task_argv (Slurm 23.11+); built for an older Slurm, wrap= is refused
// once at load (wrap_supported()).
extern "C" {
#include <slurm/spank.h>
}

#include <cstdio>

#include "spank/glue/state.hpp"

namespace gputopo::spank {

bool wrap_supported() {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
    return true;
#else
    return false;
#endif
}

void wrap_task(spank_t sp, int task, const std::string& node_name) {
    const PluginConfig& c = shared().config;
    if (c.wrap.empty() || !wrap_supported()) return;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
    const char* argv[] = {c.wrap.c_str(), "--"};
    if (spank_prepend_task_argv(sp, 2, argv) != ESPANK_SUCCESS && task == 0)
        std::fprintf(stderr, "gputopo: %s: cannot start the tasks under %s; they run as given\n",
                     node_name.c_str(), c.wrap.c_str());
#else
    (void)sp;
    (void)task;
    (void)node_name;
#endif
}

}  // namespace gputopo::spank
