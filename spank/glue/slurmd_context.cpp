// slurmd (and slurmstepd as root): with cache= and no topology=, live
// discovery is cached once per node (spank/topology_cache.hpp) and redone
// when the cache is stale (another boot, another NVIDIA driver).
extern "C" {
#include <slurm/spank.h>
}

#include <unistd.h>

#include <exception>

#include "spank/glue/state.hpp"
#include "spank/topology_cache.hpp"

namespace gputopo::spank {

void refresh_stale_cache() {
    const SharedConfig& sc = shared();
    if (!sc.config_ok || sc.config.cache_dir.empty() || !sc.config.topology.empty()) return;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    if (!cache_fresh(sc.config.cache_dir, host, current_stamp())) refresh_cache(sc.config.cache_dir, host);
}

void slurmd_init() {
    try {
        refresh_stale_cache();
    } catch (const std::exception& e) {
        slurm_error("gputopo: %s", e.what());
    }
}

}  // namespace gputopo::spank
