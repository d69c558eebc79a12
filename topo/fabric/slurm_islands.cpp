#include "topo/fabric/slurm_islands.hpp"

#include <sys/stat.h>

#include <vector>

#include "topo/core/env_names.hpp"
#include "topo/core/conf_lines.hpp"
#include "topo/core/strings.hpp"
#include "topo/fabric/island_sources.hpp"

#ifndef GPUTOPO_SLURM_CONF_DEFAULT
#define GPUTOPO_SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
#endif

namespace gputopo {

namespace {

std::string dir_of(const std::string& file) {
    size_t slash = file.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : file.substr(0, slash);
}

bool regular_file(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool looks_like_yaml(std::string_view text) {
    for (std::string_view line : split_field_views(text, '\n')) {
        const size_t a = line.find_first_not_of(" \t\r");
        if (a != std::string_view::npos && line[a] != '#') return line[a] == '-';
    }
    return false;
}

}  // namespace

void read_slurm_topology_any(const std::string& path, IslandMap& map) {
    const std::string text = read_text_file(path, "Slurm topology file");
    if (looks_like_yaml(text))
        parse_slurm_topology_yaml(text, path, map);
    else
        parse_slurm_topology(text, path, map);
}

std::string slurm_config_dir(const std::function<std::optional<std::string>(const std::string&)>& getenv) {
    if (auto v = getenv(env::kSlurmConf); v && !v->empty()) return dir_of(*v);
    return dir_of(GPUTOPO_SLURM_CONF_DEFAULT);
}

std::string slurm_topology_file(const std::string& dir) {
    if (dir.empty()) return "";
    for (const char* name : {"/topology.yaml", "/topology.conf"})
        if (regular_file(dir + name)) return dir + name;
    return "";
}

StepIslandMap load_step_islands(const std::string& islands_conf, const std::string& slurm_dir,
                                const std::string& slurm_file) {
    StepIslandMap out;
    std::vector<std::string> named;
    if (!islands_conf.empty()) {
        read_island_conf(islands_conf, out.map, &named);
        out.sources = "gputopo.conf " + islands_conf;
    }
    // TopologyConf= in gputopo.conf replaces Slurm's own file.
    std::string slurm = !slurm_file.empty() ? slurm_file : named.empty() ? slurm_topology_file(slurm_dir) : "";
    for (const std::string& t : named) read_slurm_topology(t, out.map);
    if (!named.empty()) out.sources += " (+ its TopologyConf=)";
    if (!slurm.empty()) {
        read_slurm_topology_any(slurm, out.map);
        out.sources += (out.sources.empty() ? "Slurm's " : " + Slurm's ") + slurm;
    }
    if (out.sources.empty()) out.sources = "none";
    out.map.seal();
    return out;
}

}  // namespace gputopo
