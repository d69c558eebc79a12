// `gputopo show` against real `nvidia-smi topo -m` captures: for the three
// machines with a capture (tests/fixtures/topologies/nvidia-smi/) the matrix
// rendered from the matching NCCL dump must give the same GPU-GPU classes
// and the same CPU and NUMA affinity columns. Expected values are read from
// the capture files, never from gputopo.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "tests/unit/fixtures.hpp"
#include "topo/output/topology_format.hpp"
#include "topo/sources/topology_loader.hpp"

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> cells;
    std::string cur;
    for (char c : line) {
        if (c == '\t') {
            cells.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    cells.push_back(cur);
    for (auto& c : cells) {
        size_t a = c.find_first_not_of(' '), b = c.find_last_not_of(' ');
        c = a == std::string::npos ? "" : c.substr(a, b - a + 1);
    }
    return cells;
}

// A topo -m matrix: the header cells and the rows by their first cell.
struct Matrix {
    std::vector<std::string> header;
    std::map<std::string, std::vector<std::string>> rows;
    std::string cell(const std::string& row, const std::string& column) const {
        auto it = rows.find(row);
        if (it == rows.end()) return "<no row " + row + ">";
        for (size_t i = 0; i < header.size() && i < it->second.size(); ++i)
            if (header[i] == column) return it->second[i];
        return "<no column " + column + ">";
    }
};

// Reads the matrix that follows a header line starting with a tab
// (in a capture, after the "--- nvidia-smi topo -m ---" marker).
Matrix read_matrix(std::istream& in) {
    Matrix m;
    for (std::string line; std::getline(in, line);) {
        if (m.header.empty()) {
            if (!line.empty() && line[0] == '\t') m.header = split_tabs(line);
            continue;
        }
        if (line.rfind("GPU", 0) != 0 && line.rfind("NIC", 0) != 0) break;
        auto cells = split_tabs(line);
        m.rows[cells[0]] = cells;
    }
    return m;
}

Matrix read_capture(const std::string& path) {
    std::ifstream f(path);
    REQUIRE(f.good());
    for (std::string line; std::getline(f, line);)
        if (line.find("--- nvidia-smi topo -m ---") != std::string::npos) return read_matrix(f);
    FAIL("no topo -m section in " << path);
    return {};
}

}  // namespace

TEST_CASE("gputopo show reproduces nvidia-smi topo -m GPU classes and affinities", "[cli]") {
    const std::vector<std::pair<std::string, std::string>> machines = {
        {"nvidia-smi/nersc-perlmutter-gpu_4xA100-SXM4_4xSlingshot_topo-m.txt",
         "nccl/nersc-perlmutter-gpu-nid001056_4xA100-SXM4-40GB_4xSlingshot-Cassini_EPYC7763_nccl-dump.xml"},
        {"nvidia-smi/vastai-hgx-b200-8x_8xB200_topo-m.txt", "nccl/vastai-hgx-b200-8x_8xB200_2xXeon8559C_nccl-dump.xml"},
        {"nvidia-smi/vastai-hgx-h200-8x_8xH200_8xCX-VF_topo-m.txt",
         "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml"},
    };
    for (const auto& m : machines) {
        INFO(m.second);
        Matrix expected = read_capture(gputopo_test::topology(m.first));
        gputopo::Node node = gputopo::load_topology_file(gputopo_test::topology(m.second));
        std::istringstream shown(gputopo::topology_table(node, {}));
        Matrix got = read_matrix(shown);

        std::vector<std::string> gpus;
        for (const auto& h : expected.header)
            if (h.rfind("GPU", 0) == 0 && h != "GPU NUMA ID") gpus.push_back(h);
        REQUIRE(gpus.size() >= 4);
        CHECK(node.gpus.size() == gpus.size());
        for (const auto& row : gpus) {
            for (const auto& col : gpus) {
                INFO(row << " / " << col);
                CHECK(got.cell(row, col) == expected.cell(row, col));
            }
            INFO(row);
            CHECK(got.cell(row, "CPU Affinity") == expected.cell(row, "CPU Affinity"));
            CHECK(got.cell(row, "NUMA Affinity") == expected.cell(row, "NUMA Affinity"));
        }
        // GPU-NIC classes where the dump knows the capture's NICs by name.
        std::map<std::string, std::string> capture_nic;  // mlx5_0 -> NIC0 in the capture
        {
            std::ifstream f(gputopo_test::topology(m.first));
            for (std::string line; std::getline(f, line);) {
                auto pos = line.find(": ");
                if (line.rfind("  NIC", 0) == 0 && pos != std::string::npos)
                    capture_nic[line.substr(pos + 2)] = line.substr(2, pos - 2);
            }
        }
        for (size_t n = 0; n < node.nics.size(); ++n) {
            auto it = capture_nic.find(node.nics[n].name);
            if (it == capture_nic.end()) continue;
            for (const auto& row : gpus) {
                INFO(row << " / " << node.nics[n].name);
                CHECK(got.cell(row, "NIC" + std::to_string(n)) == expected.cell(row, it->second));
            }
        }
    }
}
