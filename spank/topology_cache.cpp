#include "spank/topology_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "topo/core/errors.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "topo/sources/hwloc_source.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::spank {

namespace {

std::string first_line(const std::string& path) {
    std::ifstream f(path);
    std::string line;
    if (f) std::getline(f, line);
    return line;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return "";
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

}  // namespace

std::string CacheStamp::to_text() const {
    return "boot_id=" + boot_id + "\ndriver=" + driver + "\n";
}

CacheStamp current_stamp() {
    CacheStamp s;
    s.boot_id = first_line("/proc/sys/kernel/random/boot_id");
    s.driver = first_line("/proc/driver/nvidia/version");
    return s;
}

std::string cache_xml_path(const std::string& dir, const std::string& host) { return dir + "/" + host + ".xml"; }
std::string cache_meta_path(const std::string& dir, const std::string& host) { return dir + "/" + host + ".meta"; }

bool cache_fresh(const std::string& dir, const std::string& host, const CacheStamp& stamp) {
    struct stat st;
    if (stat(cache_xml_path(dir, host).c_str(), &st) != 0 || st.st_size == 0) return false;
    return slurp(cache_meta_path(dir, host)) == stamp.to_text();
}

void write_file_atomically(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw TopologyError("cannot write " + tmp + ": " + std::strerror(errno));
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp.c_str());
            throw TopologyError("cannot write " + tmp + ": " + std::strerror(e));
        }
        done += static_cast<size_t>(n);
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp.c_str());
        throw TopologyError("cannot write " + tmp + ": " + std::strerror(errno));
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        unlink(tmp.c_str());
        throw TopologyError("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
    }
}

void refresh_cache(const std::string& dir, const std::string& host) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw TopologyError("cannot create cache directory " + dir + ": " + std::strerror(errno));
    CacheStamp stamp = current_stamp();
    std::string xml = export_hwloc_live_xml();
    Node node = read_hwloc_xml_buffer(xml, "live discovery of " + host);
    // NVML (NVLinks, NVSwitches, fabric cliques) and NIC port state refine
    // hwloc's view once, here; tasks read only the snapshot.
    apply_live_sources(node, LiveSources());
    write_file_atomically(cache_xml_path(dir, host), xml);
    write_file_atomically(dir + "/" + host + ".snap", write_node_snapshot(node));
    write_file_atomically(cache_meta_path(dir, host), stamp.to_text());
}

Node load_cached_topology(const std::string& dir, const std::string& host) {
    if (!cache_fresh(dir, host, current_stamp())) refresh_cache(dir, host);
    const std::string snap = dir + "/" + host + ".snap";
    std::string text = slurp(snap);
    if (!text.empty()) {
        try {
            return read_node_snapshot(text, snap);
        } catch (const TopologyError&) {
            // an older format: fall back to the XML
        }
    }
    return read_hwloc_xml(cache_xml_path(dir, host));
}

Node load_topology_via_snapshot(const std::string& path, const std::string& dir) {
    if (dir.empty()) return load_topology_file(path);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return load_topology_file(path);  // its own clear error
    std::string flat = path;
    for (char& c : flat)
        if (c == '/') c = '_';
    const std::string snap = dir + "/topo-" + flat + ".snap";
    const std::string key = "source\t" + path + "\t" + std::to_string(st.st_size) + "\t" +
                            std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
    std::string text = slurp(snap);
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

}  // namespace gputopo::spank
