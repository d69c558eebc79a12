// gputopo-readers.so: the readers table (readers/readers.hpp), linked with the readers of
// libgputopo.a and hwloc/libxml2. Exports only gputopo_readers_table (readers/module.map).
#include "readers/readers.hpp"

#include "topo/core/version.hpp"
#include "topo/sources/hwloc_source.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/topology_loader.hpp"

extern "C" const gputopo::readers::Table* gputopo_readers_table() {
    static const gputopo::readers::Table table = {
        gputopo::kVersion,
        &gputopo::read_hwloc_xml,
        &gputopo::read_hwloc_xml_buffer,
        &gputopo::read_hwloc_live,
        &gputopo::export_hwloc_live_xml,
        &gputopo::read_nccl_xml,
        &gputopo::read_nccl_xml_buffer,
        &gputopo::load_topology_file,
        &gputopo::discover_this_machine,
    };
    return &table;
}
