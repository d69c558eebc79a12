#include "spank/plugstack_args.hpp"

#include "topo/core/errors.hpp"

namespace gputopo::spank {

namespace {

std::string absolute_path(const std::string& key, const std::string& value) {
    if (value.empty() || value[0] != '/')
        throw ParseError("gputopo: plugstack.conf: " + key + "=" + value + " must be an absolute path");
    return value;
}

struct Key {
    const char* name;
    void (*apply)(PluginConfig& c, const std::string& value);
};

// The one table of plugstack.conf keys.
const Key kKeys[] = {
    {"default", [](PluginConfig& c, const std::string& v) { c.defaults = parse_gpu_topo(v, "plugstack.conf default="); }},
    {"topology", [](PluginConfig& c, const std::string& v) {
         c.topology = absolute_path("topology", v);
         expand_path(c.topology, "node", "host");  // reject bad % sequences now
     }},
    {"cache", [](PluginConfig& c, const std::string& v) { c.cache_dir = absolute_path("cache", v); }},
    {"islands", [](PluginConfig& c, const std::string& v) { c.islands = absolute_path("islands", v); }},
    {"readers", [](PluginConfig& c, const std::string& v) { c.readers = absolute_path("readers", v); }},
    {"wrap", [](PluginConfig& c, const std::string& v) { c.wrap = absolute_path("wrap", v); }},
};

std::string key_list() {
    std::string s;
    for (const auto& k : kKeys) {
        if (!s.empty()) s += ", ";
        s += std::string(k.name) + "=";
    }
    return s;
}

}  // namespace

std::vector<std::string> plugstack_keys() {
    std::vector<std::string> v;
    for (const auto& k : kKeys) v.push_back(k.name);
    return v;
}

PluginConfig parse_plugstack_args(const std::vector<std::string>& argv) {
    PluginConfig c;
    std::vector<std::string> seen;
    for (const auto& arg : argv) {
        size_t eq = arg.find('=');
        if (eq == std::string::npos || eq == 0)
            throw ParseError("gputopo: plugstack.conf: argument '" + arg + "' is not KEY=VALUE (expected " + key_list() + ")");
        std::string key = arg.substr(0, eq);
        std::string value = arg.substr(eq + 1);
        const Key* found = nullptr;
        for (const auto& k : kKeys)
            if (key == k.name) found = &k;
        if (!found)
            throw ParseError("gputopo: plugstack.conf: unknown argument '" + key + "' in '" + arg + "' (expected " + key_list() + ")");
        for (const auto& s : seen)
            if (s == key) throw ParseError("gputopo: plugstack.conf: argument '" + key + "' given twice");
        seen.push_back(key);
        found->apply(c, value);
    }
    return c;
}

std::string expand_path(const std::string& pattern, const std::string& node, const std::string& host) {
    auto checked = [&](const std::string& what, const std::string& v) {
        if (v.empty() || v.find('/') != std::string::npos || v == "." || v == "..")
            throw ParseError("gputopo: cannot expand " + what + " in '" + pattern + "': '" + v + "' is not a plain name");
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
            throw ParseError("gputopo: plugstack.conf: '" + pattern + "' ends with '%' (expected %n, %h or %%)");
        char n = pattern[++i];
        if (n == 'n') out += checked("%n", node);
        else if (n == 'h') out += checked("%h", host);
        else if (n == '%') out += '%';
        else
            throw ParseError(std::string("gputopo: plugstack.conf: unknown '%") + n + "' in '" + pattern + "' (expected %n, %h or %%)");
    }
    return out;
}

}  // namespace gputopo::spank
