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

#include <cstddef>
#include <string>

#include "topo/core/model.hpp"

namespace gputopo::readers {

// The module's entry points, one table; `abi` is kVersion of the build that made it
// (the plugin refuses a module from another build).
//
// Only plain data crosses: the plugin carries its own C++ runtime (linked with
// -static-libstdc++ -static-libgcc: loading libstdc++.so and libgcc_s.so took most of
// the ~1.2 ms a dlopen of the plugin cost), the module uses the system's, so neither
// an exception nor an object one side allocated may reach the other. Inputs are
// (pointer, length); results come back through `sink`, which appends to the caller's
// own buffer: a node as node-snapshot text (topo/sources/node_snapshot.hpp, lossless
// for every fixture), an XML export as text, an error as its message. Each entry
// returns how it ended (Failure) and never throws.
enum class Failure : int { None = 0, Parse = 1, Topology = 2, Plan = 3, Other = 4 };
using Sink = void (*)(void* buffer, const char* data, size_t len);
enum class Reader : int {
    HwlocXml = 0,        // a: path
    HwlocXmlBuffer = 1,  // a: XML text, b: its name
    HwlocLive = 2,
    HwlocLiveXml = 3,    // the result is hwloc XML text, not a snapshot
    NcclXml = 4,         // a: path
    NcclXmlBuffer = 5,   // a: XML text, b: its name
    TopologyFile = 6,    // a: path
    ThisMachine = 7,
};
struct Table {
    const char* abi;
    int (*read)(int reader, const char* a, size_t a_len, const char* b, size_t b_len, Sink sink, void* result,
                void* error);
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
// (Named _v3: the entries of _v1 threw and returned C++ objects.)
const gputopo::readers::Table* gputopo_readers_table_v3();
}
