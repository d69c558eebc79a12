// hwloc reader: hwloc XML files (1.x and 2.x format) and live discovery of
// this machine, into the node model. The only file that includes <hwloc.h>.
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

// Throws TopologyError naming the file and what was expected.
Node read_hwloc_xml(const std::string& path);
// Same, from XML text already in memory (`name` is used in messages).
Node read_hwloc_xml_buffer(const std::string& xml, const std::string& name);
// The same, for a file the caller already read and parsed (topology_loader):
// the text is read once and parsed once by libxml2, once by hwloc.
class XmlDocument;
Node read_hwloc_xml_document(const XmlDocument& doc, const std::string& xml, const std::string& name);
// This machine, I/O devices included. Does not throw for a machine without
// GPUs (a CPU-only node is a valid node); throws TopologyError when hwloc
// itself fails.
Node read_hwloc_live();
// Exports this machine's topology as hwloc XML text (for caches).
std::string export_hwloc_live_xml();

}  // namespace gputopo
