// The topology readers that need hwloc, libxml2 (and through it ICU), as one module:
// gputopo-readers.so. The plugin and the launcher do not link those libraries; they
// link readers/proxy.cpp, which defines the readers' functions (topo/sources/
// hwloc_source.hpp, nccl_xml_source.hpp, topology_loader.hpp) by loading the module
// with dlopen the first time one is called: an srun/sbatch/salloc, or a slurmstepd
// that reads a fresh cache snapshot, never loads it. The CLI and the unit tests link
// the readers directly.
//
// Where the module is: the path set by set_readers_module() (the plugin's admin-only
// plugstack argument readers=; the launcher's GPUTOPO_LAUNCH_TOPOLOGY_MODULE), else the
// first that exists of
//   DIR/gputopo-readers.so              (the build tree: beside the plugin or program)
//   DIR/../lib/gputopo/gputopo-readers.so   (a program installed in PREFIX/bin)
//   GPUTOPO_READERS_DIR/gputopo-readers.so (where make install puts it: PREFIX/lib/gputopo)
// with DIR the directory of the object that holds the proxy (dladdr: the plugin's own
// path; /proc/self/exe for a program).
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo::readers {

// The module's entry points, one table; `abi` is kVersion of the build that made it
// (the plugin refuses a module from another build).
struct Table {
    const char* abi;
    Node (*read_hwloc_xml)(const std::string& path);
    Node (*read_hwloc_xml_buffer)(const std::string& xml, const std::string& name);
    Node (*read_hwloc_live)();
    std::string (*export_hwloc_live_xml)();
    Node (*read_nccl_xml)(const std::string& path);
    Node (*read_nccl_xml_buffer)(const std::string& xml, const std::string& name);
    Node (*load_topology_file)(const std::string& path);
    Node (*discover_this_machine)();
};

// Proxy side (readers/proxy.cpp): the module to load ("" = search as above). Absolute.
void set_readers_module(const std::string& path);
// The path the proxy loads (or would load) the module from.
std::string readers_module_path();
// True once the module is loaded in this process (for tests and verbose output).
bool readers_module_loaded();

}  // namespace gputopo::readers

extern "C" {
// Module side (readers/module.cpp): the table. Never throws.
const gputopo::readers::Table* gputopo_readers_table();
}
