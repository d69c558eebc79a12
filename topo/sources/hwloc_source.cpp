// hwloc reader: XML files (hwloc 1.x and 2.x format) and this machine, with
// I/O devices, through the hwloc 2.x C API. The model is built by
// topo/sources/hwloc_convert.cpp; this file loads topologies and turns every way an
// input can be wrong into one TopologyError naming it.
#include "topo/sources/hwloc_source.hpp"

#include <hwloc.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "topo/core/errors.hpp"
#include "topo/sources/hwloc_convert.hpp"
#include "topo/sources/xml_document.hpp"

namespace gputopo {

namespace {

const char* const kExpected = "expected an hwloc XML topology as written by `lstopo --of xml` (hwloc 1.x or 2.x)";

[[noreturn]] void fail(const std::string& name, const std::string& what) {
    throw TopologyError(name + ": " + what);
}

// The runtime hwloc's "major.minor", e.g. "2.9".
std::string hwloc_runtime_version() {
    unsigned v = hwloc_get_api_version();
    return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff);
}

// hwloc writes <topology version="2.0"> (2.x), <topology version="3.0">
// (3.x, still with the hwloc2.dtd DOCTYPE) and no version at all (1.x).
int declared_major(const XmlElement& root) {
    std::string v = root.attr("version");
    if (v.empty()) return 1;
    int major = 0;
    for (char c : v) {
        if (c < '0' || c > '9') break;
        major = major * 10 + (c - '0');
        if (major > 1000) break;
    }
    return major;
}

// Content checks hwloc's own loader would answer with a bare EINVAL, on the
// document already parsed.
void check_xml_document(const XmlDocument& doc, const std::string& name) {
    if (!doc.ok()) fail(name, "is not XML (" + doc.error() + "); " + kExpected);
    XmlElement root = doc.root();
    if (root.name() == "system")
        fail(name, std::string("is not an hwloc topology: it is an NCCL/RCCL topology file (root <system>); ") +
                       kExpected);
    if (root.name() != "topology")
        fail(name, "is XML but not an hwloc topology (root element <" + root.name() + ">, expected <topology>); " +
                       kExpected);
    int major = declared_major(root);
    unsigned runtime_major = hwloc_get_api_version() >> 16;
    if (major > static_cast<int>(runtime_major))
        fail(name, "hwloc " + std::to_string(major) + ".0 XML (<topology version=\"" + root.attr("version") +
                       "\">) is not supported by this hwloc (" + hwloc_runtime_version() +
                       "); export it with hwloc 2.x (`lstopo --of xml`) or with hwloc 3's `lstopo --of v2xml`, "
                       "or give gputopo the node's NCCL topology dump instead");
}

// hwloc loads its plugins (PCI through libpciaccess, OpenCL, ...) with the
// first topology and unloads them with the last; libpciaccess keeps static
// state that becomes unreachable when it is unloaded (LeakSanitizer reports
// it under SAN=1, and every load/unload cycle repeats it). One empty topology
// kept for the life of the process keeps the plugins loaded once.
hwloc_topology_t volatile g_plugin_anchor = nullptr;  // volatile: never optimised away

void keep_hwloc_plugins_loaded() {
    static const bool once = [] {
        hwloc_topology_t t = nullptr;
        if (hwloc_topology_init(&t) == 0) g_plugin_anchor = t;
        return true;
    }();
    (void)once;
}

class Topology {
public:
    Topology() {
        keep_hwloc_plugins_loaded();
        if (hwloc_topology_init(&topo_) != 0) throw TopologyError("hwloc could not initialise a topology");
        // The whole node, I/O devices included: GPUs, NICs, NVSwitches and
        // every bridge between them. Disallowed CPUs (a cgroup) stay in the
        // model; the plan restricts to the CPUs a step may use.
        hwloc_topology_set_flags(topo_, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
        hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_ALL);
    }
    ~Topology() { hwloc_topology_destroy(topo_); }
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;
    hwloc_topology_t get() const { return topo_; }

private:
    hwloc_topology_t topo_ = nullptr;
};

std::string read_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        int err = errno;
        if (err == ENOENT) fail(path, std::string("no such file; ") + kExpected);
        fail(path, std::string("cannot be read (") + std::strerror(err) + "); " + kExpected);
    }
    if (S_ISDIR(st.st_mode)) fail(path, std::string("is a directory; ") + kExpected);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        int err = errno;
        fail(path, std::string("cannot be read (") + std::strerror(err ? err : EIO) + "); " + kExpected);
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail(path, std::string("cannot be read (I/O error); ") + kExpected);
    return text.str();
}

}  // namespace

Node read_hwloc_xml_buffer(const std::string& xml, const std::string& name) {
    if (xml.find_first_not_of(" \t\r\n") == std::string::npos) fail(name, std::string("is empty; ") + kExpected);
    return read_hwloc_xml_document(XmlDocument(xml, name), xml, name);
}

Node read_hwloc_xml_document(const XmlDocument& doc, const std::string& xml, const std::string& name) {
    check_xml_document(doc, name);
    if (xml.size() >= static_cast<size_t>(std::numeric_limits<int>::max()))
        fail(name, std::string("is too large; ") + kExpected);
    Topology topo;
    errno = 0;
    // hwloc wants the length including the terminating NUL.
    if (hwloc_topology_set_xmlbuffer(topo.get(), xml.c_str(), static_cast<int>(xml.size() + 1)) != 0 ||
        hwloc_topology_load(topo.get()) != 0) {
        int err = errno;
        fail(name, "hwloc " + hwloc_runtime_version() + " rejected this XML topology (" +
                       (err ? std::strerror(err) : "invalid content") + "); " + kExpected +
                       "; HWLOC_XML_VERBOSE=1 makes hwloc say why");
    }
    return hwloc_detail::convert_topology(topo.get(), "hwloc XML " + name);
}

Node read_hwloc_xml(const std::string& path) { return read_hwloc_xml_buffer(read_file(path), path); }

Node read_hwloc_live() {
    Topology topo;
    errno = 0;
    if (hwloc_topology_load(topo.get()) != 0) {
        int err = errno;
        throw TopologyError(std::string("hwloc could not discover this machine's topology (") +
                            std::strerror(err ? err : EINVAL) + ")");
    }
    return hwloc_detail::convert_topology(topo.get(), "this machine");
}

std::string export_hwloc_live_xml() {
    Topology topo;
    errno = 0;
    if (hwloc_topology_load(topo.get()) != 0) {
        int err = errno;
        throw TopologyError(std::string("hwloc could not discover this machine's topology (") +
                            std::strerror(err ? err : EINVAL) + ")");
    }
    char* buf = nullptr;
    int len = 0;
    if (hwloc_topology_export_xmlbuffer(topo.get(), &buf, &len, 0) != 0 || !buf) {
        int err = errno;
        throw TopologyError(std::string("hwloc could not export this machine's topology as XML (") +
                            std::strerror(err ? err : EINVAL) + ")");
    }
    // len counts the terminating NUL.
    std::string xml(buf, len > 0 ? static_cast<size_t>(len - 1) : 0);
    hwloc_free_xmlbuffer(topo.get(), buf);
    return xml;
}

}  // namespace gputopo
