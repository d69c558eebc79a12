// gputopo nccl-topo: every shipped topology, written as NCCL topology XML,
// reads back through the project's NCCL-XML reader into the same GPUs, NICs,
// distance classes and links; real NCCL dumps keep their structure.
#include <catch2/catch.hpp>

#include <cstdio>
#include <dirent.h>
#include <unistd.h>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/core/errors.hpp"
#include "topo/output/nccl_topo_writer.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;

namespace {

std::vector<std::string> files_in(const std::string& sub) {
    std::vector<std::string> out;
    std::string dir = gputopo_test::topologies_dir() + "/" + sub;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            std::string n = e->d_name;
            if (n.size() > 4 && n.substr(n.size() - 4) == ".xml") out.push_back(dir + "/" + n);
        }
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// NCCL's XML has one level for "through the CPU": PHB and NODE read back alike.
std::string through_cpu(std::string label) { return label == "PHB" ? "NODE" : label; }

void check_round_trip(const Node& a, const Node& b) {
    REQUIRE(b.gpus.size() == a.gpus.size());
    for (size_t i = 0; i < a.gpus.size(); ++i) {
        CHECK(b.gpus[i].pci == a.gpus[i].pci);
        CHECK(b.gpus[i].vendor == a.gpus[i].vendor);
        if (a.gpus[i].numa >= 0) CHECK(b.gpus[i].numa == a.gpus[i].numa);
    }
    std::map<std::string, const Nic*> nb;
    for (const auto& n : b.nics) nb[n.name] = &n;
    REQUIRE(nb.size() == a.nics.size());
    for (const auto& n : a.nics) {
        INFO("NIC " << n.name);
        REQUIRE(nb.count(n.name) == 1);
        const Nic* r = nb[n.name];
        CHECK(r->rdma == n.rdma);
        if (n.pci_object >= 0) CHECK(r->pci == n.pci);
        if (n.numa >= 0) CHECK(r->numa == n.numa);
        CHECK(r->ports.size() == (n.rdma ? std::max<size_t>(n.ports.size(), 1) : 0));
    }
    for (size_t x = 0; x < a.gpus.size(); ++x) {
        for (size_t y = 0; y < a.gpus.size(); ++y) {
            INFO("GPU" << x << " GPU" << y);
            CHECK(through_cpu(gpu_gpu_path(b, static_cast<int>(x), static_cast<int>(y)).label()) ==
                  through_cpu(gpu_gpu_path(a, static_cast<int>(x), static_cast<int>(y)).label()));
        }
        for (size_t k = 0; k < a.nics.size(); ++k) {
            size_t kb = 0;
            while (kb < b.nics.size() && b.nics[kb].name != a.nics[k].name) ++kb;
            REQUIRE(kb < b.nics.size());
            INFO("GPU" << x << " " << a.nics[k].name);
            if (a.gpus[x].numa < 0 || a.nics[k].numa < 0) continue;  // locality unknown: no class to keep
            CHECK(through_cpu(gpu_nic_path(b, static_cast<int>(x), kb).label()) ==
                  through_cpu(gpu_nic_path(a, static_cast<int>(x), k).label()));
        }
    }
    std::vector<std::tuple<int, int, int, int, bool>> la, lb;
    for (const auto& l : a.links)
        if (l.kind != LinkKind::C2C) la.emplace_back(l.a, l.b, static_cast<int>(l.kind), l.count, l.via_switch);
    for (const auto& l : b.links)
        if (l.kind != LinkKind::C2C) lb.emplace_back(l.a, l.b, static_cast<int>(l.kind), l.count, l.via_switch);
    CHECK(lb == la);
}

}  // namespace

TEST_CASE("nccl-topo: every shipped topology reads back the same", "[nccltopo]") {
    std::vector<std::string> files = files_in("hwloc");
    auto nccl = files_in("nccl");
    files.insert(files.end(), nccl.begin(), nccl.end());
    REQUIRE(files.size() >= 35);
    int written = 0;
    for (const auto& f : files) {
        Node a;
        try {
            a = load_topology_file(f);
        } catch (const TopologyError&) {
            continue;  // not a usable topology (the loader's tests cover why)
        }
        INFO("topology " << f);
        std::string xml = nccl_topology_xml(a);
        CHECK(xml.rfind("<system version=\"1\">", 0) == 0);
        std::set<PciAddress> buses;
        for (const auto& g : a.gpus) buses.insert(g.pci);
        if (buses.size() != a.gpus.size()) {
            // GPU partitions sharing one PCI function (MI300A in CPX/TPX mode): one <gpu> each
            // under their <pci>, which the reader (one GPU per bus id) does not read back.
            size_t elements = 0;
            for (size_t p = xml.find("<gpu"); p != std::string::npos; p = xml.find("<gpu", p + 1)) ++elements;
            CHECK(elements == a.gpus.size());
            continue;
        }
        Node b;
        REQUIRE_NOTHROW(b = read_nccl_xml_buffer(xml, "generated from " + f));
        check_round_trip(a, b);
        ++written;
    }
    CHECK(written >= 33);
}

namespace {

// Structure of an NCCL dump from its text: GPU bus id -> (cpu numaid, nvlink (target class, target) -> count).
struct DumpGpu {
    std::string numa;
    std::map<std::string, int> links;  // "gpu:<busid>" or "nvswitch" -> total count
};

std::map<std::string, DumpGpu> dump_structure(const std::string& text) {
    std::map<std::string, DumpGpu> out;
    std::istringstream in(text);
    std::string line, numa, gpu;
    std::smatch m;
    std::regex cpu_re("<cpu [^>]*numaid=\"([0-9]+)\"");
    std::regex pci_re("<pci busid=\"([0-9a-fA-F:.]+)\"");
    std::regex gpu_re("<gpu[ >]");
    std::regex link_re("<nvlink target=\"([0-9a-fA-F:.]+)\" count=\"([0-9]+)\" tclass=\"(0x[0-9a-f]+)\"");
    std::string last_pci;
    std::set<std::string> seen_hosts;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, cpu_re)) numa = m[1];
        if (line.find("host_hash") != std::string::npos) {
            std::smatch h;
            if (std::regex_search(line, h, std::regex("host_hash=\"([0-9a-fx]+)\""))) {
                seen_hosts.insert(h[1]);
                if (seen_hosts.size() > 1) break;  // first host only, as the reader does
            }
        }
        if (std::regex_search(line, m, pci_re)) last_pci = m[1];
        if (std::regex_search(line, m, gpu_re)) {
            gpu = last_pci;
            out[gpu].numa = numa;
        }
        if (!gpu.empty() && std::regex_search(line, m, link_re)) {
            std::string cls = m[3];
            std::string key = cls == "0x068000" ? "nvswitch" : cls == "0x030200" ? "gpu:" + m[1].str() : "other";
            out[gpu].links[key] += std::stoi(m[2]);
        }
    }
    return out;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("nccl-topo: real NCCL dumps keep their structure", "[nccltopo]") {
    int dumps = 0;
    for (const auto& f : files_in("nccl")) {
        if (f.find("nccl-dump") == std::string::npos || f.find("rccl") != std::string::npos) continue;
        INFO("dump " << f);
        auto want = dump_structure(slurp(f));
        REQUIRE_FALSE(want.empty());
        Node node = load_topology_file(f);
        auto got = dump_structure(nccl_topology_xml(node));
        REQUIRE(got.size() == want.size());
        for (const auto& [bus, w] : want) {
            INFO("GPU " << bus);
            REQUIRE(got.count(bus) == 1);
            CHECK(got[bus].numa == w.numa);
            // Direct GPU links: same targets, same counts. NVSwitch links: the same total per GPU
            // (NCCL merges all NVSwitches into one node; the writer names one placeholder switch).
            std::map<std::string, int> wl = w.links;
            wl.erase("other");  // links to CPUs or another host's GPUs are not GPU-GPU links
            for (auto it = wl.begin(); it != wl.end();) {
                bool peer_here = it->first.rfind("gpu:", 0) != 0 || want.count(it->first.substr(4));
                it = peer_here ? std::next(it) : wl.erase(it);
            }
            CHECK(got[bus].links == wl);
        }
        ++dumps;
    }
    CHECK(dumps >= 6);
}

TEST_CASE("nccl-topo: file output is lowercase, atomic, and names the path on failure", "[nccltopo]") {
    Node node = load_topology_file(gputopo_test::topology(
        "nccl/oci-GB300-NVL72_2trays_2xGrace+4xGB300-per-tray_CX8_nccl-dump-2nodes.xml"));
    char tmpl[] = "/tmp/gputopo-nccltopo-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    std::string path = std::string(tmpl) + "/topo.xml";
    write_nccl_topology_file(node, path);
    std::string text = slurp(path);
    CHECK(text == nccl_topology_xml(node));
    std::smatch m;
    std::string::const_iterator from = text.cbegin();
    std::regex bus_re("busid=\"([^\"]+)\"");
    int buses = 0;
    while (std::regex_search(from, text.cend(), m, bus_re)) {
        std::string b = m[1];
        CHECK(b == std::regex_replace(b, std::regex("[A-F]"), "x"));  // no upper-case hex digit
        from = m.suffix().first;
        ++buses;
    }
    CHECK(buses >= 8);
    std::remove(path.c_str());
    rmdir(tmpl);
    try {
        write_nccl_topology_file(node, "/nonexistent-dir/topo.xml");
        FAIL("expected a TopologyError");
    } catch (const TopologyError& e) {
        CHECK(std::string(e.what()).find("/nonexistent-dir/topo.xml") != std::string::npos);
        CHECK(std::string(e.what()).rfind("gputopo: ", 0) == std::string::npos);  // the front ends add the prefix
    }
}
