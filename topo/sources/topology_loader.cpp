// Recognises a topology file's format from its content and hands it to the
// right reader. Every way a file can be wrong ends in one TopologyError that
// names the file and says what was expected.
#include "topo/sources/topology_loader.hpp"



#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"
#include "topo/sources/hwloc_source.hpp"
#include "topo/sources/hwloc_xml_version.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/xml_document.hpp"

namespace gputopo {

namespace {

const char* const kExpected =
    "expected an hwloc XML export (lstopo --of xml, hwloc 1.x or 2.x) or an NCCL/RCCL topology XML "
    "(NCCL_TOPO_DUMP_FILE, <system version=\"1\">)";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw TopologyError("topology file " + path + " " + what);
}

std::string read_whole_file(const std::string& path) {
    ReadFailure why;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{}, &why);
    if (!text) fail(path, why.what + "; " + kExpected);
    return std::move(*text);
}

bool blank(const std::string& s) {
    for (char c : s)
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
    return true;
}

}  // namespace

Node load_topology_file(const std::string& path) {
    const std::string text = read_whole_file(path);
    if (blank(text)) fail(path, std::string("is empty; ") + kExpected);
    if (text.find("CPU Affinity") != std::string::npos && text.find("GPU0") != std::string::npos &&
        text.find('<') == std::string::npos)
        fail(path, std::string("is `nvidia-smi topo -m` output: a GPU matrix without PCI addresses, NICs' "
                               "buses or CPU packages, which no plan can be made from; ") + kExpected);
    XmlDocument doc(text, path);
    if (!doc.ok()) fail(path, "is not XML (" + doc.error() + "); " + kExpected);
    const std::string root = doc.root().name();

    Node node;
    if (root == "topology") {
        const int major = hwloc_xml_major(doc);
        if (major >= 3)
            fail(path, "is hwloc " + std::to_string(major) + ".x XML: hwloc " + std::to_string(major) +
                           ".0 XML is not supported by hwloc 2.9; export the machine again with hwloc 2.x "
                           "(lstopo --of xml), or give its NCCL topology dump");
        node = read_hwloc_xml_document(doc, text, path);
    } else if (root == "system") {
        node = read_nccl_xml_document(doc, path);
    } else if (root == "graphs" || root == "graph") {
        fail(path, "is an NCCL graph file (NCCL_GRAPH_DUMP_FILE, root <" + root + ">), not a topology; " + kExpected);
    } else {
        fail(path, "is XML but not a topology (root element <" + root + ">); " + kExpected);
    }
    if (node.gpus.empty())
        fail(path, "describes no GPUs; expected the topology of a GPU node (a CPU-only node needs no binding file)");
    return node;
}

Node discover_this_machine() { return read_hwloc_live(); }

}  // namespace gputopo
