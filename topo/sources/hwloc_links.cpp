// GPU-GPU links from hwloc's distance matrices.
//
// NVLinkBandwidth (hwloc's NVML backend): MB/s per direction between GPU OS
// devices (nvmlN), and between GPUs and NVSwitches (PCI devices) or CPUs
// (Packages, POWER8/9 NVLink). The diagonal is a GPU's internal bandwidth.
//  - GPU-GPU value v: a direct link; count = v / per-link bandwidth (P100's
//    NVLink1 20 GB/s, NVLink2-4 25 GB/s, NVLink5 50 GB/s per direction), so
//    XE8640's 150000 is NV6 and Minsky's 40000 is NV2, as nvidia-smi shows.
//  - GPU-NVSwitch values: every two switch-attached GPUs reach each other
//    through the switches: one link per pair, via_switch, count = the
//    smaller of the two GPUs' total switch links (DGX-2: 6 x 25000 -> NV6
//    for every pair, as nvidia-smi shows). hwloc records no switch-switch
//    trunks (DGX-2's two baseboards are joined by them), so all NVSwitches of
//    a node are taken as one fabric, which holds for every NVSwitch system
//    built so far.
//  - GPU-CPU NVLink (Minsky) is not a GPU-GPU link and is left out.
// XGMIBandwidth / XGMIHops (hwloc's RSMI backend): a pair one hop apart (or
// with a bandwidth and no hops matrix) has a direct xGMI link. hwloc gives no
// per-link bandwidth for xGMI, so count = 1 and bandwidth_gbps carries the
// measured figure (MB/s / 1000).
// bandwidth_gbps is GB/s per direction, summed over the pair's links.
#include "topo/sources/hwloc_links.hpp"

#include <hwloc/distances.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace gputopo::hwloc_detail {

double nvlink_mbps_per_link(const std::string& model) {
    auto has = [&](const char* s) { return model.find(s) != std::string::npos; };
    if (has("P100")) return 20000;                                   // NVLink 1
    if (has("B100") || has("B200") || has("B300")) return 50000;     // NVLink 5 (incl. GB200/GB300)
    return 25000;                                                    // NVLink 2, 3, 4
}

namespace {

struct Matrix {
    std::vector<hwloc_obj_t> objs;
    std::vector<uint64_t> values;
    uint64_t at(size_t i, size_t j) const { return values[i * objs.size() + j]; }
    // Both directions; hwloc matrices may be asymmetric.
    uint64_t pair(size_t i, size_t j) const { return std::max(at(i, j), at(j, i)); }
};

std::vector<Matrix> matrices(hwloc_topology_t topo, const char* name) {
    std::vector<Matrix> out;
    unsigned nr = 0;
    if (hwloc_distances_get_by_name(topo, name, &nr, nullptr, 0) < 0 || nr == 0) return out;
    std::vector<hwloc_distances_s*> d(nr, nullptr);
    if (hwloc_distances_get_by_name(topo, name, &nr, d.data(), 0) < 0) return out;
    for (unsigned k = 0; k < nr && k < d.size(); ++k) {
        if (!d[k]) continue;
        Matrix m;
        m.objs.assign(d[k]->objs, d[k]->objs + d[k]->nbobjs);
        m.values.assign(d[k]->values, d[k]->values + static_cast<size_t>(d[k]->nbobjs) * d[k]->nbobjs);
        out.push_back(std::move(m));
        hwloc_distances_release(topo, d[k]);
    }
    return out;
}

int gpu_of(const std::unordered_map<hwloc_obj_t, int>& gpu_of_obj, hwloc_obj_t o) {
    if (!o) return -1;
    auto it = gpu_of_obj.find(o);
    return it == gpu_of_obj.end() ? -1 : it->second;
}

int link_count(double mbps, double per_link) {
    if (mbps <= 0 || per_link <= 0) return 0;
    return std::max(1, static_cast<int>(std::lround(mbps / per_link)));
}

void add_nvlinks(hwloc_topology_t topo, const std::unordered_map<hwloc_obj_t, int>& gpu_of_obj,
                 const std::vector<std::string>& gpu_model, Node& node) {
    auto per_link = [&](int g) {
        return nvlink_mbps_per_link(g >= 0 && static_cast<size_t>(g) < gpu_model.size() ? gpu_model[static_cast<size_t>(g)]
                                                                                          : std::string());
    };
    for (const Matrix& m : matrices(topo, "NVLinkBandwidth")) {
        size_t n = m.objs.size();
        std::vector<int> gpu(n);
        std::vector<bool> nvswitch(n, false);
        for (size_t i = 0; i < n; ++i) {
            gpu[i] = gpu_of(gpu_of_obj, m.objs[i]);
            // A non-GPU PCI device on the NVLink fabric is an NVSwitch.
            nvswitch[i] = gpu[i] < 0 && m.objs[i] && m.objs[i]->type == HWLOC_OBJ_PCI_DEVICE;
        }
        std::map<int, double> switch_mbps;  // GPU position -> bandwidth to all switches
        for (size_t i = 0; i < n; ++i) {
            if (gpu[i] < 0) continue;
            for (size_t j = 0; j < n; ++j) {
                if (i == j) continue;
                uint64_t v = m.pair(i, j);
                if (v == 0) continue;
                if (nvswitch[j]) {
                    switch_mbps[gpu[i]] += static_cast<double>(v);
                } else if (gpu[j] >= 0 && j > i && gpu[j] != gpu[i]) {
                    GpuLink l;
                    l.a = gpu[i];
                    l.b = gpu[j];
                    l.kind = LinkKind::NVLink;
                    l.count = link_count(static_cast<double>(v), per_link(gpu[i]));
                    l.bandwidth_gbps = static_cast<double>(v) / 1000.0;
                    node.links.push_back(l);
                }
            }
        }
        for (auto a = switch_mbps.begin(); a != switch_mbps.end(); ++a) {
            for (auto b = std::next(a); b != switch_mbps.end(); ++b) {
                GpuLink l;
                l.a = a->first;
                l.b = b->first;
                l.kind = LinkKind::NVLink;
                l.via_switch = true;
                l.count = std::min(link_count(a->second, per_link(a->first)), link_count(b->second, per_link(b->first)));
                l.bandwidth_gbps = std::min(a->second, b->second) / 1000.0;
                node.links.push_back(l);
            }
        }
    }
}

void add_xgmi(hwloc_topology_t topo, const std::unordered_map<hwloc_obj_t, int>& gpu_of_obj, Node& node) {
    std::map<std::pair<int, int>, uint64_t> hops, bandwidth;
    auto collect = [&](const char* name, std::map<std::pair<int, int>, uint64_t>& into) {
        for (const Matrix& m : matrices(topo, name)) {
            size_t n = m.objs.size();
            for (size_t i = 0; i < n; ++i)
                for (size_t j = i + 1; j < n; ++j) {
                    int a = gpu_of(gpu_of_obj, m.objs[i]), b = gpu_of(gpu_of_obj, m.objs[j]);
                    if (a < 0 || b < 0 || a == b) continue;
                    into[{std::min(a, b), std::max(a, b)}] = m.pair(i, j);
                }
        }
    };
    collect("XGMIHops", hops);
    collect("XGMIBandwidth", bandwidth);
    std::map<std::pair<int, int>, GpuLink> links;
    for (const auto& [pair, h] : hops) {
        if (h != 1) continue;
        GpuLink l;
        l.a = pair.first;
        l.b = pair.second;
        l.kind = LinkKind::XGMI;
        l.count = 1;
        links[pair] = l;
    }
    for (const auto& [pair, bw] : bandwidth) {
        if (bw == 0) continue;
        auto it = links.find(pair);
        if (it == links.end()) {
            if (!hops.empty()) continue;  // known to be more than one hop apart
            GpuLink l;
            l.a = pair.first;
            l.b = pair.second;
            l.kind = LinkKind::XGMI;
            l.count = 1;
            it = links.emplace(pair, l).first;
        }
        it->second.bandwidth_gbps = static_cast<double>(bw) / 1000.0;
    }
    for (auto& kv : links) node.links.push_back(kv.second);
}

}  // namespace

void add_links_from_distances(hwloc_topology_t topology, const std::unordered_map<hwloc_obj_t, int>& gpu_of_obj,
                              const std::vector<std::string>& gpu_model, Node& node) {
    add_nvlinks(topology, gpu_of_obj, gpu_model, node);
    add_xgmi(topology, gpu_of_obj, node);
}

}  // namespace gputopo::hwloc_detail
