#include "topo/sources/node_snapshot.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <type_traits>
#include <vector>

#include "topo/core/errors.hpp"

namespace gputopo::spank {

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

std::string unesc(const std::string& s) {
    if (s == "%0") return "";
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
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

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

std::vector<std::string> unesc_list(const std::string& s) {
    std::vector<std::string> out;
    if (s == "%0") return out;
    for (const auto& p : split(s, ',')) out.push_back(unesc(p));
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

Node read_node_snapshot(const std::string& text, const std::string& name) {
    auto bad = [&](const std::string& why) {
        return TopologyError(name + " is not a gputopo node snapshot (version 1): " + why);
    };
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != kHeader) throw bad("wrong header");
    Node n;
    bool ended = false;
    size_t lineno = 1;
    try {
        while (std::getline(in, line)) {
            ++lineno;
            std::vector<std::string> f = split(line, '\t');
            const std::string& tag = f[0];
            auto need = [&](size_t k) {
                if (f.size() != k + 1) throw bad("line " + std::to_string(lineno) + ": " + tag + " needs " + std::to_string(k) + " fields");
            };
            auto I = [&](size_t i) { return std::stoi(f[i]); };
            auto U = [&](size_t i) { return static_cast<unsigned>(std::stoul(f[i])); };
            auto C = [&](size_t i) { return CpuSet::parse_list(unesc(f[i])); };
            auto A = [&](size_t i) { return PciAddress::parse(f[i]); };
            if (tag == "node") {
                need(3);
                n.hostname = unesc(f[1]);
                n.source = unesc(f[2]);
                n.cpus = C(3);
            } else if (tag == "package") {
                need(2);
                n.packages.push_back({I(1), C(2)});
            } else if (tag == "numa") {
                need(3);
                n.numa_nodes.push_back({I(1), C(2), std::stoull(f[3])});
            } else if (tag == "core") {
                need(3);
                n.cores.push_back({I(1), I(2), C(3)});
            } else if (tag == "pci") {
                need(9);
                PciObject p;
                p.kind = static_cast<PciKind>(I(1));
                p.parent = I(2);
                p.has_address = I(3) != 0;
                p.address = A(4);
                p.class_id = U(5);
                p.vendor_id = U(6);
                p.device_id = U(7);
                p.numa = I(8);
                p.local_cpus = C(9);
                n.pci.push_back(p);
            } else if (tag == "gpu") {
                need(12);
                Gpu g;
                g.index = I(1);
                g.vendor = static_cast<Vendor>(I(2));
                g.model = unesc(f[3]);
                g.pci = A(4);
                g.pci_object = I(5);
                g.numa = I(6);
                g.local_cpus = C(7);
                g.os_names = unesc_list(f[8]);
                g.uuid = unesc(f[9]);
                g.memory_bytes = std::stoull(f[10]);
                g.fabric_cluster_uuid = unesc(f[11]);
                g.fabric_clique = I(12);
                n.gpus.push_back(g);
            } else if (tag == "mig") {
                need(2);
                int index = I(1);
                auto it = std::find_if(n.gpus.begin(), n.gpus.end(), [&](const Gpu& g) { return g.index == index; });
                if (it == n.gpus.end()) throw bad("line " + std::to_string(lineno) + ": mig record for unknown GPU");
                it->mig_uuids = unesc_list(f[2]);
            } else if (tag == "nic") {
                need(9);
                Nic x;
                x.name = unesc(f[1]);
                x.netdevs = unesc_list(f[2]);
                x.pci = A(3);
                x.pci_object = I(4);
                x.numa = I(5);
                x.local_cpus = C(6);
                x.rdma = I(7) != 0;
                x.storage = I(8) != 0;
                x.speed_gbps = std::stod(f[9]);
                n.nics.push_back(x);
            } else if (tag == "port") {
                need(5);
                if (n.nics.empty()) throw bad("port before any nic");
                n.nics.back().ports.push_back({I(1), unesc(f[2]), unesc(f[3]), std::stod(f[4]), I(5)});
            } else if (tag == "link") {
                need(6);
                GpuLink l;
                l.a = I(1);
                l.b = I(2);
                l.kind = static_cast<LinkKind>(I(3));
                l.count = I(4);
                l.bandwidth_gbps = std::stod(f[5]);
                l.via_switch = I(6) != 0;
                n.links.push_back(l);
            } else if (tag == "warning") {
                need(1);
                n.warnings.push_back(unesc(f[1]));
            } else if (tag == "end") {
                ended = true;
                break;
            } else {
                throw bad("line " + std::to_string(lineno) + ": unknown record '" + tag + "'");
            }
        }
    } catch (const TopologyError&) {
        throw;
    } catch (const std::exception& e) {
        throw bad("line " + std::to_string(lineno) + ": " + e.what());
    }
    if (!ended) throw bad("truncated (no end line)");
    return n;
}

}  // namespace gputopo::spank
