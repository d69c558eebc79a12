#include "topo/mnnvl.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace gputopo {

namespace {

bool channel_name(const char* name) {
    if (std::strncmp(name, "channel", 7) != 0 || !name[7]) return false;
    for (const char* p = name + 7; *p; ++p)
        if (*p < '0' || *p > '9') return false;
    return true;
}

bool disables(const std::optional<std::string>& v) { return v && *v == "0"; }

}  // namespace

ImexChannels probe_imex_channels(const std::string& dir) {
    ImexChannels out;
    DIR* d = opendir(dir.c_str());
    if (!d) return out;
    out.dir_present = true;
    int looked = 0;
    while (dirent* e = readdir(d)) {
        if (!channel_name(e->d_name)) continue;
        if (++looked > 4096) break;
        ++out.present;
        if (access((dir + "/" + e->d_name).c_str(), R_OK | W_OK) == 0) ++out.openable;
    }
    closedir(d);
    return out;
}

std::vector<std::string> fabric_cliques(const std::vector<FabricGpu>& gpus) {
    std::set<std::string> s;
    for (const auto& g : gpus)
        if (g.state == 3 && g.status == 0 && !g.cluster_uuid.empty())
            s.insert(g.cluster_uuid + "/" + std::to_string(g.clique));
    return {s.begin(), s.end()};
}

std::vector<std::string> fabric_health_problems(long mask) {
    std::vector<std::string> out;
    if (mask <= 0) return out;
    const std::pair<int, const char*> fields[] = {{0, "degraded bandwidth"},
                                                  {2, "route recovery in progress"},
                                                  {4, "route unhealthy"},
                                                  {6, "access timeout recovery"}};
    for (const auto& [shift, what] : fields)
        if (((mask >> shift) & 0x3) == 1) out.push_back(what);
    return out;
}

namespace {

std::string clique_list(const std::vector<std::pair<int, unsigned>>& c) {
    std::string s;
    for (const auto& [type, id] : c) s += (s.empty() ? "" : ",") + std::to_string(type) + ":" + std::to_string(id);
    return s.empty() ? "none" : s;
}

// Fabric info v4: the completed GPUs that list other (type, id) cliques than
// the first such GPU, as one line ("" when they agree or v4 was not read).
std::string v4_clique_difference(const std::vector<FabricGpu>& gpus) {
    const FabricGpu* first = nullptr;
    std::string differ;
    for (const auto& g : gpus) {
        if (g.state != 3 || g.status != 0 || g.cliques.empty()) continue;
        if (!first) first = &g;
        else if (g.cliques != first->cliques)
            differ += (differ.empty() ? "" : ", ") + ("GPU " + g.pci + " " + clique_list(g.cliques));
    }
    if (differ.empty()) return "";
    return "this node's GPUs list different NVLink cliques (fabric info v4, type:id): GPU " + first->pci + " " +
           clique_list(first->cliques) + ", " + differ;
}

}  // namespace

std::vector<std::string> mnnvl_problems(const MnnvlInputs& in) {
    std::vector<std::string> out;
    for (const auto& g : in.gpus) {
        if (g.state <= 0) continue;  // not a fabric GPU (or NVML did not say)
        const std::string gpu = "GPU " + g.pci + ": ";
        if (g.state != 3) {
            out.push_back(gpu + "NVLink fabric registration not complete (state " + std::to_string(g.state) +
                          "): NCCL will not use multi-node NVLink from it (traffic over the NICs); check "
                          "nvidia-imex and the NVLink switch trays' fabric manager (nvidia-smi -q: Fabric)");
            continue;
        }
        if (g.status != 0) {
            out.push_back(gpu + "NVLink fabric registration failed (NVML status " + std::to_string(g.status) +
                          "): NCCL will not use multi-node NVLink from it; drain the node and check the fabric "
                          "manager's log");
            continue;
        }
        for (const std::string& p : fabric_health_problems(g.health_mask))
            out.push_back(gpu + "fabric health: " + p + ": NCCL keeps multi-node NVLink but runs slower or stalls; "
                          "drain the node until the NVLink switch trays are healthy");
        if (g.health_summary == 2 || g.health_summary == 3)
            out.push_back(gpu + "fabric health summary " +
                          std::string(g.health_summary == 2 ? "unhealthy" : "limited capacity") +
                          ": NCCL keeps multi-node NVLink at reduced bandwidth; drain the node");
    }
    const std::vector<std::string> cliques = fabric_cliques(in.gpus);
    if (const std::string d = v4_clique_difference(in.gpus); cliques.size() == 1 && !d.empty())
        out.push_back(d + ": NCCL builds its NVLink domains from these cliques and crosses between them over the "
                      "NICs; check the rack's fabric partition");
    if (cliques.size() > 1)
        out.push_back("this node's GPUs are in " + std::to_string(cliques.size()) +
                      " NVLink cliques: NCCL builds one MNNVL domain per clique and crosses between them over the "
                      "NICs; check the rack's fabric partition");
    for (const std::string& p : in.peers)
        if (!cliques.empty() && std::find(cliques.begin(), cliques.end(), p) == cliques.end())
            out.push_back("clique " + cliques.front() + " differs from another node's " + p +
                          ": NCCL treats the two as separate NVLink domains (traffic over the NICs); place the "
                          "job in one rack (--segment) or check the fabric partition");
    if (!in.imex.dir_present || in.imex.present == 0)
        out.push_back("no IMEX channel in " + in.imex_dir +
                      ": NCCL cannot import peer memory across trays and falls back to the network; configure "
                      "Slurm's switch/nvidia_imex (SwitchType) or a per-job IMEX daemon so the job gets "
                      "channel0");
    else if (in.imex.openable == 0)
        out.push_back("the IMEX channel(s) in " + in.imex_dir +
                      " cannot be opened here (devices cgroup or permissions): NCCL falls back to the network; "
                      "allow the job's channel in its devices cgroup");
    if (disables(in.nccl_cumem_enable))
        out.push_back("NCCL_CUMEM_ENABLE=0 in the environment: NCCL turns cuMem off and with it multi-node NVLink "
                      "(traffic over the NICs); unset it");
    if (disables(in.nccl_mnnvl_enable))
        out.push_back("NCCL_MNNVL_ENABLE=0 in the environment: NCCL does not use multi-node NVLink (traffic over "
                      "the NICs); unset it");
    return out;
}

}  // namespace gputopo
