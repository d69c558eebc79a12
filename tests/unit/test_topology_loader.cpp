// load_topology_file: the format is recognised from the content, and every
// bad input ends in one TopologyError naming the file and what was expected.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/unit/fixtures.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;

namespace {

// A file in a fresh temporary directory, removed at the end of the test.
class TempFile {
public:
    TempFile(const std::string& name, const std::string& content) {
        char dir[] = "/tmp/gputopo-loader-XXXXXX";
        if (!mkdtemp(dir)) FAIL("mkdtemp failed");
        dir_ = dir;
        path_ = dir_ + "/" + name;
        std::ofstream(path_, std::ios::binary) << content;
    }
    ~TempFile() {
        std::remove(path_.c_str());
        rmdir(dir_.c_str());
    }
    const std::string& path() const { return path_; }

private:
    std::string dir_, path_;
};

std::string load_error(const std::string& path) {
    try {
        load_topology_file(path);
    } catch (const TopologyError& e) {
        return e.what();
    }
    return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* const kNcclH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";

}  // namespace

TEST_CASE("loader: NCCL XML is recognised by its <system> root, whatever the file name", "[loader]") {
    std::ifstream in(gputopo_test::topology(kNcclH200));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(!text.empty());
    TempFile f("topology.bin", text);
    const Node n = load_topology_file(f.path());
    CHECK(n.gpus.size() == 8);
    CHECK(contains(n.source, "NCCL XML"));
    CHECK(contains(n.source, f.path()));
}

TEST_CASE("loader: hwloc XML (2.x and 1.x) goes to the hwloc reader", "[loader]") {
    // XE8640: 4 H100 (hwloc 2.x format, <topology version="2.0">).
    const Node a = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    CHECK(a.gpus.size() == 4);
    // Sierra: hwloc 1.x format (<topology> without version), 4 V100.
    const Node b = load_topology_file(
        gputopo_test::topology("hwloc/llnl-sierra_ibm-ac922_2xPOWER9_4xV100-SXM2_2xCX5-dualport_hwloc1.xml"));
    CHECK(b.gpus.size() == 4);
}

TEST_CASE("loader: each bad input gives one message naming the file and what was expected", "[loader]") {
    const std::string expected = "expected an hwloc XML export";

    SECTION("missing file") {
        const std::string msg = load_error("/nonexistent/gputopo/topo.xml");
        CHECK(msg.rfind("gputopo: ", 0) == std::string::npos);  // the front ends add the prefix
        CHECK(contains(msg, "/nonexistent/gputopo/topo.xml does not exist"));
        CHECK(contains(msg, expected));
    }
    SECTION("a directory") {
        const std::string msg = load_error(gputopo_test::topology("nccl"));
        CHECK(contains(msg, "is a directory"));
    }
    SECTION("empty file") {
        TempFile f("empty.xml", "");
        const std::string msg = load_error(f.path());
        CHECK(contains(msg, f.path() + " is empty"));
        CHECK(contains(msg, expected));
        TempFile g("blank.xml", "  \n\n");
        CHECK(contains(load_error(g.path()), " is empty"));
    }
    SECTION("not XML: a text file") {
        TempFile f("notes.txt", "GPU0 X NV18\nthis is nvidia-smi output, not XML\n");
        const std::string msg = load_error(f.path());
        CHECK(contains(msg, f.path() + " is not XML (line 1"));
        CHECK(contains(msg, expected));
        CHECK(msg.find('\n') == std::string::npos);
    }
    SECTION("the shipped nvidia-smi topo -m captures: named for what they are") {
        for (const char* f : {"nvidia-smi/nersc-perlmutter-gpu_4xA100-SXM4_4xSlingshot_topo-m.txt",
                              "nvidia-smi/vastai-hgx-b200-8x_8xB200_topo-m.txt",
                              "nvidia-smi/vastai-hgx-h200-8x_8xH200_8xCX-VF_topo-m.txt"}) {
            const std::string path = gputopo_test::topology(f);
            const std::string msg = load_error(path);
            INFO(msg);
            CHECK(contains(msg, path + " is `nvidia-smi topo -m` output"));
            CHECK(contains(msg, expected));
        }
    }
    SECTION("truncated XML") {
        TempFile f("cut.xml", "<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"ff\">\n");
        const std::string msg = load_error(f.path());
        CHECK(contains(msg, " is not XML (line"));
    }
    SECTION("XML that is not a topology") {
        TempFile f("page.xml", "<html><body>hello</body></html>");
        const std::string msg = load_error(f.path());
        CHECK(contains(msg, f.path() + " is XML but not a topology (root element <html>)"));
        CHECK(contains(msg, expected));
    }
    SECTION("an NCCL graph file") {
        const std::string path = gputopo_test::topology("nccl/azure-NC96ads_A100_v4_nccl-graph.xml");
        const std::string msg = load_error(path);
        CHECK(contains(msg, path + " is an NCCL graph file"));
    }
    SECTION("NCCL XML with no GPUs") {
        TempFile f("nogpu.xml",
                   "<system version=\"1\"><cpu numaid=\"0\" affinity=\"ff\"><pci busid=\"0000:01:00.0\" "
                   "class=\"0x020700\"/></cpu></system>");
        const std::string msg = load_error(f.path());
        CHECK(contains(msg, f.path() + " describes no GPUs"));
        CHECK(contains(msg, "expected a full NCCL topology dump"));
    }
    SECTION("hwloc 3.0 XML") {
        TempFile f("hwloc3.xml",
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc3.dtd\">\n"
                   "<topology version=\"3.0\">\n  <object type=\"Machine\" os_index=\"0\"/>\n</topology>\n");
        const std::string msg = load_error(f.path());
        CHECK(contains(msg, f.path()));
        CHECK(contains(msg, "hwloc 3.0 XML is not supported by hwloc 2.9"));
    }
}

TEST_CASE("loader: external entities are never resolved and libxml2 prints nothing", "[loader]") {
    // An entity pointing at a local file: the NIC name must not become the file's content.
    TempFile secret("secret.txt", "SECRET-CONTENT");
    const std::string xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE system [<!ENTITY x SYSTEM \"file://" + secret.path() +
                            "\">]>\n<system version=\"1\"><cpu numaid=\"0\" affinity=\"ff\">"
                            "<pci busid=\"0000:01:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"0\"/></pci>"
                            "<pci busid=\"0000:02:00.0\" class=\"0x020700\"><nic><net name=\"mlx5_&x;\" port=\"1\"/>"
                            "</nic></pci></cpu></system>";
    TempFile f("xxe.xml", xml);
    try {
        const Node n = load_topology_file(f.path());
        for (const auto& nic : n.nics) CHECK_FALSE(contains(nic.name, "SECRET"));
    } catch (const TopologyError& e) {
        CHECK_FALSE(contains(e.what(), "SECRET"));
    }

    // Malformed XML: libxml2's own error printing stays off (stderr untouched).
    TempFile bad("bad.xml", "<system><cpu></system>");
    TempFile err("stderr.txt", "");
    fflush(stderr);
    const int saved = dup(2);
    const int fd = open(err.path().c_str(), O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0);
    dup2(fd, 2);
    const std::string msg = load_error(bad.path());
    fflush(stderr);
    dup2(saved, 2);
    close(fd);
    close(saved);
    CHECK(contains(msg, " is not XML"));
    std::ifstream captured(err.path());
    std::string printed((std::istreambuf_iterator<char>(captured)), std::istreambuf_iterator<char>());
    CHECK(printed.empty());
}
