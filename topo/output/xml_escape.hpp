// Escaping for XML text and attribute values (the NCCL topology writer, the
// SVG writer). Pure.
#pragma once

#include <string>

namespace gputopo {

// & < > " ' as entities; every other byte as it is.
inline std::string xml_escape(const std::string& s) {
    std::string o;
    o.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            case '\'': o += "&apos;"; break;
            default: o += c;
        }
    }
    return o;
}

}  // namespace gputopo
