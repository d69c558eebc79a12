// hwloc reader: XML files (hwloc 1.x and 2.x format) and this machine, with
// I/O devices, through the hwloc 2.x C API. The model is built by
// topo/sources/hwloc_convert.cpp; this file loads topologies and turns every way an
// input can be wrong into one TopologyError naming it.
#include "topo/sources/hwloc_source.hpp"

#include <hwloc.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"
#include "topo/sources/hwloc_convert.hpp"
#include "topo/sources/hwloc_xml_version.hpp"
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

// libhwloc 2.9's XML import trusts a few things it never checks and
// dereferences NULL (or loads an invalid enum) when they are missing, killing
// the process instead of failing the load (found by mutating every attribute
// of the shipped fixtures and by fuzzing, see fuzz/): an object with a cpuset
// must have a complete_cpuset, one with a nodeset a complete_nodeset, and a
// bridge_type must name known bus types ("0-1" host bridge, "1-1" PCI bridge),
// and every set must be written as hwloc writes sets (is_hwloc_set).
// hwloc itself writes all of these; anything else is refused here with the
// element's line.
bool is_bus_type(std::string_view s) { return s == "0" || s == "1"; }

// A CPU or NUMA set as hwloc writes it: "0xf...f" (infinite) optionally
// followed by ",WORDS", or WORDS: comma-separated 32-bit words "0x" + 1-8 hex
// digits, the first and the last present, empty ones between them meaning 0
// ("0x00040000,,,0x00040000,0x0"). libhwloc 2.9 asserts (abort) on a set
// starting with a comma, so nothing else reaches it.
bool is_hwloc_set(std::string_view s) {
    const std::string_view infinite = "0xf...f";
    if (s.substr(0, infinite.size()) == infinite) {
        s.remove_prefix(infinite.size());
        if (s.empty()) return true;
        if (s[0] != ',') return false;
        s.remove_prefix(1);
    }
    auto hex_word = [](std::string_view w) {
        if (w.size() < 3 || w.size() > 10 || w[0] != '0' || w[1] != 'x') return false;
        for (char c : w.substr(2))
            if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
        return true;
    };
    bool first = true;
    while (true) {
        size_t comma = s.find(',');
        std::string_view word = s.substr(0, comma);
        bool last = comma == std::string_view::npos;
        if (word.empty() ? first || last : !hex_word(word)) return false;
        if (last) return true;
        s.remove_prefix(comma + 1);
        first = false;
    }
}

// Every attribute libhwloc reads as a set, on any element.
const char* const kSetAttributes[] = {"cpuset",         "complete_cpuset", "allowed_cpuset", "online_cpuset",
                                      "nodeset",        "complete_nodeset", "allowed_nodeset",
                                      "initiator_cpuset"};

void check_sets(const XmlElement& e, const std::string& name) {
    for (const char* a : kSetAttributes) {
        if (!e.has(a)) continue;
        std::string v = e.attr(a);
        if (!is_hwloc_set(v))
            fail(name, "line " + std::to_string(e.line()) + ": <" + e.name() + "> has " + a + "=\"" + v +
                           "\" (expected a set like \"0x000000ff,0x0\"); " + kExpected);
    }
}

// What libhwloc's 1.x and 2.x XML importers require, as a whitelist: only
// what hwloc itself writes gets to hwloc_topology_load. Mutating the shipped
// 1.x fixtures found more NULL reads and aborts inside libhwloc 2.9 (issue 20,
// H1: a NUMANode without cpusets, a Machine without nodesets, a Bridge retyped
// as NUMANode, a root typed Cache or MemCache); each is one of these rules.
enum class Kind { Normal, Memory, Io, Misc };

struct TypeInfo {
    const char* name;
    Kind kind;
    bool cache;  // carries cache_* attributes
};

// hwloc 1.x type names (lstopo 1.x writes these; "Socket" before 1.11, "System" for multi-machine roots).
const TypeInfo kV1Types[] = {
    {"System", Kind::Normal, false}, {"Machine", Kind::Normal, false}, {"Group", Kind::Normal, false},
    {"NUMANode", Kind::Normal, false}, {"Socket", Kind::Normal, false}, {"Package", Kind::Normal, false},
    {"Cache", Kind::Normal, true},   {"Core", Kind::Normal, false},    {"PU", Kind::Normal, false},
    {"Bridge", Kind::Io, false},     {"PCIDev", Kind::Io, false},      {"OSDev", Kind::Io, false},
    {"Misc", Kind::Misc, false},
};
// hwloc 2.x type names.
const TypeInfo kV2Types[] = {
    {"Machine", Kind::Normal, false},  {"Group", Kind::Normal, false},    {"Package", Kind::Normal, false},
    {"Die", Kind::Normal, false},      {"Core", Kind::Normal, false},     {"PU", Kind::Normal, false},
    {"L1Cache", Kind::Normal, true},   {"L2Cache", Kind::Normal, true},   {"L3Cache", Kind::Normal, true},
    {"L4Cache", Kind::Normal, true},   {"L5Cache", Kind::Normal, true},   {"L1iCache", Kind::Normal, true},
    {"L2iCache", Kind::Normal, true},  {"L3iCache", Kind::Normal, true},  {"NUMANode", Kind::Memory, false},
    {"MemCache", Kind::Memory, true},  {"Bridge", Kind::Io, false},       {"PCIDev", Kind::Io, false},
    {"OSDev", Kind::Io, false},        {"Misc", Kind::Misc, false},
};

const TypeInfo* type_info(const std::string& type, int major) {
    if (major <= 1) {
        for (const TypeInfo& t : kV1Types)
            if (type == t.name) return &t;
    } else {
        for (const TypeInfo& t : kV2Types)
            if (type == t.name) return &t;
    }
    return nullptr;
}

std::string type_names(int major) {
    std::string out;
    auto add = [&](const TypeInfo& t) { out += (out.empty() ? "" : ", ") + std::string(t.name); };
    if (major <= 1)
        for (const TypeInfo& t : kV1Types) add(t);
    else
        for (const TypeInfo& t : kV2Types) add(t);
    return out;
}

// Attributes only some types carry (hwloc writes them only there and its
// importer reads them into that type's union member).
struct OwnedAttribute {
    const char* attr;
    bool (*allowed)(const std::string& type, const TypeInfo& t);
    const char* owners;
};
const OwnedAttribute kOwnedAttributes[] = {
    {"bridge_type", [](const std::string& type, const TypeInfo&) { return type == "Bridge"; }, "Bridge"},
    {"bridge_pci", [](const std::string& type, const TypeInfo&) { return type == "Bridge"; }, "Bridge"},
    {"pci_busid", [](const std::string& type, const TypeInfo&) { return type == "Bridge" || type == "PCIDev"; },
     "Bridge and PCIDev"},
    {"pci_type", [](const std::string& type, const TypeInfo&) { return type == "Bridge" || type == "PCIDev"; },
     "Bridge and PCIDev"},
    {"pci_link_speed", [](const std::string& type, const TypeInfo&) { return type == "Bridge" || type == "PCIDev"; },
     "Bridge and PCIDev"},
    {"osdev_type", [](const std::string& type, const TypeInfo&) { return type == "OSDev"; }, "OSDev"},
    {"cache_size", [](const std::string&, const TypeInfo& t) { return t.cache; }, "caches"},
    {"cache_linesize", [](const std::string&, const TypeInfo& t) { return t.cache; }, "caches"},
    {"cache_associativity", [](const std::string&, const TypeInfo& t) { return t.cache; }, "caches"},
    {"cache_type", [](const std::string&, const TypeInfo& t) { return t.cache; }, "caches"},
    {"local_memory", [](const std::string&, const TypeInfo& t) { return t.kind == Kind::Normal || t.kind == Kind::Memory; },
     "CPU and memory objects"},
};

const char* const kRequiredSets[] = {"cpuset", "complete_cpuset", "nodeset", "complete_nodeset"};

struct Walk {
    XmlElement e;
    const TypeInfo* parent;  // the enclosing object's type; nullptr for the root object
    bool objects;            // false: below a non-object element, only its sets are checked
};

void check_object(const XmlElement& e, const TypeInfo* parent, int major, const std::string& name,
                  const TypeInfo*& out) {
    const std::string type = e.attr("type");
    auto refuse = [&](const std::string& what) {
        fail(name, "line " + std::to_string(e.line()) + ": <object type=\"" + type + "\"> " + what + "; " +
                       kExpected);
    };
    const TypeInfo* t = type_info(type, major);
    if (!t)
        refuse(std::string("is not an object type hwloc ") + (major <= 1 ? "1.x" : "2.x") + " writes (expected one of " +
               type_names(major) + ")");
    out = t;
    if (!parent) {
        if (type != "Machine" && !(major <= 1 && type == "System"))
            refuse(std::string("is the root object (expected Machine") + (major <= 1 ? " or System)" : ")"));
    } else {
        // The tree shape hwloc writes: I/O objects below CPU objects or other
        // I/O objects, Misc anywhere, CPU objects only below CPU objects, and
        // (2.x) memory objects below CPU objects or memory-side caches.
        const Kind pk = parent->kind;
        bool ok = true;
        switch (t->kind) {
        case Kind::Normal: ok = pk == Kind::Normal && std::string(parent->name) != "PU"; break;
        case Kind::Memory:
            ok = pk == Kind::Normal || (std::string(parent->name) == "MemCache" && pk == Kind::Memory);
            break;
        case Kind::Io: ok = pk == Kind::Normal || pk == Kind::Io; break;
        case Kind::Misc: ok = true; break;
        }
        if (pk == Kind::Misc && t->kind != Kind::Misc) ok = false;
        if (pk == Kind::Memory && std::string(parent->name) == "NUMANode" && t->kind != Kind::Misc) ok = false;
        if (!ok) refuse(std::string("is inside <object type=\"") + parent->name + "\">, where hwloc never puts it");
    }
    if (e.has("cpuset") && !e.has("complete_cpuset")) refuse("has a cpuset but no complete_cpuset");
    if (e.has("nodeset") && !e.has("complete_nodeset")) refuse("has a nodeset but no complete_nodeset");
    if (t->kind == Kind::Normal || t->kind == Kind::Memory) {
        for (const char* a : kRequiredSets)
            if (!e.has(a)) refuse(std::string("has no ") + a + " (hwloc writes cpuset, complete_cpuset, nodeset and "
                                                        "complete_nodeset on every CPU and memory object)");
    } else {
        for (const char* a : kSetAttributes)
            if (e.has(a) && t->kind == Kind::Io) refuse(std::string("has ") + a + " (an I/O object has no CPU or node set)");
    }
    for (const OwnedAttribute& o : kOwnedAttributes)
        if (e.has(o.attr) && !o.allowed(type, *t))
            refuse(std::string("has ") + o.attr + " (hwloc writes it only on " + o.owners + ")");
    if (type == "Bridge" && !e.has("bridge_type")) refuse("has no bridge_type");
    if (type == "PCIDev" && !e.has("pci_busid")) refuse("has no pci_busid");
    if (type == "OSDev" && !e.has("osdev_type")) refuse("has no osdev_type");
    if (e.has("bridge_type")) {
        std::string bt = e.attr("bridge_type");
        size_t dash = bt.find('-');
        if (dash == std::string::npos || !is_bus_type(std::string_view(bt).substr(0, dash)) ||
            !is_bus_type(std::string_view(bt).substr(dash + 1)))
            refuse("has bridge_type=\"" + bt + "\" (expected \"0-1\" or \"1-1\")");
    }
}

// Every element below the root, without recursion (libxml2 already limits
// the depth; this walk does not depend on it).
void check_objects(const XmlElement& root, int major, const std::string& name) {
    int roots = 0;
    for (const XmlElement& c : root.children())
        if (c.name() == "object") ++roots;
    if (roots != 1)
        fail(name, "has " + std::to_string(roots) + " top-level <object> elements (expected exactly one, the Machine); " +
                       kExpected);
    std::vector<Walk> todo;
    for (const XmlElement& c : root.children()) todo.push_back({c, nullptr, true});
    check_sets(root, name);
    while (!todo.empty()) {
        Walk w = todo.back();
        todo.pop_back();
        check_sets(w.e, name);
        const bool object = w.objects && w.e.name() == "object";
        const TypeInfo* here = nullptr;
        if (object) check_object(w.e, w.parent, major, name, here);
        for (const XmlElement& c : w.e.children()) todo.push_back({c, here, object});
    }
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
    int major = hwloc_xml_major(doc);
    unsigned runtime_major = hwloc_get_api_version() >> 16;
    if (major > static_cast<int>(runtime_major))
        fail(name, "hwloc " + std::to_string(major) + ".0 XML (<topology version=\"" + root.attr("version") +
                       "\">) is not supported by this hwloc (" + hwloc_runtime_version() +
                       "); export it with hwloc 2.x (`lstopo --of xml`) or with hwloc 3's `lstopo --of v2xml`, "
                       "or give gputopo the node's NCCL topology dump instead");
    check_objects(root, major, name);
}

// hwloc discovery components that never run in gputopo (see Topology).
const char* const kBlockedComponents[] = {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl"};

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
        // Issue 20, H10: with libhwloc-plugins installed, hwloc would also run
        // its OpenCL, CUDA, NVML, ROCm SMI and Level Zero components (each
        // initialises a GPU runtime, in slurmd and in slurmstepd as root) and
        // the GL one (connects to an X server). gputopo reads NVML itself,
        // bounded (nvml_timeout=); none of these may run here, whatever
        // HWLOC_COMPONENTS says: a blacklisted component is skipped even when
        // the environment asks for it.
        for (const char* c : kBlockedComponents)
            hwloc_topology_set_components(topo_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
    }
    ~Topology() { hwloc_topology_destroy(topo_); }
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;
    hwloc_topology_t get() const { return topo_; }

private:
    hwloc_topology_t topo_ = nullptr;
};

std::string read_file(const std::string& path) {
    ReadFailure why;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{}, &why);
    if (!text) fail(path, why.what + "; " + kExpected);
    return std::move(*text);
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

namespace {

// This machine's topology loaded by hwloc into `topo`; TopologyError naming errno otherwise.
void load_live(Topology& topo) {
    errno = 0;
    if (hwloc_topology_load(topo.get()) != 0) {
        int err = errno;
        throw TopologyError(std::string("hwloc could not discover this machine's topology (") +
                            std::strerror(err ? err : EINVAL) + ")");
    }
}

}  // namespace

Node read_hwloc_live() {
    Topology topo;
    load_live(topo);
    return hwloc_detail::convert_topology(topo.get(), "this machine");
}

std::string export_hwloc_live_xml() {
    Topology topo;
    load_live(topo);
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
