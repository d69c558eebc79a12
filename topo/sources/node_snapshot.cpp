#include "topo/sources/node_snapshot.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <vector>

#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"

namespace gputopo {

namespace {

const char* kHeader = "gputopo-node-snapshot\t1";

std::string esc(const std::string& s) {
    if (s.empty()) return "%0";
    std::string out;
    for (char c : s) {
        if (c == '%' || c == '\t' || c == '\n' || c == ',' || c == '\r') {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

std::string unesc(std::string_view s) {
    if (s == "%0") return "";
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            out += static_cast<char>(std::strtol(std::string(s.substr(i + 1, 2)).c_str(), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::string esc_list(const std::vector<std::string>& v) {
    if (v.empty()) return "%0";
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        out += esc(v[i]);
    }
    return out;
}

std::vector<std::string> unesc_list(std::string_view s) {
    std::vector<std::string> out;
    if (s == "%0") return out;
    for (std::string_view p : split_field_views(s, ',')) out.push_back(unesc(p));
    return out;
}

std::string num(double d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return buf;
}

std::string cpus(const CpuSet& c) { return esc(c.to_list()); }
std::string addr(const PciAddress& a) { return a.to_string(); }

struct Line {
    std::string out;
    explicit Line(const char* tag) : out(tag) {}
    template <class T>
    Line& operator<<(const T& v) {
        out += '\t';
        if constexpr (std::is_same_v<T, std::string>) out += v;
        else out += std::to_string(v);
        return *this;
    }
};

TopologyError snapshot_error(const std::string& name, const std::string& why) {
    return TopologyError("" + name + " is not a gputopo node snapshot (version 1): " + why);
}

// Every index and reference a snapshot holds points where the model's readers
// assume it does (topo/core/distance.cpp walks PCI parents, the planner indexes
// GPUs by position): a damaged file is refused here instead of crashing later.
void check_node_snapshot(const Node& n, const std::string& name) {
    auto refuse = [&](const std::string& what, size_t i, const std::string& why) {
        throw snapshot_error(name, what + " " + std::to_string(i) + ": " + why);
    };
    auto numa_ok = [&](int os) { return os == -1 || n.numa(os) != nullptr; };
    auto package_ok = [&](int os) {
        if (os == -1) return true;
        for (const Package& p : n.packages)
            if (p.os_index == os) return true;
        return false;
    };
    const int npci = static_cast<int>(n.pci.size());
    auto pci_ok = [&](int i) { return i >= -1 && i < npci; };
    for (size_t i = 0; i < n.numa_nodes.size(); ++i) {
        if (n.numa_nodes[i].os_index < 0) refuse("numa", i, "negative OS index");
        if (i && n.numa_nodes[i].os_index <= n.numa_nodes[i - 1].os_index) refuse("numa", i, "not sorted by OS index");
    }
    for (size_t i = 0; i < n.cores.size(); ++i) {
        if (!package_ok(n.cores[i].package)) refuse("core", i, "names a package that is not in the snapshot");
        if (!numa_ok(n.cores[i].numa)) refuse("core", i, "names a NUMA node that is not in the snapshot");
    }
    for (size_t i = 0; i < n.pci.size(); ++i) {
        const PciObject& p = n.pci[i];
        if (p.kind != PciKind::HostBridge && p.kind != PciKind::Bridge && p.kind != PciKind::Device)
            refuse("pci", i, "unknown kind");
        // Parents come before their children, so the tree has no cycle.
        if (p.parent < -1 || p.parent >= static_cast<int>(i)) refuse("pci", i, "parent is not an earlier PCI object");
        if (!numa_ok(p.numa)) refuse("pci", i, "names a NUMA node that is not in the snapshot");
    }
    for (size_t i = 0; i < n.gpus.size(); ++i) {
        const Gpu& g = n.gpus[i];
        if (g.index != static_cast<int>(i)) refuse("gpu", i, "index is not its position");
        if (g.vendor != Vendor::Nvidia && g.vendor != Vendor::Amd && g.vendor != Vendor::Intel && g.vendor != Vendor::Other)
            refuse("gpu", i, "unknown vendor");
        if (!pci_ok(g.pci_object)) refuse("gpu", i, "PCI object out of range");
        if (!numa_ok(g.numa)) refuse("gpu", i, "names a NUMA node that is not in the snapshot");
    }
    for (size_t i = 0; i < n.nics.size(); ++i) {
        if (!pci_ok(n.nics[i].pci_object)) refuse("nic", i, "PCI object out of range");
        if (!numa_ok(n.nics[i].numa)) refuse("nic", i, "names a NUMA node that is not in the snapshot");
    }
    const int ngpus = static_cast<int>(n.gpus.size());
    for (size_t i = 0; i < n.links.size(); ++i) {
        const GpuLink& l = n.links[i];
        if (l.a < 0 || l.b <= l.a || l.b >= ngpus) refuse("link", i, "GPU indices out of range (expected 0 <= a < b < GPUs)");
        if (l.kind != LinkKind::NVLink && l.kind != LinkKind::XGMI && l.kind != LinkKind::C2C)
            refuse("link", i, "unknown kind");
        if (l.count < 0) refuse("link", i, "negative link count");
    }
}

}  // namespace

std::string write_node_snapshot(const Node& n) {
    std::string s = std::string(kHeader) + "\n";
    auto put = [&](const Line& l) { s += l.out + "\n"; };
    put(Line("node") << esc(n.hostname) << esc(n.source) << cpus(n.cpus));
    for (const auto& p : n.packages) put(Line("package") << p.os_index << cpus(p.cpus));
    for (const auto& m : n.numa_nodes)
        put(Line("numa") << m.os_index << cpus(m.cpus) << static_cast<unsigned long long>(m.memory_bytes));
    for (const auto& c : n.cores) put(Line("core") << c.package << c.numa << cpus(c.pus));
    for (const auto& p : n.pci)
        put(Line("pci") << static_cast<int>(p.kind) << p.parent << static_cast<int>(p.has_address) << addr(p.address)
                        << p.class_id << p.vendor_id << p.device_id << p.numa << cpus(p.local_cpus));
    for (const auto& g : n.gpus)
        put(Line("gpu") << g.index << static_cast<int>(g.vendor) << esc(g.model) << addr(g.pci) << g.pci_object << g.numa
                        << cpus(g.local_cpus) << esc_list(g.os_names) << esc(g.uuid)
                        << static_cast<unsigned long long>(g.memory_bytes) << esc(g.fabric_cluster_uuid)
                        << g.fabric_clique);
    for (const auto& g : n.gpus)  // MIG instances (NVML), a record of their own: only when there are some
        if (!g.mig_uuids.empty()) put(Line("mig") << g.index << esc_list(g.mig_uuids));
    for (const auto& x : n.nics) {
        put(Line("nic") << esc(x.name) << esc_list(x.netdevs) << addr(x.pci) << x.pci_object << x.numa
                        << cpus(x.local_cpus) << static_cast<int>(x.rdma) << static_cast<int>(x.storage)
                        << num(x.speed_gbps));
        for (const auto& p : x.ports)
            put(Line("port") << p.number << esc(p.state) << esc(p.link_layer) << num(p.rate_gbps) << p.roce_v2_gid_index);
    }
    for (const auto& l : n.links)
        put(Line("link") << l.a << l.b << static_cast<int>(l.kind) << l.count << num(l.bandwidth_gbps)
                         << static_cast<int>(l.via_switch));
    for (const auto& w : n.warnings) put(Line("warning") << esc(w));
    s += "end\n";
    return s;
}

namespace {


// A whole field as a number (from_chars: no sign, space or trailing text).
template <class T>
T number(std::string_view v) {
    T out{};
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size())
        throw std::invalid_argument("'" + std::string(v) + "' is not a number");
    return out;
}

// One line of a snapshot: its tab-separated fields (views into the text) and
// typed access to them.
struct Record {
    std::vector<std::string_view> f;
    size_t lineno;
    const std::string& name;

    std::string_view tag() const { return f[0]; }
    TopologyError bad(const std::string& why) const { return snapshot_error(name, why); }
    void need(size_t k) const {
        if (f.size() != k + 1)
            throw bad("line " + std::to_string(lineno) + ": " + std::string(tag()) + " needs " + std::to_string(k) + " fields");
    }
    int I(size_t i) const { return number<int>(f[i]); }
    unsigned U(size_t i) const { return number<unsigned>(f[i]); }
    unsigned long long ULL(size_t i) const { return number<unsigned long long>(f[i]); }
    double D(size_t i) const { return std::stod(std::string(f[i])); }
    CpuSet C(size_t i) const { return CpuSet::parse_list(unesc(f[i])); }
    PciAddress A(size_t i) const { return PciAddress::parse(std::string(f[i])); }
};

PciObject read_pci(const Record& r) {
    r.need(9);
    PciObject p;
    p.kind = static_cast<PciKind>(r.I(1));
    p.parent = r.I(2);
    p.has_address = r.I(3) != 0;
    p.address = r.A(4);
    p.class_id = r.U(5);
    p.vendor_id = r.U(6);
    p.device_id = r.U(7);
    p.numa = r.I(8);
    p.local_cpus = r.C(9);
    return p;
}

Gpu read_gpu(const Record& r) {
    r.need(12);
    Gpu g;
    g.index = r.I(1);
    g.vendor = static_cast<Vendor>(r.I(2));
    g.model = unesc(r.f[3]);
    g.pci = r.A(4);
    g.pci_object = r.I(5);
    g.numa = r.I(6);
    g.local_cpus = r.C(7);
    g.os_names = unesc_list(r.f[8]);
    g.uuid = unesc(r.f[9]);
    g.memory_bytes = r.ULL(10);
    g.fabric_cluster_uuid = unesc(r.f[11]);
    g.fabric_clique = r.I(12);
    return g;
}

Nic read_nic(const Record& r) {
    r.need(9);
    Nic x;
    x.name = unesc(r.f[1]);
    x.netdevs = unesc_list(r.f[2]);
    x.pci = r.A(3);
    x.pci_object = r.I(4);
    x.numa = r.I(5);
    x.local_cpus = r.C(6);
    x.rdma = r.I(7) != 0;
    x.storage = r.I(8) != 0;
    x.speed_gbps = r.D(9);
    return x;
}

GpuLink read_link(const Record& r) {
    r.need(6);
    GpuLink l;
    l.a = r.I(1);
    l.b = r.I(2);
    l.kind = static_cast<LinkKind>(r.I(3));
    l.count = r.I(4);
    l.bandwidth_gbps = r.D(5);
    l.via_switch = r.I(6) != 0;
    return l;
}

// Adds one record to `n`; false at the end line.
bool read_record(Node& n, const Record& r) {
    const std::string_view tag = r.tag();
    if (tag == "node") {
        r.need(3);
        n.hostname = unesc(r.f[1]);
        n.source = unesc(r.f[2]);
        n.cpus = r.C(3);
    } else if (tag == "package") {
        r.need(2);
        n.packages.push_back({r.I(1), r.C(2)});
    } else if (tag == "numa") {
        r.need(3);
        n.numa_nodes.push_back({r.I(1), r.C(2), r.ULL(3)});
    } else if (tag == "core") {
        r.need(3);
        n.cores.push_back({r.I(1), r.I(2), r.C(3)});
    } else if (tag == "pci") {
        n.pci.push_back(read_pci(r));
    } else if (tag == "gpu") {
        n.gpus.push_back(read_gpu(r));
    } else if (tag == "nic") {
        n.nics.push_back(read_nic(r));
    } else if (tag == "port") {
        r.need(5);
        if (n.nics.empty()) throw r.bad("port before any nic");
        n.nics.back().ports.push_back({r.I(1), unesc(r.f[2]), unesc(r.f[3]), r.D(4), r.I(5)});
    } else if (tag == "mig") {
        r.need(2);
        int index = r.I(1);
        auto it = std::find_if(n.gpus.begin(), n.gpus.end(), [&](const Gpu& g) { return g.index == index; });
        if (it == n.gpus.end()) throw r.bad("line " + std::to_string(r.lineno) + ": mig record for unknown GPU");
        it->mig_uuids = unesc_list(r.f[2]);
    } else if (tag == "link") {
        n.links.push_back(read_link(r));
    } else if (tag == "warning") {
        r.need(1);
        n.warnings.push_back(unesc(r.f[1]));
    } else if (tag == "end") {
        return false;
    } else {
        throw r.bad("line " + std::to_string(r.lineno) + ": unknown record '" + std::string(tag) + "'");
    }
    return true;
}

}  // namespace

Node read_node_snapshot(const std::string& text, const std::string& name) {
    // Lines as views of `text` (no stream: slurmstepd reads this before every step).
    size_t pos = 0;
    auto next_line = [&](std::string_view& line) {
        if (pos >= text.size()) return false;
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        line = std::string_view(text).substr(pos, end - pos);
        pos = end + 1;
        return true;
    };
    std::string_view line;
    if (!next_line(line) || line != kHeader) throw snapshot_error(name, "wrong header");
    Node n;
    bool ended = false;
    size_t lineno = 1;
    try {
        while (!ended && next_line(line)) {
            ++lineno;
            ended = !read_record(n, Record{split_field_views(line, '\t'), lineno, name});
        }
    } catch (const TopologyError&) {
        throw;
    } catch (const std::exception& e) {
        throw snapshot_error(name, "line " + std::to_string(lineno) + ": " + e.what());
    }
    if (!ended) throw snapshot_error(name, "truncated (no end line)");
    check_node_snapshot(n, name);
    return n;
}

}  // namespace gputopo
