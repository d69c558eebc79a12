// The readers' functions for the plugin and the launcher: each loads gputopo-readers.so
// (once per process) and calls the same function there (readers/readers.hpp). Errors
// loading the module are TopologyError naming the module; the readers' own exceptions
// pass through unchanged.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "readers/readers.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/version.hpp"
#include "topo/sources/hwloc_source.hpp"
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
    Fn fn = reinterpret_cast<Fn>(dlsym(h, "gputopo_readers_table"));
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

using readers::table;

Node read_hwloc_xml(const std::string& path) { return table().read_hwloc_xml(path); }
Node read_hwloc_xml_buffer(const std::string& xml, const std::string& name) {
    return table().read_hwloc_xml_buffer(xml, name);
}
Node read_hwloc_live() { return table().read_hwloc_live(); }
std::string export_hwloc_live_xml() { return table().export_hwloc_live_xml(); }
Node read_nccl_xml(const std::string& path) { return table().read_nccl_xml(path); }
Node read_nccl_xml_buffer(const std::string& xml, const std::string& name) {
    return table().read_nccl_xml_buffer(xml, name);
}
Node load_topology_file(const std::string& path) { return table().load_topology_file(path); }
Node discover_this_machine() { return table().discover_this_machine(); }

}  // namespace gputopo
