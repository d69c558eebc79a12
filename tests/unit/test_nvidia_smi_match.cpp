// `nvidia-smi topo -m` captures (tests/fixtures/topologies/nvidia-smi/) are the
// expected answers for the NCCL dumps of the same machines: every GPU-GPU and
// GPU-NIC cell, each GPU's CPU affinity and NUMA affinity must come out of the
// dump through the node model and topo/core/distance.cpp.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;

namespace {

// The matrix of one `nvidia-smi topo -m` capture.
struct SmiMatrix {
    std::vector<std::string> devices;                       // column heads: GPU0.., NIC0..
    std::map<std::string, std::vector<std::string>> cells;  // row head -> one cell per device column
    std::map<std::string, std::string> cpu_affinity;        // GPUn -> "0-47,96-143"
    std::map<std::string, std::string> numa_affinity;       // GPUn -> "0"
    std::map<std::string, std::string> nic_names;           // NICn -> "mlx5_0" (NIC Legend)
};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> out;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, '\t')) out.push_back(field);
    return out;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

SmiMatrix parse_capture(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    SmiMatrix m;
    std::string line;
    while (std::getline(in, line) && trim(line) != "--- nvidia-smi topo -m ---") {
    }
    // Header: "\tGPU0\tGPU1...\tNIC0...\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    REQUIRE(std::getline(in, line));
    for (const auto& f : split_tabs(line)) {
        const std::string h = trim(f);
        if (starts_with(h, "GPU") && h != "GPU NUMA ID") m.devices.push_back(h);
        if (starts_with(h, "NIC")) m.devices.push_back(h);
    }
    REQUIRE(!m.devices.empty());
    while (std::getline(in, line) && !trim(line).empty()) {
        const auto f = split_tabs(line);
        REQUIRE(f.size() >= m.devices.size() + 1);
        const std::string row = trim(f[0]);
        for (size_t i = 0; i < m.devices.size(); ++i) m.cells[row].push_back(trim(f[i + 1]));
        if (starts_with(row, "GPU")) {
            REQUIRE(f.size() >= m.devices.size() + 3);
            m.cpu_affinity[row] = trim(f[m.devices.size() + 1]);
            m.numa_affinity[row] = trim(f[m.devices.size() + 2]);
        }
    }
    while (std::getline(in, line)) {
        const std::string t = trim(line);
        const auto colon = t.find(':');
        if (starts_with(t, "NIC") && colon != std::string::npos)
            m.nic_names[t.substr(0, colon)] = trim(t.substr(colon + 1));
    }
    return m;
}

struct Checked {
    int gpu_gpu = 0, gpu_nic = 0, nic_missing = 0;
};

// Compares every cell the dump can answer; returns what was compared.
Checked compare(const std::string& capture, const std::string& dump) {
    const SmiMatrix m = parse_capture(gputopo_test::topology("nvidia-smi/" + capture));
    const Node n = load_topology_file(gputopo_test::topology("nccl/" + dump));
    Checked c;
    int gpu_columns = 0;
    for (const auto& d : m.devices) gpu_columns += starts_with(d, "GPU");
    REQUIRE(gpu_columns == static_cast<int>(n.gpus.size()));
    for (int a = 0; a < gpu_columns; ++a) {
        const std::string row = "GPU" + std::to_string(a);
        REQUIRE(m.cells.count(row) == 1);
        const auto& cells = m.cells.at(row);
        // nvidia-smi numbers GPUs in PCI bus order, as the model does.
        CHECK(n.gpus[static_cast<size_t>(a)].local_cpus.to_list() == m.cpu_affinity.at(row));
        CHECK(std::to_string(n.gpus[static_cast<size_t>(a)].numa) == m.numa_affinity.at(row));
        for (size_t col = 0; col < m.devices.size(); ++col) {
            const std::string& dev = m.devices[col];
            INFO(capture << ": " << row << " / " << dev);
            if (starts_with(dev, "GPU")) {
                CHECK(gpu_gpu_path(n, a, std::stoi(dev.substr(3))).label() == cells[col]);
                ++c.gpu_gpu;
                continue;
            }
            REQUIRE(m.nic_names.count(dev) == 1);
            const std::string& name = m.nic_names.at(dev);
            size_t idx = n.nics.size();
            for (size_t i = 0; i < n.nics.size(); ++i)
                if (n.nics[i].name == name) idx = i;
            if (idx == n.nics.size()) {
                ++c.nic_missing;
                continue;
            }
            CHECK(gpu_nic_path(n, a, idx).label() == cells[col]);
            ++c.gpu_nic;
        }
    }
    return c;
}

}  // namespace

TEST_CASE("nvidia-smi capture parser reads the matrix, affinities and NIC legend", "[nvsmi]") {
    const SmiMatrix m = parse_capture(gputopo_test::topology("nvidia-smi/vastai-hgx-h200-8x_8xH200_8xCX-VF_topo-m.txt"));
    REQUIRE(m.devices.size() == 16);
    CHECK(m.devices[0] == "GPU0");
    CHECK(m.devices[8] == "NIC0");
    CHECK(m.cells.at("GPU0")[0] == "X");
    CHECK(m.cells.at("GPU0")[1] == "NV18");
    CHECK(m.cells.at("GPU0")[8] == "PIX");
    CHECK(m.cells.at("GPU4")[8] == "SYS");
    CHECK(m.cpu_affinity.at("GPU4") == "96-191");
    CHECK(m.numa_affinity.at("GPU4") == "1");
    CHECK(m.nic_names.at("NIC7") == "mlx5_7");
}

TEST_CASE("HGX B200: the NCCL dump reproduces nvidia-smi topo -m", "[nvsmi]") {
    const Checked c = compare("vastai-hgx-b200-8x_8xB200_topo-m.txt", "vastai-hgx-b200-8x_8xB200_2xXeon8559C_nccl-dump.xml");
    CHECK(c.gpu_gpu == 64);
    CHECK(c.gpu_nic == 0);  // the capture has no NIC columns
}

TEST_CASE("Perlmutter A100: the NCCL dump reproduces nvidia-smi topo -m", "[nvsmi]") {
    const Checked c = compare("nersc-perlmutter-gpu_4xA100-SXM4_4xSlingshot_topo-m.txt",
                              "nersc-perlmutter-gpu-nid001056_4xA100-SXM4-40GB_4xSlingshot-Cassini_EPYC7763_nccl-dump.xml");
    CHECK(c.gpu_gpu == 16);
    // The capture has no NIC columns: nvidia-smi shows none for the Cassini (cxi) NICs.
    CHECK(c.gpu_nic == 0);
}

TEST_CASE("HGX H200: GPU cells match; the capture's NICs are absent from the dump", "[nvsmi]") {
    const std::string dump = "vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";
    const Checked c = compare("vastai-hgx-h200-8x_8xH200_8xCX-VF_topo-m.txt", dump);
    CHECK(c.gpu_gpu == 64);
    // The capture lists mlx5_0..mlx5_7 (CX VFs, each PIX to one GPU), but NCCL
    // ran with its socket transport on that machine: the dump's only <net> is
    // eth0 (port 0, gdr 0) under each <cpu>, and no <pci> holds a NIC. So the
    // 64 GPU-NIC cells cannot be compared; compare() would compare them as soon
    // as a dump names those devices. Make sure that is really the situation:
    CHECK(c.gpu_nic == 0);
    CHECK(c.nic_missing == 64);
    const Node n = load_topology_file(gputopo_test::topology("nccl/" + dump));
    REQUIRE(n.nics.size() == 1);
    CHECK(n.nics[0].name == "eth0");
    for (const auto& o : n.pci) CHECK((o.class_id >> 8) != 0x02);
}
