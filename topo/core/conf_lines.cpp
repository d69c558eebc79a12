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

std::optional<bool> slurm_bool(std::string_view v) {
    for (const char* yes : {"yes", "up", "true", "1"})
        if (iequals(v, yes)) return true;
    for (const char* no : {"no", "down", "false", "0"})
        if (iequals(v, no)) return false;
    return std::nullopt;
}

const std::string* ConfLine::get(std::string_view key) const {
    for (const auto& kv : pairs)
        if (iequals(kv.first, key)) return &kv.second;
    return nullptr;
}

void ConfLine::fail(const std::string& why, const std::string& expected) const {
    throw ParseError(origin() + ": '" + text + "': " + why + " (expected " + expected + ")");
}

namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

}  // namespace

// Slurm's rule (src/common/parse_config.c keyvalue_pattern): KEY, optional spaces, '=',
// optional spaces, then a value in double quotes (spaces kept) or up to the next space.
std::vector<std::pair<std::string, std::string>> slurm_key_values(const ConfLine& cl) {
    std::vector<std::pair<std::string, std::string>> pairs;
    const std::string& t = cl.text;
    const size_t n = t.size();
    size_t at = 0;
    auto skip = [&]() {
        while (at < n && blank(t[at])) ++at;
    };
    while (true) {
        skip();
        if (at >= n) break;
        const size_t key_at = at;
        while (at < n && !blank(t[at]) && t[at] != '=') ++at;
        std::string key = t.substr(key_at, at - key_at);
        skip();
        if (key.empty() || at >= n || t[at] != '=') {
            size_t end = key_at;
            while (end < n && !blank(t[end])) ++end;
            cl.fail("'" + t.substr(key_at, end - key_at) + "' is not Key=Value",
                    "Key=Value words separated by spaces");
        }
        ++at;
        skip();
        std::string value;
        const size_t value_at = at;
        if (at < n && t[at] == '"') {
            size_t close = t.find('"', at + 1);
            if (close != std::string::npos && (close + 1 == n || blank(t[close + 1]))) {
                value = t.substr(at + 1, close - at - 1);
                at = close + 1;
            }
        }
        if (at == value_at) {  // not a quoted value: up to the next space
            while (at < n && !blank(t[at])) ++at;
            value = t.substr(value_at, at - value_at);
        }
        pairs.emplace_back(std::move(key), std::move(value));
    }
    return pairs;
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
        cl.pairs = slurm_key_values(cl);
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
