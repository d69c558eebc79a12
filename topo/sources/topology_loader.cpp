// Recognises a topology file's format from its content and hands it to the
// right reader. Every way a file can be wrong ends in one TopologyError that
// names the file and says what was expected.
#include "topo/sources/topology_loader.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "topo/core/errors.hpp"
#include "topo/sources/hwloc_source.hpp"
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
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT) fail(path, std::string("does not exist; ") + kExpected);
        fail(path, std::string("cannot be read (") + std::strerror(err) + "); " + kExpected);
    }
    if (S_ISDIR(st.st_mode)) fail(path, std::string("is a directory; ") + kExpected);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        fail(path, std::string("cannot be read (") + std::strerror(err) + "); " + kExpected);
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail(path, std::string("cannot be read (I/O error); ") + kExpected);
    return text.str();
}

bool blank(const std::string& s) {
    for (char c : s)
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
    return true;
}

// The major number of hwloc's <topology version="2.0">; 1 when absent (hwloc
// 1.x writes no version); also looks at the DOCTYPE (hwloc2.dtd, hwloc3.dtd).
int hwloc_major(const XmlDocument& doc) {
    const std::string v = doc.root().attr("version");
    if (!v.empty() && v[0] >= '0' && v[0] <= '9') {
        int major = 0;
        for (char c : v) {
            if (c < '0' || c > '9') break;
            major = major * 10 + (c - '0');
            if (major > 1000) break;
        }
        return major;
    }
    const std::string dtd = doc.doctype_system_id();
    if (dtd.rfind("hwloc", 0) == 0 && dtd.size() > 5 && dtd[5] >= '2' && dtd[5] <= '9') return dtd[5] - '0';
    return 1;
}

}  // namespace

Node load_topology_file(const std::string& path) {
    const std::string text = read_whole_file(path);
    if (blank(text)) fail(path, std::string("is empty; ") + kExpected);
    XmlDocument doc(text, path);
    if (!doc.ok()) fail(path, "is not XML (" + doc.error() + "); " + kExpected);
    const std::string root = doc.root().name();

    Node node;
    if (root == "topology") {
        const int major = hwloc_major(doc);
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
