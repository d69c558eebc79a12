#include "step/topology_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>

#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "topo/sources/hwloc_source.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::step {

namespace {

// A cache file's content, "" when absent or refused: at most kMaxTopologyFileBytes,
// a regular file, never through a symbolic link (issue 12, finding 5).
std::string read_cache_file(const std::string& path) {
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{kMaxTopologyFileBytes, false});
    return text ? std::move(*text) : std::string();
}

}  // namespace

void check_cache_dir(const std::string& dir) {
    auto refuse = [&](const std::string& why) {
        throw TopologyError("cache directory " + dir + " " + why +
                            "; expected a directory owned by root, not writable by group or others (plugstack.conf cache=)");
    };
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0) refuse(std::string("cannot be examined (") + std::strerror(errno) + ")");
    if (S_ISLNK(st.st_mode)) refuse("is a symbolic link");
    if (!S_ISDIR(st.st_mode)) refuse("is not a directory");
    if (st.st_uid != 0) refuse("is owned by uid " + std::to_string(st.st_uid));
    if (st.st_mode & (S_IWGRP | S_IWOTH)) refuse("is writable by group or others");
}

std::string CacheStamp::to_text() const {
    return "boot_id=" + boot_id + "\ndriver=" + driver + "\n";
}

CacheStamp current_stamp() {
    CacheStamp s;
    s.boot_id = read_first_line("/proc/sys/kernel/random/boot_id");
    s.driver = read_first_line("/proc/driver/nvidia/version");
    return s;
}

std::string cache_xml_path(const std::string& dir, const std::string& host) { return dir + "/" + host + ".xml"; }
std::string cache_meta_path(const std::string& dir, const std::string& host) { return dir + "/" + host + ".meta"; }

std::string cache_meta_text(const CacheStamp& stamp, bool live_complete, long now) {
    return stamp.to_text() +
           (live_complete ? std::string("live=complete\n")
                          : "live=incomplete until=" + std::to_string(now + kIncompleteCacheLifeS) + "\n");
}

bool cache_fresh(const std::string& dir, const std::string& host, const CacheStamp& stamp) {
    struct stat st;
    if (lstat(cache_xml_path(dir, host).c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return false;
    const std::string meta = read_cache_file(cache_meta_path(dir, host));
    const long now = static_cast<long>(time(nullptr));
    if (meta == cache_meta_text(stamp, true, now)) return true;
    const std::string incomplete = stamp.to_text() + "live=incomplete until=";
    // "until=T\n", T at most 18 digits (no overflow), and never further ahead than one life.
    if (meta.compare(0, incomplete.size(), incomplete) != 0 || meta.size() > incomplete.size() + 19 || meta.back() != '\n')
        return false;
    const std::string until = meta.substr(incomplete.size(), meta.size() - incomplete.size() - 1);
    if (until.empty() || until.find_first_not_of("0123456789") != std::string::npos) return false;
    const long long t = std::stoll(until);
    return now < t && t - now <= kIncompleteCacheLifeS;
}

Node refresh_cache(const std::string& dir, const std::string& host, const LiveSources& live, std::string* unwritten) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw TopologyError("cannot create cache directory " + dir + ": " + std::strerror(errno));
    check_cache_dir(dir);
    CacheStamp stamp = current_stamp();
    std::string xml = export_hwloc_live_xml();
    Node node = read_hwloc_xml_buffer(xml, "live discovery of " + host);
    // NVML (NVLinks, NVSwitches, fabric cliques) and NIC port state refine
    // hwloc's view once, here; tasks read only the snapshot.
    const bool complete = apply_live_sources(node, live);
    add_nic_fallback_warnings(node);  // kept in the snapshot with the sources' warnings
    try {
        write_file_atomically(cache_xml_path(dir, host), xml);
        write_file_atomically(dir + "/" + host + ".snap", write_node_snapshot(node));
        write_file_atomically(cache_meta_path(dir, host),
                              cache_meta_text(stamp, complete, static_cast<long>(time(nullptr))));
    } catch (const TopologyError& e) {
        if (!unwritten) throw;
        *unwritten = e.what();
    }
    return node;
}

bool first_this_boot(const std::string& marker) {
    int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    return errno != EEXIST;
}

Node load_cached_topology(const std::string& dir, const std::string& host, const LiveSources& live,
                          std::string* unwritten) {
    check_cache_dir(dir);
    if (!cache_fresh(dir, host, current_stamp())) {
        std::string why;
        Node node = refresh_cache(dir, host, live, &why);
        if (!why.empty()) {
            // Not written: the node just discovered is the answer (issue 20, H5).
            if (unwritten) *unwritten = why;
            return node;
        }
    }
    const std::string snap = dir + "/" + host + ".snap";
    std::string text = read_cache_file(snap);
    if (!text.empty()) {
        try {
            return read_node_snapshot(text, snap);
        } catch (const TopologyError&) {
            // an older format: fall back to the XML
        }
    }
    const std::string xml = cache_xml_path(dir, host);
    ReadFailure why;
    std::optional<std::string> xml_text = read_file_bounded(xml, ReadLimits{kMaxTopologyFileBytes, false}, &why);
    if (!xml_text) throw TopologyError("cached topology " + xml + " " + why.what);
    return read_hwloc_xml_buffer(*xml_text, xml);
}

Node load_topology_via_snapshot(const std::string& path, const std::string& dir) {
    if (dir.empty()) return load_topology_file(path);
    check_cache_dir(dir);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return load_topology_file(path);  // its own clear error
    std::string flat = path;
    for (char& c : flat)
        if (c == '/') c = '_';
    const std::string snap = dir + "/topo-" + flat + ".snap";
    const std::string key = "source\t" + path + "\t" + std::to_string(st.st_size) + "\t" +
                            std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
    std::string text = read_cache_file(snap);
    if (text.compare(0, key.size(), key) == 0) {
        try {
            return read_node_snapshot(text.substr(key.size()), snap);
        } catch (const TopologyError&) {
        }
    }
    Node node = load_topology_file(path);
    try {
        write_file_atomically(snap, key + write_node_snapshot(node));
    } catch (const std::exception&) {
        // best effort
    }
    return node;
}

}  // namespace gputopo::step
