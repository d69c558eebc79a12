// Builds small synthetic Nodes for tests: sockets, NUMA nodes with cores and
// SMT siblings, a PCI tree (host bridges, switches), GPUs, NICs and GPU links.
//
//   NodeBuilder b(2);                       // 2 PUs per core
//   b.numa(0, 0, 4).numa(1, 1, 4);          // NUMA 0 on package 0 with 4 cores, NUMA 1 on package 1
//   int hb = b.host_bridge(0);              // host bridge on NUMA 0
//   int sw = b.bridge(hb);                  // a switch below it
//   b.gpu(sw, 0x10).nic(sw, 0x11, "mlx5_0");
//   b.link(0, 1, 12);                       // NV12 between GPU 0 and 1 (GPU = insertion order)
//   Node n = b.build();
// PU numbering is Linux/Intel style: core c has PUs c, c + C, c + 2C ... (C =
// all cores of the node). Cores are numbered in NUMA insertion order. GPU and
// NIC bus ids are 0000:BB:00.0; give increasing buses so insertion order is
// PCI order.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo_test {

class NodeBuilder {
public:
    explicit NodeBuilder(int smt = 1) : smt_(smt) {}

    NodeBuilder& numa(int os_index, int package, int ncores) {
        numas_.push_back({os_index, package, ncores});
        return *this;
    }
    // When set, the model has no cores (like an NCCL XML source): PUs only.
    NodeBuilder& no_cores() {
        no_cores_ = true;
        return *this;
    }

    int host_bridge(int numa_os) {
        gputopo::PciObject o;
        o.kind = gputopo::PciKind::HostBridge;
        o.numa = numa_os;
        pci_.push_back(o);
        return static_cast<int>(pci_.size()) - 1;
    }
    int bridge(int parent) {
        gputopo::PciObject o;
        o.kind = gputopo::PciKind::Bridge;
        o.parent = parent;
        pci_.push_back(o);
        return static_cast<int>(pci_.size()) - 1;
    }
    NodeBuilder& gpu(int parent, unsigned bus) {
        int obj = device(parent, bus, 0x0302, 0x10de);
        gputopo::Gpu g;
        g.vendor = gputopo::Vendor::Nvidia;
        g.pci = pci_[static_cast<size_t>(obj)].address;
        g.pci_object = obj;
        gpus_.push_back(g);
        return *this;
    }
    // A GPU outside any PCI tree, with no NUMA locality.
    NodeBuilder& gpu_without_locality(unsigned bus) {
        gputopo::Gpu g;
        g.pci = addr(bus);
        gpus_.push_back(g);
        return *this;
    }
    NodeBuilder& nic(int parent, unsigned bus, const std::string& name, bool rdma = true, bool storage = false,
                     const std::string& port_state = "") {
        int obj = device(parent, bus, 0x0207, 0x15b3);
        gputopo::Nic n;
        n.name = name;
        n.pci = pci_[static_cast<size_t>(obj)].address;
        n.pci_object = obj;
        n.rdma = rdma;
        n.storage = storage;
        if (!port_state.empty()) {
            gputopo::NicPort p;
            p.state = port_state;
            n.ports.push_back(p);
        }
        nics_.push_back(n);
        return *this;
    }
    NodeBuilder& link(int a, int b, int count, bool via_switch = false) {
        gputopo::GpuLink l;
        l.a = a;
        l.b = b;
        l.count = count;
        l.via_switch = via_switch;
        links_.push_back(l);
        return *this;
    }

    gputopo::Node build() const {
        gputopo::Node node;
        node.hostname = "synthetic";
        node.source = "model_builder";
        int total = 0;
        for (const auto& n : numas_) total += n.ncores;
        int core = 0;
        for (const auto& spec : numas_) {
            gputopo::NumaNode nn;
            nn.os_index = spec.os;
            for (int c = 0; c < spec.ncores; ++c, ++core) {
                gputopo::Core k;
                k.package = spec.package;
                k.numa = spec.os;
                for (int s = 0; s < smt_; ++s) k.pus.set(core + s * total);
                nn.cpus |= k.pus;
                if (!no_cores_) node.cores.push_back(k);
            }
            node.numa_nodes.push_back(nn);
            bool found = false;
            for (auto& p : node.packages)
                if (p.os_index == spec.package) {
                    p.cpus |= nn.cpus;
                    found = true;
                }
            if (!found) node.packages.push_back({spec.package, nn.cpus});
        }
        node.pci = pci_;
        for (auto& o : node.pci)
            if (o.kind == gputopo::PciKind::HostBridge)
                for (const auto& nn : node.numa_nodes)
                    if (nn.os_index == o.numa) o.local_cpus = nn.cpus;
        node.gpus = gpus_;
        node.nics = nics_;
        node.links = links_;
        node.finalize();
        return node;
    }

private:
    struct NumaSpec {
        int os, package, ncores;
    };
    static gputopo::PciAddress addr(unsigned bus) {
        gputopo::PciAddress a;
        a.bus = bus;
        return a;
    }
    int device(int parent, unsigned bus, unsigned cls, unsigned vendor) {
        gputopo::PciObject o;
        o.kind = gputopo::PciKind::Device;
        o.parent = parent;
        o.has_address = true;
        o.address = addr(bus);
        o.class_id = cls;
        o.vendor_id = vendor;
        pci_.push_back(o);
        return static_cast<int>(pci_.size()) - 1;
    }

    int smt_;
    bool no_cores_ = false;
    std::vector<NumaSpec> numas_;
    std::vector<gputopo::PciObject> pci_;
    std::vector<gputopo::Gpu> gpus_;
    std::vector<gputopo::Nic> nics_;
    std::vector<gputopo::GpuLink> links_;
};

// What the planner hands out within `allowed`, recomputed for the checks:
// whole cores (their allowed PUs), or single PUs with `by_pu` or when the
// model knows no cores.
inline std::vector<gputopo::CpuSet> allowed_units(const gputopo::Node& n, const gputopo::CpuSet& allowed,
                                                  bool by_pu = false) {
    std::vector<gputopo::CpuSet> out;
    if (n.cores.empty()) {
        for (int pu : (n.cpus & allowed).to_vector()) out.push_back(gputopo::CpuSet::range(pu, pu));
        return out;
    }
    for (const auto& c : n.cores) {
        gputopo::CpuSet s = c.pus & allowed;
        if (s.empty()) continue;
        if (by_pu)
            for (int pu : s.to_vector()) out.push_back(gputopo::CpuSet::range(pu, pu));
        else
            out.push_back(s);
    }
    return out;
}

}  // namespace gputopo_test
