// slurmd (and slurmstepd as root): with cache= and no topology=, live
// discovery is cached once per node (step/topology_cache.hpp) and redone
// when the cache is stale (another boot, another NVIDIA driver).
extern "C" {
#include <slurm/spank.h>
}

#include <exception>

#include "spank/glue/state.hpp"
#include "step/topology_cache.hpp"
#include "topo/core/host.hpp"

namespace gputopo::spank {

std::optional<Node> refresh_stale_cache() {
    const SharedConfig& sc = shared();
    if (!sc.config_ok || sc.config.cache_dir.empty() || !sc.config.topology.empty()) return std::nullopt;
    const std::string host = host_name();
    if (step::cache_fresh(sc.config.cache_dir, host, step::current_stamp())) return std::nullopt;
    std::string why;
    Node node = step::refresh_cache(sc.config.cache_dir, host, live_sources(sc.config), &why);
    for (const std::string& w : node.warnings)
        if (w.find("did not answer within") != std::string::npos) slurm_error("gputopo: %s", w.c_str());
    if (why.empty()) return std::nullopt;
    warn_cache_unwritable(why);
    return node;
}

void warn_cache_unwritable(const std::string& why) {
    // Issue 20, H5: the node just discovered is used; said once per node and boot.
    if (step::first_this_boot(step::kCacheWarningMarker))
        slurm_error("gputopo: %s; the node's topology is discovered live until the cache can be written "
                    "(this is said once per boot)",
                    why.c_str());
}

void slurmd_init() {
    try {
        refresh_stale_cache();
    } catch (const std::exception& e) {
        slurm_error("gputopo: %s", e.what());
    }
}

}  // namespace gputopo::spank
