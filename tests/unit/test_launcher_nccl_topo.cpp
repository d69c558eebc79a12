#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "tests/unit/fixtures.hpp"
#include "launcher/env/nccl_topo_file.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/topology_loader.hpp"

using gputopo::launch::nccl_topo_file_env;

namespace {

gputopo::launch::Getenv env_of(std::map<std::string, std::string> vars) {
    return [vars](const std::string& name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

std::string temp_dir() {
    char tmpl[] = "/tmp/gputopo-ncclfile-XXXXXX";
    const char* d = mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    return d;
}

}  // namespace

TEST_CASE("--nccl-topo-file writes the node's NCCL topology and exports NCCL_TOPO_FILE", "[launcher]") {
    // The XE8640 (hwloc XML): 4 H100 at these bus ids, read from the file.
    auto node = gputopo::load_topology_file(
        gputopo_test::topology("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    const std::string dir = temp_dir();
    const std::string path = dir + "/n3.xml";
    auto out = nccl_topo_file_env(path, node, env_of({}));
    REQUIRE(out.var);
    CHECK(out.var->name == "NCCL_TOPO_FILE");
    CHECK(out.var->value == path);
    auto back = gputopo::read_nccl_xml(path);
    REQUIRE(back.gpus.size() == node.gpus.size());
    for (size_t i = 0; i < node.gpus.size(); ++i) CHECK(back.gpus[i].pci == node.gpus[i].pci);
    CHECK(back.link(0, 1) != nullptr);
    std::remove(path.c_str());
    rmdir(dir.c_str());
}

TEST_CASE("--nccl-topo-file keeps a user's NCCL_TOPO_FILE and writes nothing", "[launcher]") {
    auto node = gputopo::load_topology_file(
        gputopo_test::topology("nccl/aws-p4d.24xlarge_8xA100-SXM4-40GB_4xEFA_2xXeon8275CL_nccl-topo.xml"));
    const std::string dir = temp_dir();
    const std::string path = dir + "/never.xml";
    auto out = nccl_topo_file_env(path, node, env_of({{"NCCL_TOPO_FILE", "/site/topo.xml"}}));
    CHECK_FALSE(out.var);
    CHECK(out.note.find("/site/topo.xml") != std::string::npos);
    CHECK(access(path.c_str(), F_OK) != 0);
    rmdir(dir.c_str());
}

TEST_CASE("--nccl-topo-file that cannot be written is a warning, not a failure", "[launcher]") {
    auto node = gputopo::load_topology_file(
        gputopo_test::topology("nccl/aws-p4d.24xlarge_8xA100-SXM4-40GB_4xEFA_2xXeon8275CL_nccl-topo.xml"));
    auto out = nccl_topo_file_env("/nonexistent-dir-gputopo/x.xml", node, env_of({}));
    CHECK_FALSE(out.var);
    CHECK(out.note.find("warning") != std::string::npos);
    CHECK(out.note.find("/nonexistent-dir-gputopo/x.xml") != std::string::npos);
}
