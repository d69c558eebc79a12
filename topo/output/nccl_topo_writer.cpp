#include "topo/output/nccl_topo_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

constexpr const char* kSwitchPlaceholder = "fffffff:ff:ff.0";  // as NCCL names a switch it cannot see

const char* this_arch() {
#if defined(__x86_64__)
    return "x86_64";
#elif defined(__aarch64__)
    return "arm64";
#elif defined(__powerpc64__)
    return "ppc64";
#else
    return "";
#endif
}

std::string xml_attr(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            case '\'': o += "&apos;"; break;
            default: o += c;
        }
    }
    return o;
}

// NCCL's affinity mask: 32-bit hex words, most significant first.
std::string hex_mask(const CpuSet& cpus) {
    int last = cpus.last();
    if (last < 0) return "00000000";
    int words = last / 32 + 1;
    std::string out;
    char buf[16];
    for (int w = words - 1; w >= 0; --w) {
        unsigned v = 0;
        for (int b = 0; b < 32; ++b)
            if (cpus.test(w * 32 + b)) v |= 1u << b;
        std::snprintf(buf, sizeof buf, "%08x", v);
        if (!out.empty()) out += ',';
        out += buf;
    }
    return out;
}

std::string hex(unsigned v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
    return buf;
}

enum class Role { Skip, Switch, Emit };

class Writer {
public:
    explicit Writer(const Node& node) : n_(node), kids_(node.pci.size()), role_(node.pci.size(), Role::Skip) {
        for (size_t i = 0; i < n_.pci.size(); ++i) {
            int p = n_.pci[i].parent;
            if (p >= 0 && static_cast<size_t>(p) < n_.pci.size()) kids_[static_cast<size_t>(p)].push_back(static_cast<int>(i));
        }
        for (const auto& g : n_.gpus)
            if (valid(g.pci_object)) gpu_at_[g.pci_object].push_back(g.index);
        for (size_t i = 0; i < n_.nics.size(); ++i)
            if (valid(n_.nics[i].pci_object)) nics_at_[n_.nics[i].pci_object].push_back(i);
        for (size_t i = 0; i < n_.pci.size(); ++i)
            if (n_.pci[i].parent < 0) assign_roles(static_cast<int>(i), Ctx::HostBridge);
    }

    std::string write() {
        out_ << "<system version=\"1\">\n";
        for (int numa : cpu_order()) write_cpu(numa);
        out_ << "</system>\n";
        return out_.str();
    }

private:
    bool valid(int i) const { return i >= 0 && static_cast<size_t>(i) < n_.pci.size(); }

    bool holds_device(int i) const { return gpu_at_.count(i) || nics_at_.count(i); }

    bool has_wanted_below(int i) const {
        if (holds_device(i)) return true;
        for (int k : kids_[static_cast<size_t>(i)])
            if (has_wanted_below(k)) return true;
        return false;
    }

    // Where an object sits, for its role: NCCL writes PCIe switches (upstream
    // ports) and devices, and leaves out root ports and downstream ports.
    enum class Ctx { HostBridge, RootPort, Switch, Port };

    void assign_roles(int i, Ctx ctx) {
        const PciObject& o = n_.pci[static_cast<size_t>(i)];
        Role r = Role::Skip;
        Ctx below = Ctx::Port;
        if (o.kind == PciKind::HostBridge) {
            below = Ctx::HostBridge;
        } else if (o.kind == PciKind::Device) {
            r = holds_device(i) ? Role::Emit : Role::Skip;
        } else if (ctx == Ctx::HostBridge) {
            // A tree read from NCCL XML has no root ports: its top-level
            // bridges are switches whose ports have no address.
            bool nccl_style = holds_device(i);
            for (int k : kids_[static_cast<size_t>(i)]) {
                const PciObject& c = n_.pci[static_cast<size_t>(k)];
                if (c.kind == PciKind::Bridge && !c.has_address) nccl_style = true;
            }
            // A root port with several devices below it directly (functions of
            // one card, or a hand-edited tree) is their common bridge: keep it.
            int wanted = 0;
            for (int k : kids_[static_cast<size_t>(i)])
                if (has_wanted_below(k)) ++wanted;
            r = (nccl_style || wanted >= 2) ? Role::Switch : Role::Skip;
            below = nccl_style ? Ctx::Switch : Ctx::RootPort;
        } else if (ctx == Ctx::Switch) {
            below = Ctx::Port;  // a downstream port: skipped
        } else {
            r = Role::Switch;  // below a root port or a downstream port
            below = Ctx::Switch;
        }
        if (r == Role::Switch && !has_wanted_below(i)) r = Role::Skip;
        role_[static_cast<size_t>(i)] = r;
        for (int k : kids_[static_cast<size_t>(i)]) assign_roles(k, below);
    }

    // The emitted elements directly below object i (through skipped objects).
    void emitted_below(int i, std::vector<int>& out) const {
        for (int k : kids_[static_cast<size_t>(i)]) {
            if (role_[static_cast<size_t>(k)] != Role::Skip)
                out.push_back(k);
            else
                emitted_below(k, out);
        }
    }

    int numa_of_tree(int i) const {
        for (int cur = i; valid(cur); cur = n_.pci[static_cast<size_t>(cur)].parent)
            if (n_.pci[static_cast<size_t>(cur)].numa >= 0) return n_.pci[static_cast<size_t>(cur)].numa;
        for (int g : gpus_below(i))
            if (n_.gpus[static_cast<size_t>(g)].numa >= 0) return n_.gpus[static_cast<size_t>(g)].numa;
        return -1;
    }

    std::vector<int> gpus_below(int i) const {
        std::vector<int> out;
        auto it = gpu_at_.find(i);
        if (it != gpu_at_.end()) out = it->second;
        for (int k : kids_[static_cast<size_t>(i)]) {
            auto more = gpus_below(k);
            out.insert(out.end(), more.begin(), more.end());
        }
        return out;
    }

    int fallback_numa() const {
        for (const auto& nn : n_.numa_nodes)
            if (!nn.cpus.empty()) return nn.os_index;
        return n_.numa_nodes.empty() ? 0 : n_.numa_nodes.front().os_index;
    }

    std::vector<int> cpu_order() {
        std::set<int> numas;
        for (const auto& nn : n_.numa_nodes)
            if (!nn.cpus.empty()) numas.insert(nn.os_index);
        // Top-level elements, grouped by the NUMA node of their tree.
        for (size_t i = 0; i < n_.pci.size(); ++i) {
            if (n_.pci[i].parent >= 0) continue;
            std::vector<int> tops;
            if (role_[i] != Role::Skip)
                tops.push_back(static_cast<int>(i));
            else
                emitted_below(static_cast<int>(i), tops);
            for (int t : tops) {
                int numa = numa_of_tree(t);
                if (numa < 0) numa = fallback_numa();
                top_[numa].push_back(t);
                numas.insert(numa);
            }
        }
        for (const auto& g : n_.gpus)
            if (!valid(g.pci_object)) numas.insert(g.numa >= 0 ? g.numa : fallback_numa());
        for (const auto& nic : n_.nics)
            if (!valid(nic.pci_object) && nic.numa >= 0) numas.insert(nic.numa);
        if (numas.empty()) numas.insert(fallback_numa());
        return std::vector<int>(numas.begin(), numas.end());
    }

    void indent(int depth) { out_ << std::string(static_cast<size_t>(depth) * 2, ' '); }

    void write_cpu(int numa) {
        const NumaNode* nn = n_.numa(numa);
        indent(1);
        out_ << "<cpu numaid=\"" << numa << "\" affinity=\"" << hex_mask(nn ? nn->cpus : CpuSet()) << "\"";
        if (*this_arch()) out_ << " arch=\"" << this_arch() << "\"";
        out_ << ">\n";
        for (int t : top_[numa]) write_pci(t, 2);
        for (const auto& g : n_.gpus)
            if (!valid(g.pci_object) && (g.numa >= 0 ? g.numa : fallback_numa()) == numa) write_bare_gpu(g, 2);
        for (size_t i = 0; i < n_.nics.size(); ++i) {
            const Nic& nic = n_.nics[i];
            if (valid(nic.pci_object)) continue;
            if (nic.numa == numa || nic.numa < 0) write_nic(std::vector<size_t>{i}, 2);
        }
        indent(1);
        out_ << "</cpu>\n";
    }

    void open_pci(const PciAddress& a, unsigned cls, unsigned vendor, unsigned device, int depth) {
        indent(depth);
        out_ << "<pci busid=\"" << a.to_string() << "\" class=\"" << hex(cls << 8, 6) << "\"";
        if (vendor) out_ << " vendor=\"" << hex(vendor, 4) << "\"";
        if (device) out_ << " device=\"" << hex(device, 4) << "\"";
    }

    void write_pci(int i, int depth) {
        const PciObject& o = n_.pci[static_cast<size_t>(i)];
        bool is_switch = role_[static_cast<size_t>(i)] == Role::Switch;
        unsigned cls = o.class_id;
        auto gpus = gpu_at_.find(i);
        auto nics = nics_at_.find(i);
        if (is_switch) cls = 0x0604;
        else if (!cls) cls = gpus != gpu_at_.end() ? 0x0302 : 0x0207;
        open_pci(o.address, cls, o.vendor_id, o.device_id, depth);
        out_ << ">\n";
        if (!is_switch && gpus != gpu_at_.end())
            for (int g : gpus->second) write_gpu_element(n_.gpus[static_cast<size_t>(g)], depth + 1);
        if (nics != nics_at_.end()) write_nic(nics->second, depth + 1);
        std::vector<int> below;
        emitted_below(i, below);
        for (int k : below) write_pci(k, depth + 1);
        indent(depth);
        out_ << "</pci>\n";
    }

    void write_bare_gpu(const Gpu& g, int depth) {
        open_pci(g.pci, 0x0302, g.vendor == Vendor::Nvidia ? 0x10de : g.vendor == Vendor::Amd ? 0x1002 : 0, 0, depth);
        out_ << ">\n";
        write_gpu_element(g, depth + 1);
        indent(depth);
        out_ << "</pci>\n";
    }

    void write_gpu_element(const Gpu& g, int depth) {
        indent(depth);
        out_ << "<gpu";
        if (g.vendor == Vendor::Amd) out_ << " gcn=\"\"";  // RCCL's marker of an AMD GPU (value filled by RCCL)
        out_ << ">\n";
        int switched = 0;
        for (const auto& l : n_.links) {
            if (l.a != g.index && l.b != g.index) continue;
            if (l.count <= 0 || l.kind == LinkKind::C2C) continue;
            if (l.via_switch) {
                switched = std::max(switched, l.count);
                continue;
            }
            const Gpu* peer = n_.gpu(l.a == g.index ? l.b : l.a);
            if (!peer) continue;
            indent(depth + 1);
            out_ << "<" << (l.kind == LinkKind::XGMI ? "xgmi" : "nvlink") << " target=\"" << peer->pci.to_string()
                 << "\" count=\"" << l.count << "\" tclass=\"" << (l.kind == LinkKind::XGMI ? "0x038000" : "0x030200")
                 << "\"/>\n";
        }
        if (switched > 0) {
            indent(depth + 1);
            out_ << "<nvlink target=\"" << kSwitchPlaceholder << "\" count=\"" << switched
                 << "\" tclass=\"0x068000\"/>\n";
        }
        indent(depth);
        out_ << "</gpu>\n";
    }

    void write_nic(const std::vector<size_t>& nics, int depth) {
        indent(depth);
        out_ << "<nic>\n";
        for (size_t i : nics) {
            const Nic& nic = n_.nics[i];
            auto net = [&](int port, double gbps) {
                indent(depth + 1);
                out_ << "<net name=\"" << xml_attr(nic.name) << "\" dev=\"" << next_dev_++ << "\"";
                if (gbps > 0) out_ << " speed=\"" << static_cast<long long>(gbps * 1000 + 0.5) << "\"";
                out_ << " port=\"" << port << "\" gdr=\"" << (nic.rdma ? 1 : 0) << "\"/>\n";
            };
            if (!nic.rdma) {
                net(0, nic.speed_gbps);
            } else if (nic.ports.empty()) {
                net(1, nic.speed_gbps);
            } else {
                for (const auto& p : nic.ports) net(p.number >= 1 ? p.number : 1, p.rate_gbps > 0 ? p.rate_gbps : nic.speed_gbps);
            }
        }
        indent(depth);
        out_ << "</nic>\n";
    }

    const Node& n_;
    std::vector<std::vector<int>> kids_;
    std::vector<Role> role_;
    std::map<int, std::vector<int>> gpu_at_;
    std::map<int, std::vector<size_t>> nics_at_;
    std::map<int, std::vector<int>> top_;
    std::ostringstream out_;
    int next_dev_ = 0;
};

}  // namespace

std::string nccl_topology_xml(const Node& node) { return Writer(node).write(); }

void write_nccl_topology_file(const Node& node, const std::string& path) {
    const std::string text = nccl_topology_xml(node);
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) {
            int err = errno;
            throw TopologyError("cannot write NCCL topology file " + path + ": " + std::strerror(err));
        }
        out << text;
        out.flush();
        if (!out) {
            int err = errno;
            std::remove(tmp.c_str());
            throw TopologyError("cannot write NCCL topology file " + path + ": " + std::strerror(err));
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        std::remove(tmp.c_str());
        throw TopologyError("cannot write NCCL topology file " + path + ": " + std::strerror(err));
    }
}

}  // namespace gputopo
