// The readers' functions for the plugin and the launcher: each loads gputopo-readers.so
// (once per process) and calls the same reader there (readers/readers.hpp): only plain
// data crosses, the node comes back as snapshot text and is read here. Errors loading the
// module are TopologyError naming the module; a reader's error comes back as its kind and
// message and is thrown here again, as the same type with the same message.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "readers/readers.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/version.hpp"
#include "topo/sources/hwloc_source.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/topology_loader.hpp"

#ifndef GPUTOPO_READERS_DIR
#define GPUTOPO_READERS_DIR "/usr/local/lib/gputopo"
#endif

namespace gputopo::readers {
namespace {

const char* const kModule = "gputopo-readers.so";

std::string& module_override() {
    static std::string path;
    return path;
}

const Table*& loaded_table() {
    static const Table* table = nullptr;
    return table;
}

// The directory of the object this code is in: the plugin (a shared object) or the program.
std::string own_dir() {
    Dl_info info;
    std::memset(&info, 0, sizeof info);
    std::string self;
    if (dladdr(reinterpret_cast<void*>(&own_dir), &info) != 0 && info.dli_fname && info.dli_fname[0] == '/') {
        const std::string name = info.dli_fname;
        if (name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0) self = name;
    }
    if (self.empty()) {
        char buf[PATH_MAX] = {0};
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
        if (n > 0) self.assign(buf, static_cast<size_t>(n));
    }
    const size_t slash = self.rfind('/');
    return slash == std::string::npos ? std::string(".") : self.substr(0, slash);
}

const Table& table() {
    if (const Table* t = loaded_table()) return *t;
    const std::string path = readers_module_path();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw TopologyError("cannot load the topology readers " + path + " (" + dlerror() + ")");
    using Fn = const Table* (*)();
    Fn fn = reinterpret_cast<Fn>(dlsym(h, "gputopo_readers_table_v3"));
    const Table* t = fn ? fn() : nullptr;
    if (!t || !t->abi || std::strcmp(t->abi, kVersion) != 0) {
        dlclose(h);
        throw TopologyError(path + " is not the topology readers module of gputopo " + kVersion);
    }
    loaded_table() = t;
    return *t;
}

}  // namespace

void set_readers_module(const std::string& path) { module_override() = path; }

std::string readers_module_path() {
    if (!module_override().empty()) return module_override();
    const std::string dir = own_dir();
    const std::string candidates[] = {dir + "/" + kModule, dir + "/../lib/gputopo/" + kModule,
                                      std::string(GPUTOPO_READERS_DIR) + "/" + kModule};
    for (const std::string& c : candidates)
        if (access(c.c_str(), R_OK) == 0) return c;
    return candidates[2];
}

bool readers_module_loaded() { return loaded_table() != nullptr; }

}  // namespace gputopo::readers

namespace gputopo {

namespace {

void append(void* buffer, const char* data, size_t len) { static_cast<std::string*>(buffer)->append(data, len); }

// Runs reader `r` in the module; its text, or its error thrown on this side.
std::string run(readers::Reader r, const std::string& a = "", const std::string& b = "") {
    std::string result, error;
    const auto how = static_cast<readers::Failure>(readers::table().read(
        static_cast<int>(r), a.data(), a.size(), b.data(), b.size(), &append, &result, &error));
    switch (how) {
        case readers::Failure::None: return result;
        case readers::Failure::Parse: throw ParseError(error);
        case readers::Failure::Topology: throw TopologyError(error);
        case readers::Failure::Plan: throw PlanError(error);
        case readers::Failure::Other: break;
    }
    throw std::runtime_error(error);
}

Node node_from(readers::Reader r, const std::string& name, const std::string& a = "", const std::string& b = "") {
    return read_node_snapshot(run(r, a, b), name);
}

}  // namespace

using readers::Reader;

Node read_hwloc_xml(const std::string& path) { return node_from(Reader::HwlocXml, path, path); }
Node read_hwloc_xml_buffer(const std::string& xml, const std::string& name) {
    return node_from(Reader::HwlocXmlBuffer, name, xml, name);
}
Node read_hwloc_live() { return node_from(Reader::HwlocLive, "this machine"); }
std::string export_hwloc_live_xml() { return run(Reader::HwlocLiveXml); }
Node read_nccl_xml(const std::string& path) { return node_from(Reader::NcclXml, path, path); }
Node read_nccl_xml_buffer(const std::string& xml, const std::string& name) {
    return node_from(Reader::NcclXmlBuffer, name, xml, name);
}
Node load_topology_file(const std::string& path) { return node_from(Reader::TopologyFile, path, path); }
Node discover_this_machine() { return node_from(Reader::ThisMachine, "this machine"); }

}  // namespace gputopo
