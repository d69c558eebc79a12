// gputopo.conf: Island=/BlockName= lines with Nodes=, TopologyConf= lines.
#include <string>
#include <vector>

#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/suggest.hpp"
#include "topo/fabric/island_sources.hpp"

namespace gputopo {

namespace {

std::string dir_of(const std::string& file) {
    size_t slash = file.rfind('/');
    return slash == std::string::npos ? std::string(".") : file.substr(0, slash == 0 ? 1 : slash);
}

const char* kExpected =
    "'Island=NAME Nodes=HOSTLIST', 'BlockName=NAME Nodes=HOSTLIST', 'BlockSizes=...' or 'TopologyConf=PATH'";

// "unknown key 'Isand' (did you mean Island?)".
std::string unknown_key(const std::string& key, const std::vector<std::string>& known) {
    const std::string near = nearest_word(key, known);
    return "unknown key '" + key + "'" + (near.empty() ? "" : " (did you mean " + near + "?)");
}

Hostlist nodes_of(const ConfLine& line) {
    const std::string* nodes = line.get("Nodes");
    if (!nodes || nodes->empty()) line.fail("no Nodes=", "Nodes=HOSTLIST on every island line");
    try {
        return Hostlist::parse(*nodes);
    } catch (const ParseError& e) {
        line.fail(e.what(), "a Slurm hostlist such as 'gpu[001-018]'");
    }
}

}  // namespace

bool valid_island_name(std::string_view name) {
    if (name.empty() || name.size() > 128) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '_' || c == ':' || c == '+' || c == '@' || c == '-';
        if (!ok) return false;
    }
    return true;
}

void parse_island_conf(std::string_view text, const std::string& file, IslandMap& map,
                       std::vector<std::string>* topology_confs) {
    for (const ConfLine& line : parse_conf_lines(text, file)) {
        const std::string& key = line.pairs.front().first;
        const std::string& value = line.pairs.front().second;
        if (iequals(key, "Island") || iequals(key, "BlockName")) {
            if (!valid_island_name(value))
                line.fail("bad island name '" + value + "'", "1-128 characters from A-Z a-z 0-9 . _ : + @ -");
            for (size_t i = 1; i < line.pairs.size(); ++i)
                if (!iequals(line.pairs[i].first, "Nodes") && !iequals(line.pairs[i].first, "PowerDomain"))
                    line.fail(unknown_key(line.pairs[i].first, {"Nodes", "PowerDomain"}),
                              "only Nodes= and PowerDomain= after " + key + "=");
            map.add(value, nodes_of(line), IslandSource::GputopoConf, line.origin());
            if (const std::string* power = line.get("PowerDomain")) {
                if (!valid_island_name(*power))
                    line.fail("bad power domain name '" + *power + "'", "1-128 characters from A-Z a-z 0-9 . _ : + @ -");
                const size_t id = *map.id_of(value);
                const std::string& known = map.island(id).power_domain;
                if (!known.empty() && known != *power)
                    line.fail("island '" + value + "' is already in power domain '" + known + "'",
                              "one PowerDomain= per island");
                map.set_power_domain(id, *power);
            }
        } else if (iequals(key, "BlockSizes")) {
            continue;
        } else if (iequals(key, "TopologyConf")) {
            if (line.pairs.size() != 1) line.fail("extra words", "TopologyConf=PATH alone on its line");
            if (value.empty()) line.fail("empty path", "TopologyConf=PATH");
            if (!topology_confs) line.fail("TopologyConf= is not allowed here", kExpected);
            topology_confs->push_back(value[0] == '/' ? value : dir_of(file) + "/" + value);
        } else {
            line.fail(unknown_key(key, {"Island", "BlockName", "BlockSizes", "TopologyConf"}), kExpected);
        }
    }
}

void read_island_conf(const std::string& path, IslandMap& map, std::vector<std::string>* topology_confs) {
    parse_island_conf(read_text_file(path, "gputopo.conf"), path, map, topology_confs);
}

IslandMap load_islands(const std::string& gputopo_conf) {
    IslandMap map;
    std::vector<std::string> topology;
    read_island_conf(gputopo_conf, map, &topology);
    for (const std::string& t : topology) read_slurm_topology(t, map);
    map.seal();
    return map;
}

}  // namespace gputopo
