// Pictures of a node (topo/output/svg_writer, dot_writer, picture_model) on
// every shipped topology: the SVG is well-formed XML (libxml2), names every
// GPU's bus id and every usable NIC, colours each task's GPUs in a plan; the
// PCIe tree keeps exactly the switches that decide PIX/PXB; Graphviz accepts
// the dot output when it is installed.
#include <catch2/catch.hpp>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/suggest.hpp"
#include "topo/output/dot_writer.hpp"
#include "topo/output/picture_model.hpp"
#include "topo/output/svg_writer.hpp"
#include "topo/plan/islands.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;

namespace {

// Every shipped topology the loader accepts (hwloc and NCCL/RCCL XML).
std::vector<std::pair<std::string, Node>> loadable_fixtures() {
    std::vector<std::string> files;
    for (const char* sub : {"hwloc", "nccl"})
        for (const auto& e : std::filesystem::directory_iterator(gputopo_test::topologies_dir() + "/" + sub))
            files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    std::vector<std::pair<std::string, Node>> out;
    for (const auto& f : files) {
        try {
            out.emplace_back(f, load_topology_file(f));
        } catch (const TopologyError&) {
            // not a usable topology on its own (the loader's tests say why)
        }
    }
    return out;
}

const std::vector<std::pair<std::string, Node>>& fixtures() {
    static const auto all = loadable_fixtures();
    return all;
}

Plan default_plan(const Node& node) {
    PlanRequest req;
    for (const auto& g : node.gpus) req.gpus.push_back(g.index);
    req.ntasks = req.gpus.empty() ? 1 : static_cast<int>(req.gpus.size());
    return make_plan(node, req);
}

// The SVG parsed by libxml2 (no network, no entities): the concatenated text
// of every <text> element, each followed by a newline, and the style
// attributes of every <rect>. Fails the test when the XML is not well-formed.
struct SvgContent {
    bool well_formed = false;
    std::string root;
    std::multiset<std::string> texts;
    std::vector<std::string> rect_styles;
    std::vector<std::string> rect_classes;
    std::map<std::string, std::pair<int, int>> text_at;  // text -> (x, y) of its first <text>
};

void collect(xmlNode* n, SvgContent& c) {
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE) continue;
        const std::string name = reinterpret_cast<const char*>(n->name);
        if (name == "text") {
            xmlChar* t = xmlNodeGetContent(n);
            const std::string text = t ? reinterpret_cast<const char*>(t) : "";
            c.texts.insert(text);
            xmlFree(t);
            xmlChar* x = xmlGetProp(n, reinterpret_cast<const xmlChar*>("x"));
            xmlChar* y = xmlGetProp(n, reinterpret_cast<const xmlChar*>("y"));
            if (x && y && !c.text_at.count(text))
                c.text_at[text] = {std::atoi(reinterpret_cast<const char*>(x)), std::atoi(reinterpret_cast<const char*>(y))};
            xmlFree(x);
            xmlFree(y);
        } else if (name == "rect") {
            xmlChar* s = xmlGetProp(n, reinterpret_cast<const xmlChar*>("style"));
            c.rect_styles.push_back(s ? reinterpret_cast<const char*>(s) : "");
            xmlFree(s);
            xmlChar* k = xmlGetProp(n, reinterpret_cast<const xmlChar*>("class"));
            c.rect_classes.push_back(k ? reinterpret_cast<const char*>(k) : "");
            xmlFree(k);
        }
        collect(n->children, c);
    }
}

SvgContent parse_svg(const std::string& svg) {
    SvgContent c;
    xmlDoc* doc = xmlReadMemory(svg.data(), static_cast<int>(svg.size()), "picture.svg", nullptr,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc) return c;
    c.well_formed = true;
    xmlNode* root = xmlDocGetRootElement(doc);
    c.root = root ? reinterpret_cast<const char*>(root->name) : "";
    if (root) collect(root, c);
    xmlFreeDoc(doc);
    return c;
}

bool has_text(const SvgContent& c, const std::string& s) { return c.texts.count(s) > 0; }

bool have_dot() { return access("/usr/bin/dot", X_OK) == 0 || access("/usr/local/bin/dot", X_OK) == 0; }

// Runs `dot -Tsvg` on `text`; returns its exit status and output.
std::pair<int, std::string> run_dot(const std::string& text) {
    char in_path[] = "/tmp/gputopo-dot-XXXXXX";
    int fd = mkstemp(in_path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    const std::string dot = access("/usr/bin/dot", X_OK) == 0 ? "/usr/bin/dot" : "/usr/local/bin/dot";
    auto r = gputopo_test::run_cli(dot, {"-Tsvg", in_path});
    unlink(in_path);
    return {r.rc, r.out};
}

bool have_rsvg() { return access("/usr/bin/rsvg-convert", X_OK) == 0; }

struct Png {
    int rc = -1;
    unsigned width = 0, height = 0;
};

// Renders `svg` with librsvg (rsvg-convert, as a browser would draw it) and reads the
// PNG's size from its IHDR chunk.
Png render_png(const std::string& svg) {
    char dir[] = "/tmp/gputopo-png-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string in = std::string(dir) + "/p.svg", out = std::string(dir) + "/p.png";
    std::ofstream(in) << svg;
    Png png;
    png.rc = gputopo_test::run_cli("/usr/bin/rsvg-convert", {in, "-o", out}).rc;
    std::ifstream f(out, std::ios::binary);
    unsigned char h[24] = {};
    if (f.read(reinterpret_cast<char*>(h), sizeof h) && h[1] == 'P' && h[2] == 'N' && h[3] == 'G') {
        png.width = (h[16] << 24) | (h[17] << 16) | (h[18] << 8) | h[19];
        png.height = (h[20] << 24) | (h[21] << 16) | (h[22] << 8) | h[23];
    }
    std::filesystem::remove_all(dir);
    return png;
}

}  // namespace

TEST_CASE("svg: every shipped topology renders to PNG within a size and aspect bound; the OCI node reads at 900 px",
          "[pictures]") {
    if (!have_rsvg()) {
        WARN("rsvg-convert (librsvg2-bin) is not installed: pictures are not rendered (make deps installs it)");
        return;
    }
    int rendered = 0;
    for (const auto& [file, node] : fixtures()) {
        const std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
        const Plan plan = default_plan(node);
        for (const Plan* p : {static_cast<const Plan*>(nullptr), node.gpus.empty() ? nullptr : &plan}) {
            INFO("topology " << file << (p ? " with its plan" : ""));
            const Png png = render_png(topology_svg(node, islands, p));
            REQUIRE(png.rc == 0);
            INFO(png.width << "x" << png.height);
            // Shown 900 px wide (a README column) text keeps 90 % of its size or more (11 px
            // stays 10 px); no picture is a banner (wider than 3 times its height) or a tower
            // (taller than 4 times its width).
            CHECK(png.width >= 300);
            CHECK(png.width <= 1000);
            CHECK(png.width <= 3 * png.height);
            CHECK(png.height <= 4 * png.width);
            ++rendered;
        }
    }
    CHECK(rendered >= 60);
    // The README's picture: the 8-GPU/16-NIC OCI node with its plan reads at 900 px at
    // 90 % of its size or more (11 px text stays 10 px).
    const Node oci = load_topology_file(gputopo_test::topology(
        "nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml"));
    PlanRequest req;
    req.gpus = {0, 1, 2, 3, 4, 5, 6, 7};
    req.ntasks = 8;
    const Plan plan = make_plan(oci, req);
    const Png png = render_png(topology_svg(oci, gpu_islands(oci), &plan));
    INFO(png.width << "x" << png.height);
    CHECK(png.width <= 1000);
    CHECK(png.height <= 2 * png.width);
}

TEST_CASE("pictures: text on every task colour has WCAG AA contrast (4.5:1)", "[pictures]") {
    for (int t = 0; t < 40; ++t) {
        INFO("task " << t << " colour " << task_color(t));
        CHECK(contrast_ratio(ink_on(task_color(t)), task_color(t)) >= 4.5);
    }
    CHECK(contrast_ratio("#000000", "#ffffff") == Approx(21.0));
    CHECK(contrast_ratio("#777777", "#777777") == Approx(1.0));
    // The chips in a plan's picture carry that ink.
    const Node oci = load_topology_file(gputopo_test::topology(
        "nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml"));
    const Plan plan = default_plan(oci);
    const std::string svg = topology_svg(oci, gpu_islands(oci), &plan);
    for (const auto& t : plan.tasks) {
        const std::string ink = "class=\"chip\" text-anchor=\"middle\" style=\"fill:" + ink_on(task_color(t.task)) + "\">T" +
                                std::to_string(t.task) + "<";
        INFO(ink);
        CHECK(svg.find(ink) != std::string::npos);
    }
}

TEST_CASE("svg: every shipped topology draws as well-formed SVG naming every GPU and usable NIC", "[pictures]") {
    REQUIRE(fixtures().size() >= 30);
    for (const auto& [file, node] : fixtures()) {
        INFO("topology " << file);
        const std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
        const SvgContent c = parse_svg(topology_svg(node, islands, nullptr));
        REQUIRE(c.well_formed);
        CHECK(c.root == "svg");
        for (const auto& g : node.gpus) {
            CHECK(has_text(c, g.pci.to_string()));
            CHECK(has_text(c, "GPU" + std::to_string(g.index)));
        }
        for (const auto& n : node.nics) {
            if (!n.usable()) continue;
            CHECK(has_text(c, n.name));
        }
        // An island bar names each island of two or more GPUs.
        for (const auto& kv : island_members(islands)) {
            if (kv.second.size() < 2) continue;
            bool found = false;
            for (const auto& t : c.texts) found |= t.rfind("island " + std::to_string(kv.first) + ": GPU ", 0) == 0;
            CHECK(found);
        }
    }
}

// Issue 36: an island bar was drawn once per PCIe row and per package band, a wide package
// boxed once per band, the XE8640's GPUs drawn 1, 0, 3, 2, model names cut ("INSTINCT MI2~").
TEST_CASE("svg: one bar per island, one box per package, GPUs in index order, names whole", "[pictures]") {
    int split_islands = 0, split_packages = 0;
    for (const auto& [file, node] : fixtures()) {
        INFO("topology " << file);
        const std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
        const Plan plan = default_plan(node);
        for (const Plan* p : {static_cast<const Plan*>(nullptr), node.gpus.empty() ? nullptr : &plan}) {
            const SvgContent c = parse_svg(topology_svg(node, islands, p));
            REQUIRE(c.well_formed);
            for (const auto& kv : island_members(islands)) {
                if (kv.second.size() < 2) continue;
                const std::string head = "island " + std::to_string(kv.first) + ": GPU ";
                size_t bars = 0;
                for (const auto& t : c.texts) bars += t.rfind(head, 0) == 0 ? 1 : 0;
                INFO(head);
                CHECK(bars == 1);
                std::set<int> packages;
                for (int g : kv.second) packages.insert(package_of(node, node.gpus[static_cast<size_t>(g)].local_cpus));
                split_islands += packages.size() > 1 ? 1 : 0;
            }
            // One box and one title per package that has CPUs (plus at most one for devices of no package).
            size_t boxes = 0;
            for (const auto& k : c.rect_classes) boxes += k == "pkg" ? 1 : 0;
            std::set<int> with_cpus;
            for (const auto& n : node.numa_nodes)
                if (!n.cpus.empty()) with_cpus.insert(package_of(node, n.cpus));
            std::set<int> packages_drawn;
            for (int pk : with_cpus)
                if (pk >= 0) packages_drawn.insert(pk);
            for (int pk : packages_drawn) {
                const std::string title = "Package " + std::to_string(node.packages[static_cast<size_t>(pk)].os_index);
                INFO(title);
                CHECK(c.texts.count(title) == 1);
            }
            CHECK(boxes >= packages_drawn.size());
            CHECK(boxes <= packages_drawn.size() + 1);
            if (packages_drawn.size() == with_cpus.size() && !with_cpus.empty()) CHECK(boxes == packages_drawn.size());
            // GPUs side by side are in index order; every GPU's model is shown whole.
            std::map<int, std::vector<std::pair<int, int>>> rows;  // y -> (x, index)
            for (const auto& g : node.gpus) {
                auto at = c.text_at.find("GPU" + std::to_string(g.index));
                REQUIRE(at != c.text_at.end());
                rows[at->second.second].push_back({at->second.first, g.index});
                if (!g.model.empty()) CHECK(has_text(c, short_gpu_model(g.model)));
            }
            for (auto& kv : rows) {
                std::sort(kv.second.begin(), kv.second.end());
                for (size_t i = 1; i < kv.second.size(); ++i) CHECK(kv.second[i - 1].second < kv.second[i].second);
            }
        }
        for (size_t pk = 0; pk < node.packages.size(); ++pk) {
            size_t numas = 0;
            for (const auto& n : node.numa_nodes) numas += package_of(node, n.cpus) == static_cast<int>(pk) ? 1 : 0;
            split_packages += numas >= 4 ? 1 : 0;
        }
    }
    CHECK(split_islands >= 1);    // the OCI H100: one NVSwitch island over two packages
    CHECK(split_packages >= 1);   // the XE8640: four NUMA nodes per package (SNC4)
    // The XE8640 reads GPU0, GPU1, GPU2, GPU3 (SNC4 puts GPU0 in NUMA 3, GPU1 in NUMA 1).
    const Node xe = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    const SvgContent c = parse_svg(topology_svg(xe, gpu_islands(xe), nullptr));
    std::vector<std::pair<std::pair<int, int>, int>> reading;  // ((y, x), index)
    for (const auto& g : xe.gpus) {
        const auto at = c.text_at.at("GPU" + std::to_string(g.index));
        reading.push_back({{at.second, at.first}, g.index});
    }
    std::sort(reading.begin(), reading.end());
    for (size_t i = 0; i < reading.size(); ++i) CHECK(reading[i].second == static_cast<int>(i));
}

TEST_CASE("svg: an island whose GPUs are not all linked pairwise says how many pairs are", "[pictures]") {
    const Node mi250 = load_topology_file(gputopo_test::topology("nccl/rccl-topo_8p_90a_8xMI250X-GCD_1NIC_rccl-dump.xml"));
    const SvgContent c = parse_svg(topology_svg(mi250, gpu_islands(mi250), nullptr));
    REQUIRE(c.well_formed);
    size_t linked = 0;
    for (size_t i = 0; i < mi250.gpus.size(); ++i)
        for (size_t j = i + 1; j < mi250.gpus.size(); ++j) linked += mi250.link(static_cast<int>(i), static_cast<int>(j)) ? 1 : 0;
    REQUIRE(linked < 28);
    bool found = false;
    for (const auto& t : c.texts)
        found |= t.rfind("island 0: GPU 0-7, ", 0) == 0 && t.find(", " + std::to_string(linked) + " of 28 pairs linked") != std::string::npos;
    CHECK(found);
    // A full mesh (XE8640: NV6 between every pair) says nothing more.
    const Node xe = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    CHECK(has_text(parse_svg(topology_svg(xe, gpu_islands(xe), nullptr)), "island 0: GPU 0-3, NVLink NV6"));
}

TEST_CASE("dot: the OCI 8-GPU/16-NIC node renders at most 1000 px wide, GPU0 first", "[pictures]") {
    const Node oci = load_topology_file(gputopo_test::topology(
        "nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml"));
    const Plan plan = default_plan(oci);
    const std::string dot = topology_dot(oci, gpu_islands(oci), &plan);
    CHECK(dot.find("rankdir=LR") != std::string::npos);
    if (!have_dot()) {
        WARN("Graphviz (dot) is not installed: the dot picture's size is not checked (make test-deps installs it)");
        return;
    }
    auto [rc, svg] = run_dot(dot);
    REQUIRE(rc == 0);
    const size_t w = svg.find("<svg width=\"");
    REQUIRE(w != std::string::npos);
    const double pt = std::atof(svg.c_str() + w + 12);  // "622pt"
    INFO(svg.substr(w, 40));
    CHECK(pt * 4 / 3 <= 1000);
    // GPU0 above GPU1 (Graphviz's y grows downwards in its SVG: the first is drawn with the smaller y).
    const SvgContent c = parse_svg(svg);
    int y0 = 0, y1 = 0;
    for (const auto& kv : c.text_at) {
        if (kv.first == "GPU0") y0 = kv.second.second;
        if (kv.first == "GPU1") y1 = kv.second.second;
    }
    CHECK(y0 < y1);
}

TEST_CASE("svg with a plan: each task's GPUs are outlined in the task's colour and listed in the legend",
          "[pictures]") {
    for (const auto& [file, node] : fixtures()) {
        if (node.gpus.empty()) continue;
        INFO("topology " << file);
        const Plan plan = default_plan(node);
        const SvgContent c = parse_svg(topology_svg(node, gpu_islands(node), &plan));
        REQUIRE(c.well_formed);
        std::map<std::string, size_t> outlined;  // colour -> GPU boxes outlined in it
        for (const auto& s : c.rect_styles)
            if (s.find(";stroke:") != std::string::npos && s.find("stroke-width:3") != std::string::npos)
                ++outlined[s.substr(s.find(";stroke:") + 8, 7)];
        std::map<std::string, size_t> expected;  // colour -> GPUs of tasks with that colour (first owner)
        for (const auto& g : node.gpus)
            for (const auto& t : plan.tasks)
                if (std::find(t.gpus.begin(), t.gpus.end(), g.index) != t.gpus.end()) {
                    ++expected[task_color(t.task)];
                    break;
                }
        for (const auto& kv : expected) {
            INFO("colour " << kv.first);
            CHECK(outlined[kv.first] >= kv.second);  // NIC boxes of the task may add to it
        }
        for (const auto& t : plan.tasks) CHECK(has_text(c, t.cpus.to_list().empty() ? "-" : t.cpus.to_list()));
    }
}

TEST_CASE("picture model: every GPU and NIC once; kept switches are exactly where paths are PIX/PXB",
          "[pictures]") {
    for (const auto& [file, node] : fixtures()) {
        INFO("topology " << file);
        std::map<int, int> gpu_seen, nic_seen;
        // For each leaf: the chain of tree nodes above it (outermost first), tagged by kind.
        std::map<std::pair<int, int>, std::vector<const DeviceTreeNode*>> above;  // (kind, index) -> ancestors
        std::function<void(const DeviceTreeNode&, std::vector<const DeviceTreeNode*>&)> walk =
            [&](const DeviceTreeNode& t, std::vector<const DeviceTreeNode*>& chain) {
                if (t.children.empty()) {
                    (t.kind == DeviceTreeNode::GpuLeaf ? gpu_seen : nic_seen)[t.index]++;
                    above[{t.kind, t.index}] = chain;
                    return;
                }
                CHECK(t.children.size() >= 2);  // single-child bridges are dropped
                CHECK(leaf_count(t) >= 2);
                chain.push_back(&t);
                for (const auto& c : t.children) walk(c, chain);
                chain.pop_back();
            };
        const std::vector<NumaDevices> forest = device_forest(node);
        for (const auto& group : forest)
            for (const auto& r : group.roots) {
                std::vector<const DeviceTreeNode*> chain;
                walk(r, chain);
            }
        CHECK(gpu_seen.size() == node.gpus.size());
        CHECK(nic_seen.size() == node.nics.size());
        for (const auto& kv : gpu_seen) CHECK(kv.second == 1);
        for (const auto& kv : nic_seen) CHECK(kv.second == 1);
        // A GPU and a NIC meeting below a kept PCIe switch are PIX/PXB apart; meeting
        // anywhere else (a host bridge, the NUMA node, another NUMA node) they are not.
        for (const auto& g : node.gpus) {
            if (g.pci_object < 0) continue;
            for (size_t n = 0; n < node.nics.size(); ++n) {
                if (node.nics[n].pci_object < 0) continue;
                const auto& a = above[{DeviceTreeNode::GpuLeaf, g.index}];
                const auto& b = above[{DeviceTreeNode::NicLeaf, static_cast<int>(n)}];
                const DeviceTreeNode* meet = nullptr;
                for (size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i) meet = a[i];
                const PathClass cls = gpu_nic_path(node, g.index, n).cls;
                INFO("GPU" << g.index << " " << node.nics[n].name << " " << path_class_name(cls));
                const bool under_switch = meet && meet->kind == DeviceTreeNode::Switch;
                CHECK(under_switch == (cls == PathClass::PIX || cls == PathClass::PXB));
            }
        }
    }
}

TEST_CASE("dot: every shipped topology, with and without a plan, renders with Graphviz", "[pictures]") {
    if (!have_dot()) {
        WARN("Graphviz (dot) is not installed: only the text is checked (make deps installs it)");
    }
    int rendered = 0;
    for (const auto& [file, node] : fixtures()) {
        INFO("topology " << file);
        const std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
        const Plan plan = default_plan(node);
        for (const Plan* p : {static_cast<const Plan*>(nullptr), &plan}) {
            const std::string dot = topology_dot(node, islands, p);
            CHECK(dot.rfind("graph gputopo {\n", 0) == 0);
            for (const auto& g : node.gpus) CHECK(dot.find(g.pci.to_string()) != std::string::npos);
            if (!have_dot()) continue;
            auto [rc, svg] = run_dot(dot);
            CHECK(rc == 0);
            CHECK(parse_svg(svg).well_formed);
            ++rendered;
        }
    }
    if (have_dot()) CHECK(rendered == static_cast<int>(2 * fixtures().size()));
}

TEST_CASE("svg and dot escape names from the topology", "[pictures]") {
    Node n;
    n.hostname = "a<b>&\"c\"";
    NumaNode numa;
    numa.os_index = 0;
    numa.cpus = CpuSet::parse_list("0-3");
    n.numa_nodes = {numa};
    Gpu g;
    g.pci = PciAddress::parse("0000:01:00.0");
    g.model = "GPU <\"x\"> & y";
    g.numa = 0;
    n.gpus = {g};
    Nic nic;
    nic.name = "nic&<0>";
    nic.rdma = true;
    nic.numa = 0;
    n.nics = {nic};
    n.finalize();
    const SvgContent c = parse_svg(topology_svg(n, {0}, nullptr));
    REQUIRE(c.well_formed);
    CHECK(has_text(c, "nic&<0>"));
    CHECK(has_text(c, "a<b>&\"c\""));
    const std::string dot = topology_dot(n, {0}, nullptr);
    CHECK(dot.find("\"a<b>&\\\"c\\\": 1 GPUs, 1 NICs\"") != std::string::npos);
    if (have_dot()) CHECK(run_dot(dot).first == 0);
}

TEST_CASE("nearest_word: abbreviations, typos and swaps; nothing for unrelated words", "[cli]") {
    const std::vector<std::string> opts{"--topology", "--gpus", "--gpus-per-task", "--ntasks", "--format"};
    CHECK(nearest_word("--topolgy", opts) == "--topology");
    CHECK(nearest_word("--gpu", opts) == "--gpus");
    CHECK(nearest_word("--gpus-per", opts) == "--gpus-per-task");
    CHECK(nearest_word("--fromat", opts) == "--format");
    CHECK(nearest_word("--ntask", opts) == "--ntasks");
    CHECK(nearest_word("--verbose", opts).empty());
    CHECK(nearest_word("", opts).empty());
    CHECK(nearest_word("shwo", {"show", "plan", "ranks"}) == "show");
}

TEST_CASE("gputopo show/plan --format svg|dot end to end; --plan only with a picture", "[cli][pictures]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string topo =
        gputopo_test::topology("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml");
    auto svg = gputopo_test::run_cli(cli, {"show", "--topology", topo, "--format", "svg", "--plan"});
    CHECK(svg.rc == 0);
    CHECK(svg.err.empty());
    CHECK(parse_svg(svg.out).well_formed);
    CHECK(svg.out.find("Plan: mode closest, 8 tasks") != std::string::npos);
    auto plan_svg = gputopo_test::run_cli(cli, {"plan", "--topology", topo, "--format", "svg", "--gpus", "0-3",
                                                "--ntasks", "2", "--mode", "island"});
    CHECK(plan_svg.rc == 0);
    CHECK(plan_svg.out.find("Plan: mode island, 2 tasks") != std::string::npos);
    auto dot = gputopo_test::run_cli(cli, {"plan", "--topology", topo, "--format", "dot"});
    CHECK(dot.rc == 0);
    CHECK(dot.out.rfind("graph gputopo {", 0) == 0);
    auto bad = gputopo_test::run_cli(cli, {"show", "--topology", topo, "--plan"});
    CHECK(bad.rc == 2);
    CHECK(bad.err.find("gputopo: --plan draws the plan into the picture") == 0);
    auto typo = gputopo_test::run_cli(cli, {"show", "--topolgy", topo});
    CHECK(typo.rc == 2);
    CHECK(typo.err == "gputopo: unknown option '--topolgy' for 'show' (did you mean --topology?)\n");
}

TEST_CASE("gputopo show: the node's warnings go to standard error with the gputopo: prefix", "[cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml");
    const Node node = load_topology_file(topo);
    auto r = gputopo_test::run_cli(cli, {"show", "--topology", topo});
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("warning") == std::string::npos);
    std::string expected;
    for (const auto& f : nic_fallbacks(node)) expected += "gputopo: warning: " + describe(f) + "\n";
    REQUIRE_FALSE(expected.empty());
    CHECK(r.err == expected);
}

TEST_CASE("docs/img/oci-h100-plan.svg is what developer.md's command draws today", "[pictures][cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string src = gputopo_test::source_dir();
    // The command as developer.md prints it, from the source tree (the caption names the path).
    auto r = gputopo_test::run_cli("/bin/sh", {"-c", "cd '" + src + "' && t=tests/fixtures/topologies/nccl && '" + cli +
                                                         "' plan --topology "
                                                         "$t/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml "
                                                         "--format svg"});
    REQUIRE(r.rc == 0);
    // When this fails after a change to the pictures: rerun developer.md's command.
    CHECK(r.out == gputopo_test::slurp(src + "/docs/img/oci-h100-plan.svg"));
}
