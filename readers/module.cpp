// gputopo-readers.so: the readers table (readers/readers.hpp), linked with the readers of
// libgputopo.a and hwloc/libxml2. Exports only gputopo_readers_table_v3 (readers/module.map).
#include "readers/readers.hpp"

#include <exception>
#include <string>

#include "topo/core/errors.hpp"
#include "topo/core/version.hpp"
#include "topo/sources/hwloc_source.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::readers {
namespace {

// What the reader makes, as text: a node's snapshot, or the XML export itself.
std::string run_reader(Reader r, const std::string& a, const std::string& b) {
    switch (r) {
        case Reader::HwlocXml: return write_node_snapshot(read_hwloc_xml(a));
        case Reader::HwlocXmlBuffer: return write_node_snapshot(read_hwloc_xml_buffer(a, b));
        case Reader::HwlocLive: return write_node_snapshot(read_hwloc_live());
        case Reader::HwlocLiveXml: return export_hwloc_live_xml();
        case Reader::NcclXml: return write_node_snapshot(read_nccl_xml(a));
        case Reader::NcclXmlBuffer: return write_node_snapshot(read_nccl_xml_buffer(a, b));
        case Reader::TopologyFile: return write_node_snapshot(load_topology_file(a));
        case Reader::ThisMachine: return write_node_snapshot(discover_this_machine());
    }
    throw std::runtime_error("no such topology reader");
}

Failure fail(Failure f, const char* what, Sink sink, void* error) {
    sink(error, what, std::char_traits<char>::length(what));
    return f;
}

int read(int reader, const char* a, size_t a_len, const char* b, size_t b_len, Sink sink, void* result, void* error) {
    Failure f = Failure::None;
    try {
        const std::string text = run_reader(static_cast<Reader>(reader), std::string(a ? a : "", a ? a_len : 0),
                                            std::string(b ? b : "", b ? b_len : 0));
        sink(result, text.data(), text.size());
    } catch (const ParseError& e) {
        f = fail(Failure::Parse, e.what(), sink, error);
    } catch (const TopologyError& e) {
        f = fail(Failure::Topology, e.what(), sink, error);
    } catch (const PlanError& e) {
        f = fail(Failure::Plan, e.what(), sink, error);
    } catch (const std::exception& e) {
        f = fail(Failure::Other, e.what(), sink, error);
    } catch (...) {
        f = fail(Failure::Other, "unknown error in the topology readers", sink, error);
    }
    return static_cast<int>(f);
}

}  // namespace
}  // namespace gputopo::readers

extern "C" const gputopo::readers::Table* gputopo_readers_table_v3() {
    static const gputopo::readers::Table table = {gputopo::kVersion, &gputopo::readers::read};
    return &table;
}
