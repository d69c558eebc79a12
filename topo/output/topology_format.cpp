#include "topo/output/topology_format.hpp"

#include <cstdio>
#include <map>

#include "topo/core/distance.hpp"
#include "topo/core/strings.hpp"
#include "topo/output/picture_model.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/output/text_table.hpp"

namespace gputopo {

namespace {

// Sources without a PCI location for a NIC (NCCL's socket NICs) leave the
// address zero and no PCI object.
bool nic_has_pci(const Nic& n) { return n.pci_object >= 0 || n.pci != PciAddress{}; }

std::string numa_text(int numa) { return numa >= 0 ? std::to_string(numa) : std::string("N/A"); }

std::string bytes_text(uint64_t bytes) {
    if (bytes == 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

std::string gbps_text(double gbps) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%gGb/s", gbps);
    return buf;
}

std::string ports_text(const Nic& nic) {
    std::vector<std::string> parts;
    for (const auto& p : nic.ports) {
        std::string s = "port" + std::to_string(p.number);
        if (!p.state.empty()) s += " " + p.state;
        if (!p.link_layer.empty()) s += " " + p.link_layer;
        if (p.rate_gbps > 0) s += " " + gbps_text(p.rate_gbps);
        parts.push_back(s);
    }
    return join_strings(parts, "; ");
}

std::string usable_text(const Nic& nic) {
    const std::string why = nic_unusable_reason(nic);
    return why.empty() ? "yes" : "no (" + why + ")";
}

std::vector<std::vector<std::string>> gpu_gpu_labels(const Node& node) {
    std::vector<std::vector<std::string>> m;
    for (size_t a = 0; a < node.gpus.size(); ++a) {
        m.emplace_back();
        for (size_t b = 0; b < node.gpus.size(); ++b)
            m.back().push_back(gpu_gpu_path(node, static_cast<int>(a), static_cast<int>(b)).label());
    }
    return m;
}

std::vector<std::vector<std::string>> gpu_nic_labels(const Node& node) {
    std::vector<std::vector<std::string>> m;
    for (size_t g = 0; g < node.gpus.size(); ++g) {
        m.emplace_back();
        for (size_t n = 0; n < node.nics.size(); ++n) m.back().push_back(gpu_nic_path(node, static_cast<int>(g), n).label());
    }
    return m;
}

std::vector<std::vector<std::string>> nic_nic_labels(const Node& node) {
    std::vector<std::vector<std::string>> m;
    for (size_t a = 0; a < node.nics.size(); ++a) {
        m.emplace_back();
        for (size_t b = 0; b < node.nics.size(); ++b) m.back().push_back(nic_nic_path(node, a, b).label());
    }
    return m;
}

// nvidia-smi writes the self cell as " X ".
std::string cell(const std::string& label) { return label == "X" ? " X " : label; }

void write_matrix(JsonWriter& w, const std::vector<std::vector<std::string>>& m) {
    w.begin_array();
    for (const auto& row : m) w.value(row);
    w.end_array();
}

void write_numa(JsonWriter& w, int numa) {
    if (numa >= 0) w.value(numa);
    else w.null();
}

}  // namespace

std::string topology_matrix(const Node& node) {
    const auto gg = gpu_gpu_labels(node);
    const auto gn = gpu_nic_labels(node);
    const auto nn = nic_nic_labels(node);
    std::string out;
    for (size_t g = 0; g < node.gpus.size(); ++g) out += "\tGPU" + std::to_string(g);
    for (size_t n = 0; n < node.nics.size(); ++n) out += "\tNIC" + std::to_string(n);
    out += "\tCPU Affinity\tNUMA Affinity\n";
    for (size_t g = 0; g < node.gpus.size(); ++g) {
        out += "GPU" + std::to_string(g);
        for (const auto& l : gg[g]) out += "\t" + cell(l);
        for (const auto& l : gn[g]) out += "\t" + cell(l);
        const Gpu& gpu = node.gpus[g];
        out += "\t" + (gpu.local_cpus.empty() ? std::string("N/A") : gpu.local_cpus.to_list());
        out += "\t" + numa_text(gpu.numa) + "\n";
    }
    for (size_t n = 0; n < node.nics.size(); ++n) {
        out += "NIC" + std::to_string(n);
        for (size_t g = 0; g < node.gpus.size(); ++g) out += "\t" + cell(gn[g][n]);
        for (const auto& l : nn[n]) out += "\t" + cell(l);
        out += "\n";
    }

    bool nvlink = false, xgmi = false, c2c = false;
    for (const auto& l : node.links) {
        nvlink |= l.kind == LinkKind::NVLink;
        xgmi |= l.kind == LinkKind::XGMI;
        c2c |= l.kind == LinkKind::C2C;
    }
    out += "\nLegend:\n\n";
    out += "  X    = Self\n";
    out += "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n";
    out += "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n";
    out += "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n";
    out += "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n";
    out += "  PIX  = Connection traversing at most a single PCIe bridge\n";
    if (nvlink || (!xgmi && !c2c)) out += "  NV#  = Connection traversing a bonded set of # NVLinks\n";
    if (xgmi) out += "  XGMI# = Connection traversing # xGMI (Infinity Fabric) links\n";
    if (c2c) out += "  C2C  = Chip-to-chip link between a GPU and its CPU package\n";
    if (!node.nics.empty()) {
        out += "\nNIC Legend:\n\n";
        for (size_t n = 0; n < node.nics.size(); ++n) out += "  NIC" + std::to_string(n) + ": " + node.nics[n].name + "\n";
    }
    return out;
}

std::string topology_table(const Node& node, const std::vector<int>& islands) {
    std::string out;
    int usable = 0;
    for (const auto& n : node.nics) usable += n.usable() ? 1 : 0;
    if (!node.hostname.empty()) out += "host: " + node.hostname + "   ";
    out += "source: " + (node.source.empty() ? std::string("unknown") : node.source) + "\n";
    out += "GPUs: " + std::to_string(node.gpus.size()) + "   NICs: " + std::to_string(node.nics.size()) + " (" +
           std::to_string(usable) + " usable RDMA)   NUMA nodes: " + std::to_string(node.numa_nodes.size()) +
           "   CPUs: " + std::to_string(node.cpus.count());
    if (!node.cores.empty()) out += " (" + std::to_string(node.cores.size()) + " cores)";
    out += "\n\n";

    if (node.gpus.empty()) {
        out += "No GPUs found in " + (node.source.empty() ? std::string("this topology") : node.source) +
               " (GPUs are PCI devices of class 0300, 0302, 0380 or 1200 that are not a BMC's display chip).\n\n";
    } else {
        std::vector<std::vector<std::string>> rows{{"GPU", "PCI", "VENDOR", "MODEL", "NUMA", "LOCAL CPUS", "OS NAMES"}};
        for (const auto& g : node.gpus)
            rows.push_back({"GPU" + std::to_string(g.index), g.pci.to_string(), vendor_name(g.vendor), g.model,
                            numa_text(g.numa), g.local_cpus.to_list(), join_strings(g.os_names, ",")});
        out += text_columns(rows) + "\n";
    }

    if (node.nics.empty()) {
        out += "No NICs found.\n\n";
    } else {
        std::vector<std::vector<std::string>> rows{{"NIC", "NAME", "PCI", "NETDEVS", "PORTS", "NUMA", "USABLE"}};
        for (size_t i = 0; i < node.nics.size(); ++i) {
            const Nic& n = node.nics[i];
            rows.push_back({"NIC" + std::to_string(i), n.name, nic_has_pci(n) ? n.pci.to_string() : "N/A", join_strings(n.netdevs, ","), ports_text(n),
                            numa_text(n.numa), usable_text(n)});
        }
        out += text_columns(rows) + "\n";
    }

    if (!node.numa_nodes.empty()) {
        std::vector<std::vector<std::string>> rows{{"NUMA", "CPUS", "MEMORY"}};
        for (const auto& n : node.numa_nodes)
            rows.push_back({std::to_string(n.os_index), n.cpus.to_list(), bytes_text(n.memory_bytes)});
        out += text_columns(rows) + "\n";
    }

    if (!node.gpus.empty()) {
        out += topology_matrix(node) + "\n";
        auto members = island_members(islands);
        if (!members.empty()) {
            out += "Islands:\n\n";
            for (const auto& kv : members)
                out += "  island " + std::to_string(kv.first) + ": GPU " + index_list(kv.second) + " (" +
                       island_kind(node, kv.second) + ")\n";
            out += "\n";
        }
    }

    while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
    return out;
}

void write_topology_json(JsonWriter& w, const Node& node, const std::vector<int>& islands) {
    w.begin_object();
    w.key("schema_version").value(kJsonSchemaVersion);
    w.key("hostname").value(node.hostname);
    w.key("source").value(node.source);
    w.key("cpus").value(node.cpus.to_list());

    w.key("packages").begin_array();
    for (const auto& p : node.packages) {
        w.begin_object(JsonWriter::Inline);
        w.key("os_index").value(p.os_index);
        w.key("cpus").value(p.cpus.to_list());
        w.end_object();
    }
    w.end_array();

    w.key("numa_nodes").begin_array();
    for (const auto& n : node.numa_nodes) {
        w.begin_object(JsonWriter::Inline);
        w.key("os_index").value(n.os_index);
        w.key("cpus").value(n.cpus.to_list());
        w.key("memory_bytes").value(static_cast<unsigned long long>(n.memory_bytes));
        w.end_object();
    }
    w.end_array();

    w.key("gpus").begin_array();
    for (const auto& g : node.gpus) {
        w.begin_object(JsonWriter::Inline);
        w.key("index").value(g.index);
        w.key("pci").value(g.pci.to_string());
        w.key("vendor").value(vendor_name(g.vendor));
        w.key("model").value(g.model);
        w.key("numa");
        write_numa(w, g.numa);
        w.key("local_cpus").value(g.local_cpus.to_list());
        w.key("os_names").value(g.os_names);
        w.key("uuid").value(g.uuid);
        w.key("memory_bytes").value(static_cast<unsigned long long>(g.memory_bytes));
        w.key("island");
        if (static_cast<size_t>(g.index) < islands.size() && g.index >= 0) w.value(islands[static_cast<size_t>(g.index)]);
        else w.null();
        w.end_object();
    }
    w.end_array();

    w.key("nics").begin_array();
    for (const auto& n : node.nics) {
        w.begin_object(JsonWriter::Inline);
        w.key("name").value(n.name);
        w.key("pci");
        if (nic_has_pci(n)) w.value(n.pci.to_string());
        else w.null();
        w.key("netdevs").value(n.netdevs);
        w.key("ports").begin_array();
        for (const auto& p : n.ports) {
            w.begin_object();
            w.key("number").value(p.number);
            w.key("state").value(p.state);
            w.key("link_layer").value(p.link_layer);
            w.key("rate_gbps").value(p.rate_gbps);
            w.end_object();
        }
        w.end_array();
        w.key("numa");
        write_numa(w, n.numa);
        w.key("local_cpus").value(n.local_cpus.to_list());
        w.key("rdma").value(n.rdma);
        w.key("storage").value(n.storage);
        w.key("usable").value(n.usable());
        w.end_object();
    }
    w.end_array();

    w.key("links").begin_array();
    for (const auto& l : node.links) {
        w.begin_object(JsonWriter::Inline);
        w.key("a").value(l.a);
        w.key("b").value(l.b);
        w.key("kind").value(link_kind_name(l.kind));
        w.key("count").value(l.count);
        w.key("bandwidth_gbps").value(l.bandwidth_gbps);
        w.key("via_switch").value(l.via_switch);
        w.end_object();
    }
    w.end_array();

    w.key("gpu_gpu");
    write_matrix(w, gpu_gpu_labels(node));
    w.key("gpu_nic");
    write_matrix(w, gpu_nic_labels(node));
    w.key("nic_nic");
    write_matrix(w, nic_nic_labels(node));

    w.key("islands").begin_array();
    for (const auto& kv : island_members(islands)) w.value(kv.second);
    w.end_array();

    w.key("warnings").value(node.warnings);
    w.end_object();
}

std::string topology_json(const Node& node, const std::vector<int>& islands, int indent) {
    JsonWriter w(indent);
    write_topology_json(w, node, islands);
    return w.str() + "\n";
}

}  // namespace gputopo
