#include "topo/sources/source_merge.hpp"

#include <algorithm>
#include <map>

#include "topo/sources/nic_policy.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo {

namespace {

// The NUMA node (with CPUs) holding most of `cpus`; -1 if none.
int numa_of_cpus(const Node& node, const CpuSet& cpus) {
    int best = -1, best_count = 0;
    for (const auto& n : node.numa_nodes) {
        int c = (n.cpus & cpus).count();
        if (c > best_count) {
            best = n.os_index;
            best_count = c;
        }
    }
    return best;
}

bool is_nvswitch_pci(const Node& node, const PciAddress& a) {
    for (const auto& o : node.pci)
        if (o.has_address && o.address == a) return o.vendor_id == 0x10de && (o.class_id >> 8) == 0x06 &&
                                                   o.class_id != 0x0604 && o.class_id != 0x0600;
    return false;
}

// Every NVML GPU's position in node.gpus, adding those hwloc missed, with
// NVML's name, UUID, memory, CPU locality (when hwloc had none) and fabric.
std::vector<int> merge_gpu_identities(Node& node, const NvmlSnapshot& nvml) {
    std::vector<int> pos(nvml.gpus.size(), -1);
    for (size_t k = 0; k < nvml.gpus.size(); ++k) {
        const NvmlGpuInfo& ng = nvml.gpus[k];
        for (size_t i = 0; i < node.gpus.size(); ++i)
            if (node.gpus[i].pci == ng.pci) pos[k] = static_cast<int>(i);
        if (pos[k] < 0) {
            Gpu g;
            g.vendor = Vendor::Nvidia;
            g.pci = ng.pci;
            node.gpus.push_back(g);
            pos[k] = static_cast<int>(node.gpus.size() - 1);
            node.warnings.push_back("GPU " + ng.pci.to_string() +
                                    " is seen by NVML but not by hwloc; its PCI locality is unknown");
        }
        Gpu& g = node.gpus[static_cast<size_t>(pos[k])];
        if (!ng.name.empty()) g.model = ng.name;
        if (!ng.uuid.empty()) g.uuid = ng.uuid;
        g.mig_uuids = ng.mig_uuids;
        if (ng.memory_bytes) g.memory_bytes = ng.memory_bytes;
        if (g.local_cpus.empty() && !ng.cpus.empty()) g.local_cpus = ng.cpus;
        if (g.numa < 0 && !ng.cpus.empty()) g.numa = numa_of_cpus(node, ng.cpus);
        std::string osname = "nvml" + std::to_string(ng.nvml_index);
        if (std::find(g.os_names.begin(), g.os_names.end(), osname) == g.os_names.end()) g.os_names.push_back(osname);
        g.fabric_cluster_uuid = ng.fabric_cluster_uuid;
        g.fabric_clique = ng.fabric_cluster_uuid.empty() ? -1 : ng.fabric_clique;
    }
    return pos;
}

// Active NVLinks as NVML sees them now, by NVML GPU index.
struct ActiveLinks {
    bool any_link_info = false;
    std::map<std::pair<int, int>, int> direct;  // (a, b) -> active links to b seen from a
    std::vector<int> to_switch;                 // active links to an NVSwitch
};

ActiveLinks count_active_links(const Node& node, const NvmlSnapshot& nvml) {
    ActiveLinks a;
    a.to_switch.assign(nvml.gpus.size(), 0);
    for (size_t k = 0; k < nvml.gpus.size(); ++k) {
        for (const auto& l : nvml.gpus[k].links) {
            a.any_link_info = true;
            if (!l.active) continue;
            int peer = -1;
            if (l.remote_pci_known)
                for (size_t j = 0; j < nvml.gpus.size(); ++j)
                    if (j != k && nvml.gpus[j].pci == l.remote_pci) peer = static_cast<int>(j);
            if (l.remote == NvlinkRemote::Gpu || (l.remote == NvlinkRemote::Unknown && peer >= 0)) {
                if (peer >= 0) a.direct[{static_cast<int>(k), peer}]++;
            } else if (l.remote == NvlinkRemote::Switch ||
                       (l.remote == NvlinkRemote::Unknown && l.remote_pci_known && is_nvswitch_pci(node, l.remote_pci))) {
                a.to_switch[k]++;
            }
        }
    }
    return a;
}

// Removes the NVLinks between GPUs NVML knows from node.links (NVML's view
// replaces them) and returns them by (lower, higher) GPU position.
std::map<std::pair<int, int>, GpuLink> take_nvml_gpu_links(Node& node, const std::vector<int>& pos) {
    std::vector<bool> in_nvml(node.gpus.size(), false);
    for (int p : pos) in_nvml[static_cast<size_t>(p)] = true;
    std::map<std::pair<int, int>, GpuLink> old;
    std::vector<GpuLink> kept;
    for (const auto& l : node.links) {
        bool both = l.a >= 0 && l.b >= 0 && static_cast<size_t>(l.a) < in_nvml.size() &&
                    static_cast<size_t>(l.b) < in_nvml.size() && in_nvml[static_cast<size_t>(l.a)] &&
                    in_nvml[static_cast<size_t>(l.b)];
        if (both && l.kind == LinkKind::NVLink)
            old[{std::min(l.a, l.b), std::max(l.a, l.b)}] = l;
        else
            kept.push_back(l);
    }
    node.links = kept;
    return old;
}

// One NVLink per GPU pair from NVML's counts; the bandwidth per link comes
// from the link the source reported before, when it had one.
void add_nvml_links(Node& node, const std::vector<int>& pos, const ActiveLinks& active,
                    const std::map<std::pair<int, int>, GpuLink>& old) {
    auto add = [&](int a, int b, int count, bool via_switch) {
        if (count <= 0) return;
        GpuLink l;
        l.a = std::min(a, b);
        l.b = std::max(a, b);
        l.kind = LinkKind::NVLink;
        l.count = count;
        l.via_switch = via_switch;
        auto it = old.find({l.a, l.b});
        if (it != old.end() && it->second.count > 0 && it->second.bandwidth_gbps > 0)
            l.bandwidth_gbps = it->second.bandwidth_gbps / it->second.count * count;
        node.links.push_back(l);
    };
    for (size_t a = 0; a < pos.size(); ++a)
        for (size_t b = a + 1; b < pos.size(); ++b) {
            auto ab = active.direct.find({static_cast<int>(a), static_cast<int>(b)});
            auto ba = active.direct.find({static_cast<int>(b), static_cast<int>(a)});
            int n_ab = ab == active.direct.end() ? 0 : ab->second;
            int n_ba = ba == active.direct.end() ? 0 : ba->second;
            // Both ends report the same links when healthy; a link down at
            // either end does not carry traffic.
            int direct_links = (n_ab && n_ba) ? std::min(n_ab, n_ba) : std::max(n_ab, n_ba);
            int switched = std::min(active.to_switch[a], active.to_switch[b]);
            if (switched > 0)
                add(pos[a], pos[b], switched + direct_links, true);
            else
                add(pos[a], pos[b], direct_links, false);
        }
}

}  // namespace

void merge_nvml(Node& node, const NvmlSnapshot& nvml) {
    if (!nvml.available) {
        bool nvidia = std::any_of(node.gpus.begin(), node.gpus.end(),
                                  [](const Gpu& g) { return g.vendor == Vendor::Nvidia; });
        if (nvidia || nvml.timed_out)  // a hung NVML is worth a line on any node
            node.warnings.push_back("NVML not available (" + nvml.reason +
                                    "): NVLink state and GPU health unknown, using what hwloc reports");
        return;
    }
    for (const auto& w : nvml.warnings) node.warnings.push_back("NVML: " + w);
    std::vector<int> pos = merge_gpu_identities(node, nvml);
    ActiveLinks active = count_active_links(node, nvml);
    if (active.any_link_info) add_nvml_links(node, pos, active, take_nvml_gpu_links(node, pos));
    node.finalize();
}

void merge_nic_state(Node& node, const std::vector<NicState>& nics) {
    for (const auto& ns : nics) {
        Nic* nic = nullptr;
        for (auto& n : node.nics)
            if (n.name == ns.name) nic = &n;
        if (!nic && ns.pci_known) {
            for (auto& n : node.nics)
                if (n.pci == ns.pci && (!n.rdma || n.name.empty())) {
                    nic = &n;
                    break;
                }
            if (nic) {
                // hwloc saw the PCI function but not its RDMA device: name it as NCCL does.
                if (!nic->name.empty() &&
                    std::find(nic->netdevs.begin(), nic->netdevs.end(), nic->name) == nic->netdevs.end())
                    nic->netdevs.push_back(nic->name);
                nic->name = ns.name;
            }
        }
        if (!nic) {
            Nic n;
            n.name = ns.name;
            if (ns.pci_known) {
                n.pci = ns.pci;
                for (size_t i = 0; i < node.pci.size(); ++i)
                    if (node.pci[i].has_address && node.pci[i].address == ns.pci) n.pci_object = static_cast<int>(i);
            }
            node.nics.push_back(n);
            nic = &node.nics.back();
            if (nic->pci_object < 0)
                node.warnings.push_back("RDMA device " + ns.name + " is not in hwloc's PCI tree; its locality is unknown");
        }
        nic->rdma = true;
        for (const auto& nd : ns.netdevs)
            if (std::find(nic->netdevs.begin(), nic->netdevs.end(), nd) == nic->netdevs.end()) nic->netdevs.push_back(nd);
        if (!ns.ports.empty()) {
            nic->ports.clear();
            double speed = 0;
            bool ethernet_only = true, gid_tables_read = false, any_roce_gid = false;
            for (const auto& ps : ns.ports) {
                NicPort p;
                p.number = ps.number;
                p.state = ps.state;
                p.link_layer = ps.link_layer;
                p.rate_gbps = ps.rate_gbps;
                p.roce_v2_gid_index = ps.roce_v2_gid_index;
                nic->ports.push_back(p);
                if (ps.state == "ACTIVE") speed = std::max(speed, ps.rate_gbps);
                if (ps.link_layer != "Ethernet") ethernet_only = false;
                if (ps.gid_table_read) gid_tables_read = true;
                if (ps.state == "ACTIVE" && ps.roce_v2_gid_index >= 0) any_roce_gid = true;
            }
            if (speed > 0) nic->speed_gbps = speed;
            bool any_active = std::any_of(ns.ports.begin(), ns.ports.end(),
                                          [](const PortState& p) { return p.state == "ACTIVE"; });
            if (ethernet_only && any_active && gid_tables_read && !any_roce_gid) {
                nic->rdma = false;
                node.warnings.push_back(ns.name + ": Ethernet port(s) with no RoCE v2 GID (no IP address): "
                                                  "plain Ethernet, not used for GPU traffic");
            }
        }
    }
    node.finalize();
}

std::vector<std::string> mark_storage_nics(Node& node, const std::vector<std::string>& names) {
    std::vector<std::string> unmatched;
    for (const auto& name : names) {
        bool found = false;
        for (auto& n : node.nics) {
            if (nic_matches(n, name)) {
                n.storage = true;
                found = true;
            }
        }
        if (!found) unmatched.push_back(name);
    }
    return unmatched;
}

bool apply_live_sources(Node& node, const LiveSources& sources) {
    bool complete = true;
    try {
        if (sources.nvml) {
            const NvmlSnapshot nvml = read_nvml(sources.nvml_library, sources.nvml_timeout_s);
            const bool nvidia = std::any_of(node.gpus.begin(), node.gpus.end(),
                                            [](const Gpu& g) { return g.vendor == Vendor::Nvidia; });
            complete = nvml.available || (!nvml.timed_out && !nvidia);
            merge_nvml(node, nvml);
        }
        if (sources.nic_state) merge_nic_state(node, read_nic_state(sources.sysfs_root));
        for (const auto& n : mark_storage_nics(node, sources.storage_nics))
            node.warnings.push_back("storage NIC '" + n + "' (site configuration) is not on this node");
    } catch (const std::exception& e) {
        node.warnings.push_back(std::string("live sources: ") + e.what());
        return false;
    }
    return complete;
}

LiveSources live_sources_from_environment() {
    LiveSources s;
    s.nvml_library = nvml_library_from_environment();
    s.nvml_timeout_s = nvml_timeout_from_environment();
    return s;
}

Node discover_live(const LiveSources& sources, std::string* problem) {
    Node node = discover_this_machine();
    const size_t before = node.warnings.size();
    if (!apply_live_sources(node, sources) && problem)
        for (size_t i = before; i < node.warnings.size(); ++i) *problem += (problem->empty() ? "" : "; ") + node.warnings[i];
    return node;
}

}  // namespace gputopo
