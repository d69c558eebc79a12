// hwloc topology -> node model: CPUs, NUMA nodes, the PCI tree, GPUs, NICs.
// GPU-GPU links come from topo/sources/hwloc_links.cpp.
#include "topo/sources/hwloc_convert.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "topo/sources/hwloc_links.hpp"

namespace gputopo::hwloc_detail {

namespace {

CpuSet to_cpuset(hwloc_const_bitmap_t bm) {
    CpuSet s;
    if (!bm || hwloc_bitmap_weight(bm) < 0) return s;  // empty or infinite
    int i;
    hwloc_bitmap_foreach_begin(i, bm) { s.set(i); }
    hwloc_bitmap_foreach_end();
    return s;
}

std::string info(hwloc_obj_t obj, const char* name) {
    const char* v = hwloc_obj_get_info_by_name(obj, name);
    return v ? std::string(v) : std::string();
}

int os_index_or_logical(hwloc_obj_t obj) {
    if (obj->os_index != HWLOC_UNKNOWN_INDEX) return static_cast<int>(obj->os_index);
    return static_cast<int>(obj->logical_index);
}

// "rsmi12" -> ("rsmi", 12); "opencl0d3" -> ("opencl0d", 3); "card" -> ("card", -1).
std::pair<std::string, long> split_name(const std::string& name) {
    size_t end = name.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
    long number = -1;
    if (end < name.size()) number = std::strtol(name.c_str() + end, nullptr, 10);
    return {name.substr(0, end), number};
}

std::vector<hwloc_obj_t> osdevs_of(hwloc_obj_t pci) {
    std::vector<hwloc_obj_t> out;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE) out.push_back(c);
    return out;
}

bool is_gpu_osdev(hwloc_obj_t os) {
    return os->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU || os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
}

// A compute device a runtime enumerates (CUDA, OpenCL, Level Zero, NVML,
// RSMI), as opposed to the DRM nodes every display chip has.
bool is_compute_osdev(hwloc_obj_t os) {
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC) return true;
    if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU || !os->name) return false;
    std::string family = split_name(os->name).first;
    return family == "nvml" || family == "rsmi";
}

std::string port_state_name(const std::string& v) {
    // hwloc copies ibv_port_state numbers from sysfs.
    if (v == "1") return "DOWN";
    if (v == "2") return "INIT";
    if (v == "3") return "ARMED";
    if (v == "4") return "ACTIVE";
    if (v == "5") return "ACTIVE_DEFER";
    std::string s = v;
    for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

std::vector<NicPort> ports_of(hwloc_obj_t os) {
    std::vector<NicPort> ports;
    for (int n = 1; n <= 16; ++n) {
        std::string p = "Port" + std::to_string(n);
        std::string state = info(os, (p + "State").c_str());
        std::string layer = info(os, (p + "LinkLayer").c_str());
        if (state.empty() && layer.empty()) continue;
        NicPort port;
        port.number = n;
        port.state = port_state_name(state);
        port.link_layer = layer;
        ports.push_back(port);
    }
    return ports;
}

// The NUMA node (with CPUs) nearest to an object: among the NUMA nodes in
// `nodeset` (all when empty), the one sharing most CPUs with `cpus`; ties and
// no overlap go to the lowest OS index. -1 when the node has no NUMA node with CPUs.
int nearest_numa(const Node& node, const CpuSet& cpus, const std::vector<int>& nodeset) {
    int best = -1, best_overlap = -1;
    for (const auto& n : node.numa_nodes) {
        if (n.cpus.empty()) continue;
        if (!nodeset.empty() && std::find(nodeset.begin(), nodeset.end(), n.os_index) == nodeset.end()) continue;
        int overlap = (n.cpus & cpus).count();
        if (overlap > best_overlap) {
            best = n.os_index;
            best_overlap = overlap;
        }
    }
    if (best < 0 && !nodeset.empty()) return nearest_numa(node, cpus, {});
    return best;
}

class Converter {
public:
    Converter(hwloc_topology_t topo, Node& node) : topo_(topo), node_(node) {}

    void run() {
        hwloc_obj_t root = hwloc_get_root_obj(topo_);
        node_.hostname = info(root, "HostName");
        node_.cpus = to_cpuset(root->cpuset);
        read_packages();
        read_numa_nodes();
        read_cores();
        walk_normal(root);
        read_gpus_and_nics();
        add_links_from_distances(topo_, gpu_of_obj_, gpu_model_, node_);
    }

private:
    void read_packages() {
        int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
        for (int i = 0; i < n; ++i) {
            hwloc_obj_t o = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(i));
            Package p;
            p.os_index = os_index_or_logical(o);
            p.cpus = to_cpuset(o->cpuset);
            node_.packages.push_back(p);
        }
    }

    void read_numa_nodes() {
        int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
        for (int i = 0; i < n; ++i) {
            hwloc_obj_t o = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
            NumaNode nn;
            nn.os_index = os_index_or_logical(o);
            // hwloc 2.x gives a memory-only node (GPU memory on POWER9, CXL)
            // the CPUs of the object it hangs from; those CPUs are not its own.
            bool memory_only = o->subtype && (!std::strcmp(o->subtype, "GPUMemory"));
            if (!memory_only) nn.cpus = to_cpuset(o->cpuset);
            nn.memory_bytes = o->attr->numanode.local_memory;
            // hwloc names the GPU whose memory it is (POWER9 + V100, kept
            // with HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1).
            PciAddress owner;
            if (memory_only && PciAddress::try_parse(info(o, "PCIBusID"), owner))
                gpu_memory_[owner.to_string()] = nn.memory_bytes;
            node_.numa_nodes.push_back(nn);
        }
        std::sort(node_.numa_nodes.begin(), node_.numa_nodes.end(),
                  [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });
    }

    std::vector<int> nodeset_of(hwloc_obj_t o) const {
        std::vector<int> out;
        if (!o->nodeset || hwloc_bitmap_weight(o->nodeset) < 0) return out;
        int i;
        hwloc_bitmap_foreach_begin(i, o->nodeset) { out.push_back(i); }
        hwloc_bitmap_foreach_end();
        return out;
    }

    int package_of(hwloc_obj_t o) const {
        hwloc_obj_t p = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, o);
        return p ? os_index_or_logical(p) : -1;
    }

    void read_cores() {
        int n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
        hwloc_obj_type_t type = HWLOC_OBJ_CORE;
        if (n <= 0) {  // no core level: every PU is its own core
            type = HWLOC_OBJ_PU;
            n = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
        }
        for (int i = 0; i < n; ++i) {
            hwloc_obj_t o = hwloc_get_obj_by_type(topo_, type, static_cast<unsigned>(i));
            Core c;
            c.pus = to_cpuset(o->cpuset);
            if (c.pus.empty()) continue;
            c.package = package_of(o);
            c.numa = nearest_numa(node_, c.pus, nodeset_of(o));
            node_.cores.push_back(c);
        }
    }

    // Normal objects carry the I/O trees (host bridges) as I/O children.
    void walk_normal(hwloc_obj_t o) {
        for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) walk_io(c, -1);
        for (hwloc_obj_t c = o->first_child; c; c = c->next_sibling) walk_normal(c);
    }

    void walk_io(hwloc_obj_t o, int parent) {
        int me = parent;
        if (o->type == HWLOC_OBJ_BRIDGE || o->type == HWLOC_OBJ_PCI_DEVICE) {
            PciObject p;
            p.parent = parent;
            bool host = o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
            if (host) {
                p.kind = PciKind::HostBridge;
            } else {
                p.kind = o->type == HWLOC_OBJ_BRIDGE ? PciKind::Bridge : PciKind::Device;
                const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a = o->type == HWLOC_OBJ_BRIDGE ? o->attr->bridge.upstream.pci : o->attr->pcidev;
                p.has_address = true;
                p.address.domain = a.domain;
                p.address.bus = a.bus;
                p.address.device = a.dev;
                p.address.function = a.func;
                p.class_id = a.class_id;
                p.vendor_id = a.vendor_id;
                p.device_id = a.device_id;
            }
            // Locality: the normal object the PCI tree hangs from.
            if (hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, o)) {
                p.local_cpus = to_cpuset(anc->cpuset);
                p.numa = nearest_numa(node_, p.local_cpus, nodeset_of(anc));
            }
            me = static_cast<int>(node_.pci.size());
            node_.pci.push_back(p);
            pci_objs_.push_back(o);
        }
        for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) walk_io(c, me);
    }

    static std::string pick_model(hwloc_obj_t pci, const std::vector<hwloc_obj_t>& osdevs) {
        // NVML/CUDA names match nvidia-smi; the pci.ids name comes next (RSMI
        // names are sometimes truncated); then any runtime's name.
        auto by_backend = [&](const char* backend) -> std::string {
            for (hwloc_obj_t os : osdevs) {
                if (info(os, "Backend") != backend) continue;
                std::string m = info(os, "GPUModel");
                if (!m.empty()) return m;
            }
            return {};
        };
        for (const char* b : {"NVML", "CUDA"})
            if (auto m = by_backend(b); !m.empty()) return m;
        if (auto m = info(pci, "PCIDevice"); !m.empty()) return m;
        for (const char* b : {"RSMI", "LevelZero", "OpenCL"})
            if (auto m = by_backend(b); !m.empty()) return m;
        for (hwloc_obj_t os : osdevs)
            if (auto m = info(os, "GPUModel"); !m.empty()) return m;
        return {};
    }

    static uint64_t memory_of(const std::vector<hwloc_obj_t>& osdevs) {
        for (hwloc_obj_t os : osdevs)
            for (const char* key : {"CUDAGlobalMemorySize", "RSMIVRAMSize", "OpenCLGlobalMemorySize"}) {
                std::string v = info(os, key);  // KiB
                if (!v.empty()) return std::strtoull(v.c_str(), nullptr, 10) * 1024ULL;
            }
        return 0;
    }

    static std::string uuid_of(const std::vector<hwloc_obj_t>& osdevs) {
        for (hwloc_obj_t os : osdevs)
            for (const char* key : {"NVIDIAUUID", "AMDUUID", "LevelZeroUUID"}) {
                std::string v = info(os, key);
                // Anonymised exports carry all-zero UUIDs: they identify nothing.
                if (!v.empty() && v.find_first_not_of("GPU-0") != std::string::npos) return v;
            }
        return {};
    }

    void read_gpus_and_nics() {
        for (size_t i = 0; i < pci_objs_.size(); ++i) {
            const PciObject& p = node_.pci[i];
            if (p.kind != PciKind::Device) continue;
            hwloc_obj_t o = pci_objs_[i];
            std::vector<hwloc_obj_t> osdevs = osdevs_of(o);
            bool compute = std::any_of(osdevs.begin(), osdevs.end(), is_compute_osdev);
            // A display-class function that owns a GPU-memory NUMA node is a
            // GPU even when its vendor id is unknown (anonymised sysfs dumps).
            bool owns_gpu_memory = is_gpu_class(p.class_id) && gpu_memory_.count(p.address.to_string()) > 0;
            if (is_gpu_function(p.class_id, p.vendor_id, p.device_id, compute) || owns_gpu_memory)
                add_gpus(static_cast<int>(i), o, osdevs);
            else
                add_nics(static_cast<int>(i), osdevs);
        }
    }

    // What a GPU is when several GPU OS devices share one PCI function (AMD
    // MI300 TPX/CPX partitions: 3 or 6 rsmi devices per function): each
    // partition is one GPU. That is what Slurm counts (one GRES per rsmi
    // device / render node with AutoDetect=rsmi) and what ROCR_VISIBLE_DEVICES
    // and HIP number, so Slurm's GPU indices and ours agree. Partitions keep
    // their PCI address; among equal addresses they stay in OS-device order.
    // The partition count is the largest number of OS devices of one family
    // (rsmi, nvml, cuda, card, ...) on the function; families with exactly
    // that many devices are dealt out in numeric order, others are ambiguous
    // and left out of the partitions' os_names.
    void add_gpus(int pci_idx, hwloc_obj_t o, const std::vector<hwloc_obj_t>& osdevs) {
        std::map<std::string, std::vector<std::pair<long, hwloc_obj_t>>> families;
        for (hwloc_obj_t os : osdevs)
            if (is_gpu_osdev(os) && os->name) {
                auto [family, number] = split_name(os->name);
                families[family].push_back({number, os});
            }
        size_t parts = 1;
        for (auto& kv : families) {
            std::stable_sort(kv.second.begin(), kv.second.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            parts = std::max(parts, kv.second.size());
        }
        const PciObject& p = node_.pci[static_cast<size_t>(pci_idx)];
        std::string model = pick_model(o, osdevs);
        for (size_t k = 0; k < parts; ++k) {
            Gpu g;
            g.vendor = vendor_from_pci_id(p.vendor_id);
            g.model = model;
            g.pci = p.address;
            g.pci_object = pci_idx;
            g.numa = p.numa;
            g.local_cpus = p.local_cpus;
            std::vector<hwloc_obj_t> mine;
            for (auto& kv : families) {
                if (parts == 1) {
                    for (auto& e : kv.second) mine.push_back(e.second);
                } else if (kv.second.size() == parts) {
                    mine.push_back(kv.second[k].second);
                }
            }
            for (hwloc_obj_t os : mine) {
                g.os_names.push_back(os->name);
                gpu_of_obj_[os] = static_cast<int>(node_.gpus.size());
            }
            g.uuid = uuid_of(mine);
            g.memory_bytes = memory_of(mine);
            if (g.memory_bytes == 0 && parts == 1) {
                auto it = gpu_memory_.find(p.address.to_string());
                if (it != gpu_memory_.end()) g.memory_bytes = it->second;
            }
            if (parts == 1) gpu_of_obj_[o] = static_cast<int>(node_.gpus.size());
            gpu_model_.push_back(model);
            node_.gpus.push_back(g);
        }
    }

    // NICs. An RDMA NIC is an RDMA device hwloc saw (OpenFabrics OS device:
    // mlx5_0, mlx4_0, rdmap197s0 for EFA, bnxt_re0), named as verbs/NCCL/UCX
    // name it; its netdevs are the Network OS devices of the same PCI function.
    // HPE Slingshot (Cassini, vendor 0x17db) has no verbs device: it is an
    // RDMA NIC through libfabric's cxi provider; it is named by its cxi device
    // when hwloc shows one, else by its netdev (hsn0/hsi0), which is what
    // these XML exports carry. A PCI function with netdevs and no RDMA device
    // is kept as a NIC with rdma=false (the plan never uses it for GPU
    // traffic, but it can name NCCL_SOCKET_IFNAME candidates).
    void add_nics(int pci_idx, const std::vector<hwloc_obj_t>& osdevs) {
        std::vector<hwloc_obj_t> rdma, net;
        bool slingshot = node_.pci[static_cast<size_t>(pci_idx)].vendor_id == 0x17db;
        for (hwloc_obj_t os : osdevs) {
            if (!os->name) continue;
            if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) rdma.push_back(os);
            else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
                net.push_back(os);
                if (os->subtype && !std::strcmp(os->subtype, "Slingshot")) slingshot = true;
            }
        }
        if (rdma.empty() && net.empty()) return;
        const PciObject& p = node_.pci[static_cast<size_t>(pci_idx)];
        auto base = [&]() {
            Nic n;
            n.pci = p.address;
            n.pci_object = pci_idx;
            n.numa = p.numa;
            n.local_cpus = p.local_cpus;
            for (hwloc_obj_t os : net) n.netdevs.push_back(os->name);
            return n;
        };
        if (!rdma.empty()) {
            for (hwloc_obj_t os : rdma) {
                Nic n = base();
                n.name = os->name;
                n.rdma = true;
                n.ports = ports_of(os);
                // hwloc exports no link layer; the PCI class says it for
                // Mellanox-style adapters (VPI cards change class with their
                // port type). EFA (0x1d0f) is neither: left unknown.
                std::string layer;
                if (p.class_id == 0x0207 || p.class_id == 0x0c06) layer = "InfiniBand";
                else if (p.class_id == 0x0200 && p.vendor_id != 0x1d0f) layer = "Ethernet";
                for (auto& port : n.ports)
                    if (port.link_layer.empty()) port.link_layer = layer;
                node_.nics.push_back(n);
            }
            return;
        }
        Nic n = base();
        n.name = n.netdevs.front();
        for (const auto& d : n.netdevs)
            if (split_name(d).first == "cxi") n.name = d;
        n.rdma = slingshot;
        node_.nics.push_back(n);
    }

    hwloc_topology_t topo_;
    Node& node_;
    std::vector<hwloc_obj_t> pci_objs_;                 // parallel to node_.pci
    std::unordered_map<hwloc_obj_t, int> gpu_of_obj_;   // OS devices / PCI functions -> GPU position
    std::vector<std::string> gpu_model_;                // by GPU position
    std::map<std::string, uint64_t> gpu_memory_;        // GPU PCI bus id -> bytes of its memory NUMA node
};

}  // namespace

bool is_gpu_class(unsigned class_id) {
    return class_id == 0x0300 || class_id == 0x0302 || class_id == 0x0380 || class_id == 0x1200;
}

bool is_gpu_function(unsigned class_id, unsigned vendor_id, unsigned device_id, bool has_compute_osdev) {
    if (!is_gpu_class(class_id)) return false;
    switch (vendor_id) {
        case 0x10de:  // NVIDIA
            return true;
        case 0x1002:  // AMD/ATI: the ES1000/RN50 family is a server BMC's display chip
            return !(class_id == 0x0300 && (device_id == 0x515e || device_id == 0x5159 || device_id == 0x5969));
        case 0x8086:  // Intel: a VGA function is the CPU's integrated graphics unless a compute runtime uses it
            return class_id != 0x0300 || has_compute_osdev;
        default:      // ASPEED, Matrox, and any other VGA vendor: not a GPU
            return false;
    }
}

Node convert_topology(hwloc_topology_t topology, const std::string& source) {
    Node node;
    node.source = source;
    Converter(topology, node).run();
    node.finalize();
    return node;
}

}  // namespace gputopo::hwloc_detail
