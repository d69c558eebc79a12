// The SPANK plugin's identity and every slurm_spank_* entry point, each of which
// dispatches to the file of its context (local_context.cpp: srun/sbatch/salloc,
// slurmd_context.cpp: slurmd, remote_context.cpp: slurmstepd) and lets no
// exception cross into Slurm. slurm_spank_init, shared by every context, reads
// the plugstack.conf arguments and registers --gpu-topo (in srun, sbatch, salloc
// and slurmstepd alike: Slurm ignores a static option table in the allocator context).
extern "C" {
#include <slurm/spank.h>
}

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "readers/readers.hpp"
#include "spank/glue/state.hpp"
#include "spank/job_env.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/version.hpp"

// SPANK_PLUGIN() gives these internal linkage in C++; define them by hand.
extern "C" {
extern const char plugin_name[] = "gputopo";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
// Slurm 25.05+: were slurm_spank_init ever to fail (it returns 0 on every path), the
// job fails, never the node: gputopo never drains a node.
extern int slurm_spank_init_failure_mode;
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif
}

namespace gputopo::spank {

SharedConfig& shared() {
    static SharedConfig s;
    return s;
}

const char* const kJobOptionVars[2] = {"SPANK__SLURM_SPANK_OPTION_gputopo_gpu_topo", "_SLURM_SPANK_OPTION_gputopo_gpu_topo"};

namespace {

// "gputopo 0.2.0, built for Slurm 22.05.8": Slurm loads the plugin only into the
// release (major.minor) it was built for.
std::string slurm_release() {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%u.%02u.%u", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
                  SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
    return buf;
}

std::string identity() { return std::string("gputopo ") + kVersion + ", built for Slurm " + slurm_release(); }

int option_callback(int, const char* optarg, int remote) {
    SharedConfig& st = shared();
    try {
        step::Options o = step::parse_gpu_topo(optarg ? optarg : "");
        if (o.help && !remote) {
            std::fprintf(stderr, "%s\n%s", identity().c_str(), step::help_text().c_str());
            return -1;
        }
        if (!remote && o.strict && !st.config_ok) {
            std::fprintf(stderr, "gputopo: --gpu-topo=%s: strict, but the plugin is not configured: %s\n",
                         optarg, st.config_error.c_str());
            return -1;
        }
        st.user_options = o;
        return 0;
    } catch (const std::exception& e) {
        st.user_option_error = e.what();
        if (!remote) std::fprintf(stderr, "gputopo: %s\n", e.what());
        return remote ? 0 : -1;
    } catch (...) {
        return -1;
    }
}

// spank_option wants a mutable char*: a static copy of the one name (it outlives
// the registration), made at compile time.
struct OptionName {
    char text[sizeof step::kGpuTopoOption];
};
constexpr OptionName copy_option_name() {
    OptionName n{};
    for (size_t i = 0; i < sizeof n.text; ++i) n.text[i] = step::kGpuTopoOption[i];
    return n;
}
OptionName option_name = copy_option_name();
char option_arginfo[] = "MODE[,FLAG...]";
char option_usage[] =
    "Bind each task to its GPUs, nearest NIC, CPUs and memory. MODE: none, closest, island; "
    "FLAGs: verbose, strict, isolate, share, membind, wholecores, help";

}  // namespace

int register_option(spank_t sp) {
    struct spank_option opt;
    std::memset(&opt, 0, sizeof opt);
    opt.name = option_name.text;
    opt.arginfo = option_arginfo;
    opt.usage = option_usage;
    opt.has_arg = 1;
    opt.val = 0;
    opt.cb = option_callback;
    return spank_option_register(sp, &opt) == ESPANK_SUCCESS ? 0 : -1;
}

std::optional<std::string> job_getenv(spank_t sp, const char* name) {
    return read_env_value(name, [&](char* buf, size_t len) {
        const int rc = spank_getenv(sp, name, buf, static_cast<int>(len));
        if (rc == ESPANK_SUCCESS) return EnvRead::Ok;
        return rc == ESPANK_NOSPACE ? EnvRead::TooSmall : EnvRead::Missing;
    });
}

}  // namespace gputopo::spank

using namespace gputopo::spank;

namespace {

// No exception crosses into Slurm: an entry's work, or 0 (gputopo never fails
// a job by throwing; strict failures are decided inside).
template <class Work>
int guarded(Work&& work) {
    try {
        return work();
    } catch (...) {
        return 0;
    }
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    try {
        slurm_debug("%s", identity().c_str());
        SharedConfig& st = shared();
        std::vector<std::string> args;
        for (int i = 0; i < ac; ++i) args.emplace_back(av[i] ? av[i] : "");
        try {
            st.config = parse_plugstack_args(args);
            if (!st.config.wrap.empty() && !wrap_supported())
                throw gputopo::ParseError("plugstack.conf: wrap= needs Slurm 23.11 or later (built for " +
                                 slurm_release() + ")");
            gputopo::readers::set_readers_module(st.config.readers);
            st.config_ok = true;
        } catch (const std::exception& e) {
            st.config_ok = false;
            st.config_error = e.what();
            slurm_error("gputopo: %s; gputopo stays inactive", e.what());
        }
        spank_context_t ctx = spank_context();
        if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE) {
            if (register_option(sp) != 0) slurm_error("gputopo: cannot register --%s", gputopo::step::kGpuTopoOption);
        }
        if (ctx == S_CTX_SLURMD) slurmd_init();  // slurmd_context.cpp
        return 0;
    } catch (...) {
        return 0;
    }
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
    return guarded([&] { return spank_remote(sp) ? remote_init_post_opt(sp, ac, av) : local_init_post_opt(sp, ac, av); });
}

extern "C" int slurm_spank_user_init(spank_t sp, int, char**) {
    return guarded([&] { return remote_user_init(sp); });  // remote_context.cpp
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
    return guarded([&] { return remote_task_init(sp); });  // remote_context.cpp
}
