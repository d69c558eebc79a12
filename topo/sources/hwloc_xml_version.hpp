// Which hwloc wrote an XML topology: the major number of
// <topology version="2.0"> (hwloc 2.x writes "2.0", hwloc 3.x "3.0"), else the
// DOCTYPE's (hwloc2.dtd, hwloc3.dtd), else 1 (hwloc 1.x writes neither).
#pragma once

#include "topo/sources/xml_document.hpp"

namespace gputopo {

int hwloc_xml_major(const XmlDocument& doc);

}  // namespace gputopo
