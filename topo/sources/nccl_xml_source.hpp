// NCCL/RCCL topology XML reader (<system version="1"> with cpu, pci, gpu,
// nic, net, nvlink, xgmi, c2c elements): NCCL_TOPO_DUMP_FILE dumps and the
// cloud vendors' hand-written NCCL_TOPO_FILE files, into the node model.
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

// Throws TopologyError naming the file and what was expected.
Node read_nccl_xml(const std::string& path);
Node read_nccl_xml_buffer(const std::string& xml, const std::string& name);
// A document the caller already parsed (topology_loader: one parse per file).
class XmlDocument;
Node read_nccl_xml_document(const XmlDocument& doc, const std::string& name);

}  // namespace gputopo
