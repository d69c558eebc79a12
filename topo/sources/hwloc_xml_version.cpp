#include "topo/sources/hwloc_xml_version.hpp"

#include <string>

namespace gputopo {

int hwloc_xml_major(const XmlDocument& doc) {
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

}  // namespace gputopo
