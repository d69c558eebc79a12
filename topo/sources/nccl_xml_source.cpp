// NCCL/RCCL topology XML -> node model.
//
// What the format says and how it maps (decisions documented here once):
//
// * <cpu numaid=N affinity=MASK host_hash=H> is one NUMA node (os_index N,
//   cpus from the hex mask). NCCL has no notion of sockets, so no Package is
//   made; NCCL writes no cores: SMT pairs come from the x86 enumeration rule
//   where the file matches it (topo/sources/smt_siblings.hpp), else
//   Node::cores stays empty and the node says so.
// * Below a <cpu>, NCCL writes one <pci> per device and per PCIe *switch*:
//   while walking up sysfs it skips every switch's downstream ports and the
//   root port, so a <pci class=0x0604..> element is a switch's upstream port
//   and its children hang off that switch's downstream ports. To give the
//   distance rules (topo/core/distance.cpp, written for hwloc's port-by-port
//   trees) the same shape, the reader adds
//     - one HostBridge (no address) per top-level <pci> of a <cpu>: two
//       devices under different top-level elements of one <cpu> are NODE,
//       as `nvidia-smi topo -m` shows them (HGX H200 capture), and SYS across
//       <cpu> elements;
//     - one Bridge without address (the downstream port) between a switch
//       element and each of its <pci> children: devices under the same switch
//       element are PIX, devices under different switches below a common one
//       are PXB (several bridges), as nvidia-smi counts hardware bridges.
//   NCCL itself merges Broadcom PEX sub-switches (vendor 0x1000, device
//   0xc0xx) into one switch for its bandwidth model; nvidia-smi does not, and
//   neither does this reader: nested switches stay nested (PXB).
// * A <pci> of class 0300/0302/0380/1200, or holding a <gpu> element, is a
//   GPU (a BMC's VGA chip without <gpu> is not). Vendor from the pci vendor
//   attribute; hand-written files often omit it: a GPU with RCCL's gcn
//   attribute, xGMI links or in a version="2" (RCCL) file is AMD, otherwise
//   NVIDIA (NCCL files describe NVIDIA GPUs).
// * <nvlink target=BUSID count=N tclass=C>: a target that is a GPU of this
//   host is a direct link (count bonded links; NCCL writes both directions).
//   A target of class 0x0680 is an NVSwitch: every two GPUs that reach
//   NVSwitches are linked through them, count = the smaller of the two GPUs'
//   total NVSwitch link counts (HGX H100/H200: 5+5+4+4 = 18 -> NV18; HGX B200
//   and GB300 name one placeholder switch fffffff:ff:ff.0 with count 18).
//   Other targets (a CPU, tclass 0x0604, on POWER9; a GPU of another host)
//   are not GPU-GPU links. A target equal to the GPU's own bus id (Azure NC
//   A100 v4's hand-written file) is ignored. <xgmi> is the same for AMD
//   (LinkKind::XGMI). <c2c> (Grace <-> GPU) is a GPU-CPU link, not a GPU-GPU
//   link: it is read past.
// * <nic><net name=... port=P speed=MBPS gdr=G guid=.../></nic>: one Nic per
//   net name (NCCL writes each port of a dual-port card as its own net with
//   its own RDMA device name, e.g. mlx5_0/mlx5_1 under one <pci>). A <nic>
//   inside a <pci> gets that PCI object; one directly under a <cpu> (socket
//   interfaces like eth0, flattened files) gets only the cpu's NUMA node, or
//   none when the same name appears under several <cpu> elements.
//   RDMA or socket: NCCL's socket transport reports port 0 (and gdr 0,
//   guid = its own index); RDMA transports (IB verbs, EFA/OFI, cxi) report the
//   device's port number, >= 1. So a net with a port attribute is RDMA iff
//   port >= 1; without one, iff its name looks like an RDMA device name.
//   Speed is Mb/s.
// * A NIC-class <pci> (0200, 0207, 0280, 0c06) with no <nic> inside (the
//   cloud vendors' hand-written files) is a NIC whose RDMA device name the file
//   does not give: it is named by its PCI bus id and counted as RDMA, since
//   those files list exactly the NICs NCCL is to use (a warning says so).
// * Multi-node dumps (GB300 NVL72: several hosts, host_hash differs per
//   <cpu>): the node is the host of the first <cpu>; the other hosts' <cpu>
//   elements are skipped and a warning says how many hosts and GPUs were.
// * Bus ids with domain ffff (hand-written placeholder switches) are kept in
//   the tree but marked has_address = false.
#include "topo/sources/nccl_xml_source.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"
#include "topo/sources/smt_siblings.hpp"
#include "topo/sources/xml_document.hpp"

namespace gputopo {

namespace {

constexpr unsigned kClassBridge = 0x0604;
constexpr unsigned kClassNvSwitch = 0x0680;

// base 0: "0x..." hex, otherwise decimal (a leading 0 is not octal here).
bool parse_uint(const std::string& text, unsigned long long& out, int base = 0) {
    if (text.empty() || text[0] == '-' || text[0] == '+' || text[0] == ' ') return false;
    if (base == 0) base = (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) ? 16 : 10;
    try {
        size_t used = 0;
        out = std::stoull(text, &used, base);
        return used == text.size();
    } catch (...) {
        return false;
    }
}

// "0x030200" (class, subclass, prog-if) -> 0x0302; "0x0302" -> 0x0302.
unsigned parse_class(const std::string& text) {
    unsigned long long v = 0;
    if (!parse_uint(text, v)) return 0;
    std::string digits = text;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) digits = digits.substr(2);
    if (digits.size() > 4) v >>= 8;
    return static_cast<unsigned>(v & 0xffff);
}

unsigned parse_hex_id(const std::string& text) {
    unsigned long long v = 0;
    return parse_uint(text, v) ? static_cast<unsigned>(v & 0xffff) : 0;
}

// Decimal attributes (numaid, count, port, speed).
long long parse_int_or(const std::string& text, long long fallback) {
    unsigned long long v = 0;
    if (!parse_uint(text, v, 10) || v > 0x7fffffffull) return fallback;
    return static_cast<long long>(v);
}

bool is_gpu_class(unsigned cls) { return cls == 0x0300 || cls == 0x0302 || cls == 0x0380 || cls == 0x1200; }
bool is_nic_class(unsigned cls) { return cls == 0x0200 || cls == 0x0207 || cls == 0x0280 || cls == 0x0c06; }

// A BMC's or motherboard's VGA chip: ASPEED, Matrox, ATI ES1000.
bool is_bmc_vga(unsigned vendor, unsigned device) {
    return vendor == 0x1a03 || vendor == 0x102b || (vendor == 0x1002 && device == 0x515e);
}

bool rdma_device_name(const std::string& name) {
    static const char* const prefixes[] = {"mlx4_", "mlx5_", "ibp", "rdmap", "efa", "bnxt_re", "cxi", "irdma",
                                           "ionic", "hfi1", "qedr", "erdma", "rocep", "roceP", "hns", "mana",
                                           "rxe", "siw", "rdma_"};
    for (const char* p : prefixes)
        if (name.compare(0, std::strlen(p), p) == 0) return true;
    return false;
}

struct PendingLink {
    int gpu = -1;          // position in node.gpus (push order)
    std::string target;
    int count = 0;
    unsigned tclass = 0;
    LinkKind kind = LinkKind::NVLink;
};

class NcclReader {
public:
    explicit NcclReader(const std::string& name) : name_(name) {}

    Node read(const std::string& text) { return read(XmlDocument(text, name_)); }

    Node read(const XmlDocument& doc) {
        if (!doc.ok())
            fail("is not well-formed XML (" + doc.error() + "); expected NCCL topology XML (<system version=\"1\">)");
        XmlElement root = doc.root();
        if (root.name() != "system")
            fail("is not NCCL topology XML (root element <" + root.name() +
                 ">); expected <system version=\"1\"> as NCCL_TOPO_DUMP_FILE writes it");
        rccl_ = root.attr("version") == "2";
        node_.source = "NCCL XML " + name_;

        bool have_host = false;
        std::string host;
        std::set<std::string> other_hosts;
        int skipped_gpus = 0;
        int cpus_seen = 0;
        for (const XmlElement& cpu : root.children()) {
            if (cpu.name() != "cpu") continue;
            ++cpus_seen;
            const std::string h = cpu.attr("host_hash");
            if (!have_host) {
                host = h;
                have_host = true;
            } else if (h != host) {
                other_hosts.insert(h);
                skipped_gpus += count_gpus(cpu);
                continue;
            }
            read_cpu(cpu);
        }
        if (cpus_seen == 0) fail("has no <cpu> element; expected NCCL topology XML with <cpu> elements holding <pci> devices");
        if (node_.gpus.empty())
            fail("describes no GPUs (no <gpu> element and no <pci> of a GPU class): a partial NCCL_TOPO_FILE that "
                 "only lists PCI switches or NICs cannot be used on its own; expected a full NCCL topology dump "
                 "(NCCL_TOPO_DUMP_FILE) or an hwloc XML export (lstopo --of xml)");
        if (!other_hosts.empty())
            node_.warnings.push_back(name_ + " describes " + std::to_string(other_hosts.size() + 1) +
                                     " hosts (host_hash differs between <cpu> elements); read only the first (host_hash " +
                                     host + ", " + std::to_string(node_.gpus.size()) + " GPUs) and skipped " +
                                     std::to_string(other_hosts.size()) + " other host(s) with " +
                                     std::to_string(skipped_gpus) + " GPUs");
        if (gpus_without_element_ > 0)
            node_.warnings.push_back(name_ + ": " + std::to_string(gpus_without_element_) +
                                     " GPU(s) have no <gpu> element (hand-written file): their NVLink/xGMI links are unknown");
        if (nics_named_by_pci_ > 0)
            node_.warnings.push_back(name_ + ": " + std::to_string(nics_named_by_pci_) +
                                     " NIC(s) have no <net> element (hand-written file): they are named by their PCI "
                                     "bus id, not by their RDMA device name");
        resolve_links();
        node_.finalize();
        infer_smt_cores(node_, all_x86_);  // NCCL writes no cores (topo/sources/smt_siblings.hpp)
        return std::move(node_);
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw TopologyError(name_ + " " + what); }

    static int count_gpus(const XmlElement& e) {
        int n = e.name() == "gpu" ? 1 : 0;
        for (const auto& c : e.children()) n += count_gpus(c);
        return n;
    }

    void read_cpu(const XmlElement& cpu) {
        if (cpu.attr("arch") != "x86_64") all_x86_ = false;
        int numa = -1;
        if (cpu.has("numaid")) {
            long long v = parse_int_or(cpu.attr("numaid"), -1);
            if (v < 0 || v > 1000000)
                fail("line " + std::to_string(cpu.line()) + ": <cpu numaid=\"" + cpu.attr("numaid") +
                     "\"> is not a NUMA node number");
            numa = static_cast<int>(v);
        }
        CpuSet cpus;
        if (cpu.has("affinity")) {
            try {
                cpus = CpuSet::parse_hex_mask(cpu.attr("affinity"));
            } catch (const ParseError& e) {
                fail("line " + std::to_string(cpu.line()) + ": <cpu affinity> is not a hex CPU mask (" + e.what() + ")");
            }
        }
        if (numa >= 0) {
            auto it = std::find_if(node_.numa_nodes.begin(), node_.numa_nodes.end(),
                                   [&](const NumaNode& n) { return n.os_index == numa; });
            if (it == node_.numa_nodes.end()) {
                NumaNode n;
                n.os_index = numa;
                n.cpus = cpus;
                node_.numa_nodes.push_back(n);
            } else {
                it->cpus |= cpus;
            }
        }
        node_.cpus |= cpus;
        cpu_numa_ = numa;
        cpu_cpus_ = cpus;
        for (const XmlElement& child : cpu.children()) {
            if (child.name() == "pci") {
                PciObject hb;
                hb.kind = PciKind::HostBridge;
                hb.numa = numa;
                hb.local_cpus = cpus;
                node_.pci.push_back(hb);
                read_pci(child, static_cast<int>(node_.pci.size()) - 1);
            } else if (child.name() == "nic") {
                read_nic(child, -1, nullptr);
            }
        }
    }

    int add_pci(const PciObject& o) {
        node_.pci.push_back(o);
        return static_cast<int>(node_.pci.size()) - 1;
    }

    void read_pci(const XmlElement& e, int parent) {
        PciObject o;
        o.parent = parent;
        o.class_id = parse_class(e.attr("class"));
        o.vendor_id = parse_hex_id(e.attr("vendor"));
        o.device_id = parse_hex_id(e.attr("device"));
        const std::string busid = e.attr("busid");
        PciAddress addr;
        const bool parsed = PciAddress::try_parse(busid, addr);
        o.has_address = parsed && addr.domain < 0xffff;
        if (parsed) o.address = addr;

        const auto kids = e.children();
        bool has_pci_children = false, has_gpu = false, has_nic = false;
        for (const auto& k : kids) {
            has_pci_children |= k.name() == "pci";
            has_gpu |= k.name() == "gpu";
            has_nic |= k.name() == "nic";
        }
        const bool bridge = o.class_id == kClassBridge || (has_pci_children && !has_gpu && !has_nic);
        o.kind = bridge ? PciKind::Bridge : PciKind::Device;
        const int self = add_pci(o);

        if (bridge) {
            for (const auto& k : kids) {
                if (k.name() == "pci") {
                    // The switch's downstream port, which NCCL leaves out.
                    PciObject port;
                    port.kind = PciKind::Bridge;
                    port.parent = self;
                    port.class_id = kClassBridge;
                    read_pci(k, add_pci(port));
                } else if (k.name() == "nic") {
                    read_nic(k, self, &o);
                }
            }
            return;
        }

        const bool gpu_class = is_gpu_class(o.class_id) && !is_bmc_vga(o.vendor_id, o.device_id);
        if (has_gpu || gpu_class) {
            if (!parsed)
                fail("line " + std::to_string(e.line()) + ": GPU <pci busid=\"" + busid +
                     "\"> is not a PCI bus id (expected dddd:bb:dd.f)");
            if (std::any_of(node_.gpus.begin(), node_.gpus.end(), [&](const Gpu& g) { return g.pci == addr; }))
                node_.warnings.push_back(name_ + " line " + std::to_string(e.line()) + ": GPU " + addr.to_string() +
                                         " is listed twice; the second listing is ignored");
            else
                add_gpu(e, self, addr, o);
        }
        for (const auto& k : kids) {
            if (k.name() == "nic") read_nic(k, self, &node_.pci[static_cast<size_t>(self)]);
            else if (k.name() == "pci") read_pci(k, self);  // not expected below a device; keep the tree
        }
        if (!has_nic && !has_gpu && !gpu_class && is_nic_class(o.class_id) && parsed) {
            // A hand-written file's NIC slot without a <nic><net> element.
            Nic n;
            n.name = addr.to_string();
            n.pci = addr;
            n.pci_object = self;
            n.numa = cpu_numa_;
            n.local_cpus = cpu_cpus_;
            n.rdma = true;
            node_.nics.push_back(n);
            ++nics_named_by_pci_;
        }
    }

    void add_gpu(const XmlElement& pci_el, int pci_index, const PciAddress& addr, const PciObject& o) {
        Gpu g;
        g.pci = addr;
        g.pci_object = pci_index;
        g.numa = cpu_numa_;
        g.local_cpus = cpu_cpus_;
        const int pos = static_cast<int>(node_.gpus.size());
        bool has_element = false, amd_hint = rccl_;
        for (const auto& ge : pci_el.children()) {
            if (ge.name() != "gpu") continue;
            has_element = true;
            if (ge.has("gcn")) amd_hint = true;
            for (const auto& l : ge.children()) {
                const bool nv = l.name() == "nvlink", xgmi = l.name() == "xgmi";
                if (!nv && !xgmi) continue;  // <c2c>: GPU-CPU, not GPU-GPU
                if (xgmi) amd_hint = true;
                PendingLink p;
                p.gpu = pos;
                p.target = l.attr("target");
                p.count = static_cast<int>(parse_int_or(l.attr("count"), 1));
                p.tclass = parse_class(l.attr("tclass"));
                p.kind = xgmi ? LinkKind::XGMI : LinkKind::NVLink;
                if (p.count > 0) pending_.push_back(p);
            }
        }
        if (o.vendor_id != 0 && o.vendor_id != 0xffff)
            g.vendor = vendor_from_pci_id(o.vendor_id);
        else
            g.vendor = amd_hint ? Vendor::Amd : Vendor::Nvidia;
        if (!has_element) ++gpus_without_element_;
        node_.gpus.push_back(g);
    }

    // `pci` is the PciObject the <nic> sits in (nullptr directly under <cpu>).
    void read_nic(const XmlElement& nic_el, int pci_index, const PciObject* pci) {
        for (const auto& net : nic_el.children()) {
            if (net.name() != "net") continue;
            const std::string name = net.attr("name");
            if (name.empty())
                fail("line " + std::to_string(net.line()) + ": <net> has no name attribute; expected <net name=\"mlx5_0\" ...>");
            const long long port = parse_int_or(net.attr("port"), -1);
            const bool rdma = net.has("port") ? port >= 1 : rdma_device_name(name);
            const double gbps = static_cast<double>(parse_int_or(net.attr("speed"), 0)) / 1000.0;

            auto it = std::find_if(node_.nics.begin(), node_.nics.end(), [&](const Nic& n) { return n.name == name; });
            if (it == node_.nics.end()) {
                Nic n;
                n.name = name;
                if (pci) {
                    n.pci = pci->address;
                    n.pci_object = pci_index;
                }
                n.numa = cpu_numa_;
                n.local_cpus = cpu_cpus_;
                n.rdma = rdma;
                n.speed_gbps = gbps;
                if (!rdma) n.netdevs.push_back(name);  // a socket interface is named by its netdev
                node_.nics.push_back(n);
                it = node_.nics.end() - 1;
            } else if (it->pci_object < 0 && pci_index < 0 && it->numa != cpu_numa_) {
                // The same interface listed under several <cpu>s: NCCL does not know its locality.
                it->numa = -1;
                it->local_cpus = CpuSet();
            }
            if (rdma && port >= 1 &&
                std::none_of(it->ports.begin(), it->ports.end(), [&](const NicPort& p) { return p.number == port; })) {
                NicPort p;
                p.number = static_cast<int>(port);
                p.rate_gbps = gbps;
                it->ports.push_back(p);
            }
        }
    }

    void resolve_links() {
        std::map<PciAddress, int> gpu_at;
        for (size_t i = 0; i < node_.gpus.size(); ++i) gpu_at[node_.gpus[i].pci] = static_cast<int>(i);
        std::vector<int> switch_links(node_.gpus.size(), 0);
        for (const auto& p : pending_) {
            PciAddress t;
            const bool parsed = PciAddress::try_parse(p.target, t);
            auto it = parsed ? gpu_at.find(t) : gpu_at.end();
            if (it != gpu_at.end()) {
                if (it->second == p.gpu) continue;  // a link to itself: nothing to record
                GpuLink l;
                l.a = p.gpu;
                l.b = it->second;
                l.kind = p.kind;
                l.count = p.count;
                node_.links.push_back(l);
            } else if (p.kind == LinkKind::NVLink && p.tclass == kClassNvSwitch) {
                switch_links[static_cast<size_t>(p.gpu)] += p.count;
            }
            // Anything else: a CPU (POWER9 NVLink) or a GPU of another host.
        }
        for (size_t a = 0; a < switch_links.size(); ++a) {
            if (switch_links[a] == 0) continue;
            for (size_t b = a + 1; b < switch_links.size(); ++b) {
                if (switch_links[b] == 0) continue;
                GpuLink l;
                l.a = static_cast<int>(a);
                l.b = static_cast<int>(b);
                l.kind = LinkKind::NVLink;
                l.count = std::min(switch_links[a], switch_links[b]);
                l.via_switch = true;
                node_.links.push_back(l);
            }
        }
    }

    std::string name_;
    Node node_;
    bool rccl_ = false;
    int cpu_numa_ = -1;
    CpuSet cpu_cpus_;
    std::vector<PendingLink> pending_;
    int gpus_without_element_ = 0;
    int nics_named_by_pci_ = 0;
    bool all_x86_ = true;  // every <cpu> says arch="x86_64"
};

}  // namespace

Node read_nccl_xml_buffer(const std::string& xml, const std::string& name) { return NcclReader(name).read(xml); }

Node read_nccl_xml_document(const XmlDocument& doc, const std::string& name) { return NcclReader(name).read(doc); }

Node read_nccl_xml(const std::string& path) {
    ReadFailure why;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{}, &why);
    if (!text) throw TopologyError("NCCL topology file " + path + " " + why.what);
    return read_nccl_xml_buffer(*text, path);
}

}  // namespace gputopo
