#include "step/node_read.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "step/topology_cache.hpp"
#include "step/topology_path.hpp"
#include "topo/sources/node_refine.hpp"

namespace gputopo::step {

namespace {

// cache=DIR as given, or "" when the directory is there but refused (a
// symbolic link, not root's, writable by others): the read goes on without
// the cache instead of failing, and `refused` says why.
std::string usable_cache_dir(const std::string& dir, std::string& refused) {
    struct stat sb {};
    if (dir.empty() || (lstat(dir.c_str(), &sb) != 0 && errno == ENOENT)) return dir;  // refresh_cache creates it
    try {
        check_cache_dir(dir);
        return dir;
    } catch (const std::exception& e) {
        refused = e.what();
        return "";
    }
}

}  // namespace

NodeRead read_step_node(const NodeSource& source, const std::string& node_name, const std::string& host) {
    NodeRead r;
    const std::string cache = usable_cache_dir(source.cache_dir, r.cache_refused);
    const bool from_file = !source.topology.empty();
    if (from_file)
        r.node = load_topology_via_snapshot(expand_path(source.topology, node_name, host), cache);
    else if (!cache.empty())
        r.node = load_cached_topology(cache, host, source.live, &r.cache_unwritten);
    else
        r.node = discover_live(source.live, &r.live_problem);
    finish_step_node(r.node, from_file && source.file_on_this_node, source.nic_policy);
    return r;
}

}  // namespace gputopo::step
