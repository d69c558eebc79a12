// The SPANK plugin's identity and slurm_spank_init, shared by every context:
// reads plugstack.conf arguments and registers --gpu-topo (in srun, sbatch,
// salloc and slurmstepd alike: Slurm ignores a static option table in the
// allocator context).
extern "C" {
#include <slurm/spank.h>
}

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "spank/glue/state.hpp"
#include "spank/job_env.hpp"
#include "topo/core/errors.hpp"

// SPANK_PLUGIN() gives these internal linkage in C++; define them by hand.
extern "C" {
extern const char plugin_name[] = "gputopo";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace gputopo::spank {

SharedConfig& shared() {
    static SharedConfig s;
    return s;
}

const char* const kOptionName = "gpu-topo";

namespace {

int option_callback(int, const char* optarg, int remote) {
    SharedConfig& st = shared();
    try {
        step::Options o = step::parse_gpu_topo(optarg ? optarg : "");
        if (o.help && !remote) {
            std::fputs(step::help_text().c_str(), stderr);
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

char option_name[] = "gpu-topo";
char option_arginfo[] = "MODE[,FLAG...]";
char option_usage[] =
    "Bind each task to its GPUs, nearest NIC, CPUs and memory. MODE: none, closest, island; "
    "FLAGs: verbose, strict, isolate, share, membind, help";

}  // namespace

int register_option(spank_t sp) {
    struct spank_option opt;
    std::memset(&opt, 0, sizeof opt);
    opt.name = option_name;
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

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    try {
        SharedConfig& st = shared();
        std::vector<std::string> args;
        for (int i = 0; i < ac; ++i) args.emplace_back(av[i] ? av[i] : "");
        try {
            st.config = parse_plugstack_args(args);
            st.config_ok = true;
        } catch (const std::exception& e) {
            st.config_ok = false;
            st.config_error = e.what();
            slurm_error("gputopo: %s; gputopo stays inactive", e.what());
        }
        spank_context_t ctx = spank_context();
        if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE) {
            if (register_option(sp) != 0) slurm_error("gputopo: cannot register --%s", kOptionName);
        }
        if (ctx == S_CTX_SLURMD) slurmd_init();  // slurmd_context.cpp
        return 0;
    } catch (...) {
        return 0;
    }
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
    try {
        if (spank_remote(sp)) return remote_init_post_opt(sp, ac, av);
        return local_init_post_opt(sp, ac, av);
    } catch (...) {
        return 0;
    }
}
