#include "topo/doctor.hpp"
#include "topo/mnnvl.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "topo/output/json_writer.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/sources/nic_state.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo {

const char* check_status_name(CheckStatus s) {
    switch (s) {
        case CheckStatus::Ok: return "ok";
        case CheckStatus::Warn: return "warn";
        case CheckStatus::Fail: return "fail";
        case CheckStatus::Skip: return "skip";
    }
    return "skip";
}

bool DoctorReport::ok() const {
    return std::none_of(checks.begin(), checks.end(), [](const DoctorCheck& c) { return c.status == CheckStatus::Fail; });
}

const DoctorCheck* DoctorReport::check(const std::string& name) const {
    for (const auto& c : checks)
        if (c.name == name) return &c;
    return nullptr;
}

std::string DoctorReport::summary() const {
    std::string failed, warned;
    int n_ok = 0, n_warn = 0, n_skip = 0;
    for (const auto& c : checks) {
        if (c.status == CheckStatus::Fail) failed += (failed.empty() ? "" : ", ") + c.name;
        if (c.status == CheckStatus::Warn) {
            ++n_warn;
            warned += (warned.empty() ? "" : ", ") + c.name;
        }
        if (c.status == CheckStatus::Ok) ++n_ok;
        if (c.status == CheckStatus::Skip) ++n_skip;
    }
    std::string s = "gputopo doctor: ";
    s += failed.empty() ? "OK" : "FAIL (" + failed + ")";
    s += "; " + std::to_string(n_ok) + " ok, " + std::to_string(n_warn) + " warn";
    if (!warned.empty()) s += " (" + warned + ")";
    if (n_skip) s += ", " + std::to_string(n_skip) + " skipped";
    return s;
}

namespace {

struct Check {
    DoctorCheck c;
    explicit Check(const std::string& name) { c.name = name; }
    void fail(const std::string& d) {
        c.status = CheckStatus::Fail;
        c.details.push_back(d);
    }
    void warn(const std::string& d) {
        if (c.status != CheckStatus::Fail) c.status = CheckStatus::Warn;
        c.details.push_back(d);
    }
    void note(const std::string& d) { c.details.push_back(d); }
    DoctorCheck done(const std::string& headline) {
        c.summary = headline;
        if (c.summary.empty() && !c.details.empty()) c.summary = c.details.front();
        return c;
    }
};

std::string gpu_name(const Gpu& g) { return "GPU " + std::to_string(g.index) + " (" + g.pci.to_string() + ")"; }

bool has_nvidia(const Node& n) {
    return std::any_of(n.gpus.begin(), n.gpus.end(), [](const Gpu& g) { return g.vendor == Vendor::Nvidia; });
}

const Gpu* gpu_by_pci(const Node& n, const PciAddress& a) {
    for (const auto& g : n.gpus)
        if (g.pci == a) return &g;
    return nullptr;
}

struct Context {
    const Node* expected = nullptr;
    Node observed;
    NvmlSnapshot nvml;
    bool offline = false;  // the node is a topology file (doctor --topology), not this machine
};

DoctorCheck check_nvml(const Context& x) {
    Check k("nvml");
    bool want = has_nvidia(x.observed) || (x.expected && has_nvidia(*x.expected));
    if (!x.nvml.available) {
        // A file checked where no NVIDIA driver is installed (a login node): no driver to ask.
        if (want && x.offline && x.nvml.reason.rfind("cannot load ", 0) == 0) {
            k.c.status = CheckStatus::Skip;
            return k.done("offline (a topology file): NVML not read here (" + x.nvml.reason +
                          "); the driver checks need the node itself");
        }
        if (want) {
            k.fail("NVML not available: " + x.nvml.reason);
            return k.done("");
        }
        k.c.status = CheckStatus::Skip;
        return k.done("no NVIDIA GPU here (" + x.nvml.reason + ")");
    }
    for (const auto& w : x.nvml.warnings) k.warn(w);
    return k.done("driver " + x.nvml.driver_version + ", " + std::to_string(x.nvml.gpus.size()) + " GPU(s)");
}

DoctorCheck check_gpus(const Context& x) {
    Check k("gpus");
    const Node& o = x.observed;
    if (x.expected) {
        for (const auto& eg : x.expected->gpus) {
            const Gpu* g = gpu_by_pci(o, eg.pci);
            bool visible = g != nullptr;
            if (visible && eg.vendor == Vendor::Nvidia && x.nvml.available) visible = x.nvml.find(eg.pci) != nullptr;
            if (!visible) k.fail("expected GPU " + eg.pci.to_string() + " is not visible");
        }
        for (const auto& g : o.gpus)
            if (!gpu_by_pci(*x.expected, g.pci)) k.warn(gpu_name(g) + " is not in the reference");
    }
    if (x.nvml.available) {
        for (const auto& g : o.gpus)
            if (g.vendor == Vendor::Nvidia && !x.nvml.find(g.pci))
                k.fail(gpu_name(g) + " is on the PCI bus but the driver does not see it");
        for (const auto& ng : x.nvml.gpus)
            for (const auto& e : ng.errors) k.fail("GPU " + ng.pci.to_string() + ": " + e);
    }
    size_t want = x.expected ? x.expected->gpus.size() : o.gpus.size();
    return k.done(std::to_string(o.gpus.size()) + " GPU(s) visible" +
                  (x.expected ? ", " + std::to_string(want) + " expected" : std::string()));
}

DoctorCheck check_nvlink(const Context& x) {
    Check k("nvlink");
    if (!x.nvml.available) {
        k.c.status = CheckStatus::Skip;
        return k.done("NVML not available");
    }
    int up = 0, down = 0;
    for (const auto& ng : x.nvml.gpus) {
        int gu = 0, gd = 0, noisy = 0;
        int64_t replay = 0, recovery = 0, crc = 0;
        for (const auto& l : ng.links) {
            (l.active ? gu : gd)++;
            int64_t r = std::max<int64_t>(l.replay_errors, 0), v = std::max<int64_t>(l.recovery_errors, 0),
                    c = std::max<int64_t>(l.crc_flit_errors, 0) + std::max<int64_t>(l.crc_data_errors, 0);
            if (r + v + c > 0) ++noisy;
            replay += r;
            recovery += v;
            crc += c;
        }
        if (noisy)
            k.warn("GPU " + ng.pci.to_string() + ": errors on " + std::to_string(noisy) + " NVLink(s) (replay " +
                   std::to_string(replay) + ", recovery " + std::to_string(recovery) + ", CRC " + std::to_string(crc) +
                   ")");
        up += gu;
        down += gd;
        if (gd > 0 && gu > 0)
            k.fail("GPU " + ng.pci.to_string() + ": " + std::to_string(gd) + " of " + std::to_string(gu + gd) +
                   " NVLinks down");
        else if (gd > 0 && !x.expected)
            k.warn("GPU " + ng.pci.to_string() + ": all " + std::to_string(gd) + " NVLinks down");
    }
    if (x.expected) {
        const Node& o = x.observed;
        for (const auto& el : x.expected->links) {
            if (el.kind != LinkKind::NVLink || el.count <= 0) continue;
            const Gpu* ea = x.expected->gpu(el.a);
            const Gpu* eb = x.expected->gpu(el.b);
            if (!ea || !eb) continue;
            const Gpu* a = gpu_by_pci(o, ea->pci);
            const Gpu* b = gpu_by_pci(o, eb->pci);
            if (!a || !b) continue;  // reported by "gpus"
            const GpuLink* l = o.link(a->index, b->index);
            int have = l ? l->count : 0;
            if (have < el.count)
                k.fail(ea->pci.to_string() + " <-> " + eb->pci.to_string() + ": NV" + std::to_string(have) +
                       ", expected NV" + std::to_string(el.count));
        }
    }
    if (up + down == 0) {
        k.c.status = k.c.status == CheckStatus::Ok ? CheckStatus::Skip : k.c.status;
        return k.done("no NVLink on this node");
    }
    return k.done(std::to_string(up) + " NVLink(s) up" + (down ? ", " + std::to_string(down) + " down" : ""));
}

DoctorCheck check_fabric(const Context& x) {
    Check k("fabric");
    std::set<std::pair<std::string, int>> cliques;
    int reporting = 0;
    for (const auto& ng : x.nvml.gpus) {
        if (ng.fabric_state < 0 || ng.fabric_state == 0) continue;  // not an NVLink-fabric GPU
        ++reporting;
        if (ng.fabric_state != 3)
            k.warn("GPU " + ng.pci.to_string() + ": NVLink fabric registration not complete (state " +
                   std::to_string(ng.fabric_state) + "): is the fabric manager / IMEX running?");
        else if (ng.fabric_status != 0)
            k.fail("GPU " + ng.pci.to_string() + ": NVLink fabric registration failed (NVML status " +
                   std::to_string(ng.fabric_status) + ")");
        else
            cliques.insert({ng.fabric_cluster_uuid, ng.fabric_clique});
    }
    if (cliques.size() > 1) k.warn("the node's GPUs are in " + std::to_string(cliques.size()) + " different NVLink cliques");
    if (reporting == 0) {
        k.c.status = CheckStatus::Skip;
        return k.done("no multi-node NVLink fabric");
    }
    std::string ids;
    for (const auto& c : cliques) ids += (ids.empty() ? "" : ", ") + c.first + "/" + std::to_string(c.second);
    return k.done("cluster/clique " + ids);
}

// NCCL's multi-node NVLink prerequisites (topo/mnnvl.hpp): the user's
// environment is a warning, the node's state a failure.
DoctorCheck check_mnnvl(const Context& x, const DoctorInputs& in) {
    Check k("mnnvl");
    MnnvlInputs m;
    for (const auto& ng : x.nvml.gpus)
        m.gpus.push_back({ng.pci.to_string(), ng.fabric_state, ng.fabric_status, ng.fabric_health_mask,
                          ng.fabric_health_summary, ng.fabric_cluster_uuid, ng.fabric_clique, ng.fabric_cliques});
    if (std::none_of(m.gpus.begin(), m.gpus.end(), [](const FabricGpu& g) { return g.state > 0; })) {
        k.c.status = CheckStatus::Skip;
        return k.done("no multi-node NVLink fabric");
    }
    m.imex_dir = in.imex_dir.empty() ? kImexChannelsDir : in.imex_dir;
    m.imex = probe_imex_channels(m.imex_dir);
    m.nccl_cumem_enable = in.nccl_cumem_enable;
    m.nccl_mnnvl_enable = in.nccl_mnnvl_enable;
    m.peers = in.peers;
    for (const std::string& p : mnnvl_problems(m)) {
        if (p.rfind("NCCL_", 0) == 0) k.warn(p);
        else k.fail(p);
    }
    std::string ids;
    for (const auto& c : fabric_cliques(m.gpus)) ids += (ids.empty() ? "" : ", ") + c;
    return k.done(k.c.details.empty() ? "ready: IMEX channel " + m.imex_dir + ", clique " + ids : "");
}

DoctorCheck check_nics(const Context& x) {
    Check k("nics");
    const Node& o = x.observed;
    int active = 0, rdma = 0, unknown_state = 0;
    std::map<std::string, double> best_rate;  // link layer -> highest active rate
    for (const auto& n : o.nics)
        for (const auto& p : n.ports)
            if (n.rdma && !n.storage && p.state == "ACTIVE")
                best_rate[p.link_layer] = std::max(best_rate[p.link_layer], p.rate_gbps);
    for (const auto& n : o.nics) {
        if (!n.rdma || n.storage) continue;
        ++rdma;
        bool up = n.usable() && !n.ports.empty();
        bool unknown = std::all_of(n.ports.begin(), n.ports.end(), [](const NicPort& p) { return p.state.empty(); });
        if (up && !unknown) ++active;
        if (unknown) ++unknown_state;
        const Nic* en = x.expected ? x.expected->nic(n.name) : nullptr;
        if (!n.usable()) {
            std::string d = n.name + ": no port ACTIVE";
            if (en && en->usable())
                k.fail(d);
            else
                k.warn(d);
        }
        for (const auto& p : n.ports) {
            if (p.state != "ACTIVE" || p.rate_gbps <= 0) continue;
            double want = en ? en->speed_gbps : best_rate[p.link_layer];
            if (want > 0 && p.rate_gbps + 1e-9 < want) {
                std::string d = n.name + " port " + std::to_string(p.number) + ": " +
                                std::to_string(static_cast<long long>(p.rate_gbps)) + " Gb/s, expected " +
                                std::to_string(static_cast<long long>(want));
                if (en)
                    k.fail(d);
                else
                    k.warn(d);
            }
        }
    }
    if (x.expected)
        for (const auto& en : x.expected->nics)
            if (en.usable() && !o.nic(en.name)) k.fail("expected RDMA NIC " + en.name + " is missing");
    for (const auto& f : nic_fallbacks(o)) k.warn(describe(f));
    if (rdma == 0 && k.c.status == CheckStatus::Ok) {
        k.c.status = CheckStatus::Skip;
        return k.done("no RDMA NIC");
    }
    // A port whose state nobody read (an NCCL topology file has none) is not ACTIVE.
    const std::string unknown_text = std::to_string(unknown_state) + " of " + std::to_string(rdma) +
                                     " RDMA NIC(s) with port state unknown (not read from sysfs)";
    if (unknown_state == rdma && k.c.status == CheckStatus::Ok) {
        k.c.status = CheckStatus::Skip;
        return k.done(unknown_text);
    }
    if (unknown_state > 0) k.warn(unknown_text);
    return k.done(std::to_string(active) + " of " + std::to_string(rdma) + " RDMA NIC(s) with an ACTIVE port");
}

DoctorCheck check_numa(const Context& x) {
    Check k("numa");
    const Node& o = x.observed;
    int numas = 0;
    for (const auto& n : o.numa_nodes)
        if (!n.cpus.empty()) ++numas;
    for (const auto& g : o.gpus) {
        const NvmlGpuInfo* ng = x.nvml.available ? x.nvml.find(g.pci) : nullptr;
        if (numas > 1 && g.numa < 0) k.warn(gpu_name(g) + ": NUMA node unknown (tasks cannot be bound near it)");
        if (ng && !ng->cpus.empty() && !g.local_cpus.empty() && !ng->cpus.intersects(g.local_cpus))
            k.fail(gpu_name(g) + ": the driver's CPU affinity " + ng->cpus.to_list() +
                   " does not overlap the PCI locality " + g.local_cpus.to_list());
        if (ng && numas > 1 && !ng->cpus.empty() && ng->cpus == o.cpus)
            k.warn(gpu_name(g) + ": the driver reports affinity to every CPU (NUMA disabled in firmware?)");
        if (x.expected) {
            const Gpu* eg = gpu_by_pci(*x.expected, g.pci);
            if (eg && eg->numa >= 0 && g.numa >= 0 && eg->numa != g.numa)
                k.fail(gpu_name(g) + ": NUMA node " + std::to_string(g.numa) + ", expected " + std::to_string(eg->numa));
        }
    }
    if (o.gpus.empty()) {
        k.c.status = CheckStatus::Skip;
        return k.done("no GPU");
    }
    return k.done(std::to_string(o.gpus.size()) + " GPU(s) over " + std::to_string(numas) + " NUMA node(s)");
}

DoctorCheck check_health(const Context& x) {
    Check k("health");
    if (!x.nvml.available) {
        k.c.status = CheckStatus::Skip;
        return k.done("NVML not available");
    }
    size_t clean = 0;
    for (const auto& ng : x.nvml.gpus) {
        const size_t before = k.c.details.size();
        const NvmlHealth& h = ng.health;
        std::string g = "GPU " + ng.pci.to_string() + ": ";
        if (h.ecc_uncorrected_volatile > 0)
            k.fail(g + std::to_string(h.ecc_uncorrected_volatile) + " uncorrectable ECC error(s) since the driver loaded");
        if (h.remap_failure > 0) k.fail(g + "row remapping failed: the GPU needs service");
        if (h.remap_pending > 0) k.warn(g + "row remapping pending: reset the GPU when it is idle");
        if (h.retired_pages_pending > 0) k.warn(g + "page retirement pending: reset the GPU when it is idle");
        if (h.retired_pages_dbe > 0)
            k.note(g + std::to_string(h.retired_pages_dbe) + " page(s) retired for double-bit errors");
        if (k.c.details.size() == before) ++clean;
    }
    return k.done(std::to_string(clean) + " of " + std::to_string(x.nvml.gpus.size()) + " GPU(s) without health findings");
}

}  // namespace

DoctorReport run_doctor(const DoctorInputs& in) {
    DoctorReport r;
    Context x;
    std::optional<Node> expected = in.expected;
    try {
        if (!expected && !in.expect_file.empty()) {
            expected = load_topology_file(in.expect_file);
            r.reference = in.expect_file;
        } else if (expected) {
            r.reference = expected->source;
        }
    } catch (const std::exception& e) {
        DoctorCheck c;
        c.name = "reference";
        c.status = CheckStatus::Fail;
        c.summary = e.what();
        r.checks.push_back(c);
        expected.reset();
    }
    x.offline = !in.base_topology_file.empty();
    try {
        if (in.base)
            x.observed = *in.base;
        else if (!in.base_topology_file.empty())
            x.observed = load_topology_file(in.base_topology_file);
        else
            x.observed = discover_this_machine();
    } catch (const std::exception& e) {
        DoctorCheck c;
        c.name = "topology";
        c.status = CheckStatus::Fail;
        c.summary = std::string("cannot read this node's topology: ") + e.what();
        r.checks.push_back(c);
    }
    try {
        if (in.live.nvml) x.nvml = read_nvml(in.live.nvml_library, in.live.nvml_timeout_s);
        else x.nvml.reason = "not read (disabled)";
        merge_nvml(x.observed, x.nvml);
        if (in.live.nic_state) merge_nic_state(x.observed, read_nic_state(in.live.sysfs_root));
        mark_storage_nics(x.observed, in.live.storage_nics);
        if (expected) mark_storage_nics(*expected, in.live.storage_nics);
        apply_nic_policy(x.observed, in.nic_policy);
        if (expected) apply_nic_policy(*expected, in.nic_policy);
        x.expected = expected ? &*expected : nullptr;
        r.checks.push_back(check_nvml(x));
        r.checks.push_back(check_gpus(x));
        r.checks.push_back(check_nvlink(x));
        r.checks.push_back(check_fabric(x));
        if (in.mnnvl) r.checks.push_back(check_mnnvl(x, in));
        r.checks.push_back(check_nics(x));
        r.checks.push_back(check_numa(x));
        r.checks.push_back(check_health(x));
    } catch (const std::exception& e) {
        DoctorCheck c;
        c.name = "doctor";
        c.status = CheckStatus::Fail;
        c.summary = std::string("internal error: ") + e.what();
        r.checks.push_back(c);
    }
    r.nvml_available = x.nvml.available;
    r.driver_version = x.nvml.driver_version;
    r.observed = std::move(x.observed);
    return r;
}

std::string doctor_table(const DoctorReport& r) {
    std::string out;
    for (const auto& c : r.checks) {
        std::string st = check_status_name(c.status);
        for (auto& ch : st) ch = static_cast<char>(ch - 'a' + 'A');
        std::string name = c.name;
        name.resize(std::max<size_t>(name.size(), 8), ' ');
        st.resize(5, ' ');
        out += st + " " + name + " " + c.summary + "\n";
        for (const auto& d : c.details)
            if (d != c.summary) out += "      - " + d + "\n";
    }
    if (!r.reference.empty()) out += "reference: " + r.reference + "\n";
    out += r.summary() + "\n";
    return out;
}

std::string doctor_json(const DoctorReport& r) {
    JsonWriter w(2);
    w.begin_object();
    w.key("schema_version").value(kJsonSchemaVersion);
    w.key("ok").value(r.ok());
    w.key("exit_code").value(r.exit_code());
    w.key("summary").value(r.summary());
    w.key("host").value(r.observed.hostname);
    w.key("reference").value(r.reference);
    w.key("nvml").value(r.nvml_available);
    w.key("driver").value(r.driver_version);
    w.key("checks").begin_array();
    for (const auto& c : r.checks) {
        w.begin_object();
        w.key("name").value(c.name);
        w.key("status").value(check_status_name(c.status));
        w.key("summary").value(c.summary);
        w.key("details").value(c.details);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return w.str() + "\n";
}

}  // namespace gputopo
