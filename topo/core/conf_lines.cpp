#include "topo/core/conf_lines.hpp"

#include <cctype>
#include <sstream>

#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"

namespace gputopo {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

const std::string* ConfLine::get(std::string_view key) const {
    for (const auto& kv : pairs)
        if (iequals(kv.first, key)) return &kv.second;
    return nullptr;
}

void ConfLine::fail(const std::string& why, const std::string& expected) const {
    throw ParseError(origin() + ": '" + text + "': " + why + " (expected " + expected + ")");
}

std::vector<ConfLine> parse_conf_lines(std::string_view text, const std::string& file) {
    std::vector<ConfLine> out;
    int number = 0;
    size_t pos = 0;
    std::string pending;
    int pending_start = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string line(text.substr(pos, nl - pos));
        ++number;
        pos = nl + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        // Comment: '#' not escaped as "\#".
        std::string clean;
        clean.reserve(line.size());
        for (size_t i = 0; i < line.size(); ++i) {
            if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '#') {
                clean += '#';
                ++i;
            } else if (line[i] == '#') {
                break;
            } else {
                clean += line[i];
            }
        }
        if (pending.empty()) pending_start = number;
        bool continued = false;
        size_t e = clean.find_last_not_of(" \t");
        if (e != std::string::npos && clean[e] == '\\') {
            clean.erase(e);
            continued = true;
        }
        pending += clean;
        if (continued && pos <= text.size()) {
            pending += ' ';
            continue;
        }
        size_t b = pending.find_first_not_of(" \t");
        if (b == std::string::npos) {
            pending.clear();
            if (nl == text.size()) break;
            continue;
        }
        ConfLine cl;
        cl.file = file;
        cl.number = pending_start;
        cl.text = pending.substr(b, pending.find_last_not_of(" \t") - b + 1);
        size_t at = 0;
        while (true) {
            at = cl.text.find_first_not_of(" \t", at);
            if (at == std::string::npos) break;
            size_t stop = cl.text.find_first_of(" \t", at);
            std::string tok = cl.text.substr(at, stop == std::string::npos ? std::string::npos : stop - at);
            at = stop;
            size_t eq = tok.find('=');
            if (eq == std::string::npos || eq == 0)
                cl.fail("'" + tok + "' is not Key=Value", "Key=Value words separated by spaces");
            cl.pairs.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
        }
        out.push_back(std::move(cl));
        pending.clear();
        if (nl == text.size()) break;
    }
    return out;
}

std::string read_text_file(const std::string& path, const char* what) {
    ReadFailure why;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{kMaxConfigFileBytes, true}, &why);
    if (!text) throw TopologyError(std::string("cannot read ") + what + " '" + path + "': it " + why.what);
    return std::move(*text);
}

}  // namespace gputopo
