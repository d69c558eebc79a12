#include "spank/plugstack_args.hpp"

#include <cstdlib>

#include "step/topology_path.hpp"
#include "topo/core/errors.hpp"

namespace gputopo::spank {

namespace {

std::string absolute_path(const std::string& key, const std::string& value) {
    if (value.empty() || value[0] != '/')
        throw ParseError("plugstack.conf: " + key + "=" + value + " must be an absolute path");
    return value;
}

struct Key {
    const char* name;
    void (*apply)(PluginConfig& c, const std::string& value);
};

// The one table of plugstack.conf keys.
const Key kKeys[] = {
    {"default", [](PluginConfig& c, const std::string& v) { c.defaults = step::parse_gpu_topo(v, "plugstack.conf default="); }},
    {"topology", [](PluginConfig& c, const std::string& v) {
         c.topology = absolute_path("topology", v);
         try {
             step::expand_path(c.topology, "node", "host");  // reject bad % sequences now
         } catch (const ParseError& e) {
             throw ParseError(std::string("plugstack.conf: topology=: ") + e.what());
         }
     }},
    {"cache", [](PluginConfig& c, const std::string& v) { c.cache_dir = absolute_path("cache", v); }},
    {"devices", [](PluginConfig& c, const std::string& v) {
         c.devices = absolute_path("devices", v);
         try {
             step::expand_path(c.devices, "node", "host");
         } catch (const ParseError& e) {
             throw ParseError(std::string("plugstack.conf: devices=: ") + e.what());
         }
     }},
    {"islands", [](PluginConfig& c, const std::string& v) { c.islands = absolute_path("islands", v); }},
    {"nvml", [](PluginConfig& c, const std::string& v) { c.nvml_library = absolute_path("nvml", v); }},
    {"nvml_timeout", [](PluginConfig& c, const std::string& v) {
         char* end = nullptr;
         double t = std::strtod(v.c_str(), &end);
         if (v.empty() || !end || *end != '\0' || !(t > 0) || t > kMaxNvmlTimeoutS)
             throw ParseError("plugstack.conf: nvml_timeout=" + v +
                              ": expected seconds NVML may take, a number above 0 and at most 600 (e.g. nvml_timeout=10)");
         c.nvml_timeout_s = t;
     }},
    {"readers", [](PluginConfig& c, const std::string& v) { c.readers = absolute_path("readers", v); }},
    {"wrap", [](PluginConfig& c, const std::string& v) { c.wrap = absolute_path("wrap", v); }},
    {"nic_include", [](PluginConfig& c, const std::string& v) {
         c.nic_policy.include = parse_nic_list(v, "plugstack.conf: nic_include=");
     }},
    {"nic_exclude", [](PluginConfig& c, const std::string& v) {
         c.nic_policy.exclude = parse_nic_list(v, "plugstack.conf: nic_exclude=");
     }},
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

LiveSources live_sources(const PluginConfig& config) {
    LiveSources s;
    s.nvml_library = config.nvml_library;
    s.nvml_timeout_s = config.nvml_timeout_s;
    return s;
}

step::NodeSource node_source(const PluginConfig& config) {
    step::NodeSource s;
    s.topology = config.topology;
    s.cache_dir = config.cache_dir;
    s.live = live_sources(config);
    s.nic_policy = config.nic_policy;
    return s;
}

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
            throw ParseError("plugstack.conf: argument '" + arg + "' is not KEY=VALUE (expected " + key_list() + ")");
        std::string key = arg.substr(0, eq);
        std::string value = arg.substr(eq + 1);
        const Key* found = nullptr;
        for (const auto& k : kKeys)
            if (key == k.name) found = &k;
        if (!found)
            throw ParseError("plugstack.conf: unknown argument '" + key + "' in '" + arg + "' (expected " + key_list() + ")");
        for (const auto& s : seen)
            if (s == key) throw ParseError("plugstack.conf: argument '" + key + "' given twice");
        seen.push_back(key);
        found->apply(c, value);
    }
    return c;
}

}  // namespace gputopo::spank
