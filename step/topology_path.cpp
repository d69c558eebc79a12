#include "step/topology_path.hpp"

#include "topo/core/errors.hpp"

namespace gputopo::step {

std::string expand_path(const std::string& pattern, const std::string& node, const std::string& host) {
    auto checked = [&](const std::string& what, const std::string& v) {
        if (v.empty() || v.find('/') != std::string::npos || v == "." || v == "..")
            throw ParseError("cannot expand " + what + " in '" + pattern + "': '" + v + "' is not a plain name");
        return v;
    };
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        char c = pattern[i];
        if (c != '%') {
            out += c;
            continue;
        }
        if (i + 1 >= pattern.size())
            throw ParseError("'" + pattern + "' ends with '%' (expected %n, %h or %%)");
        char n = pattern[++i];
        if (n == 'n') out += checked("%n", node);
        else if (n == 'h') out += checked("%h", host);
        else if (n == '%') out += '%';
        else
            throw ParseError(std::string("unknown '%") + n + "' in '" + pattern + "' (expected %n, %h or %%)");
    }
    return out;
}

}  // namespace gputopo::step
