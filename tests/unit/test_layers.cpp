// Includes follow the data flow (docs/developer.md): topo/core/ includes
// nothing above it, and topo/sources/ reads and merges, choosing nothing, so
// it includes only core/ and itself, never the planner (topo/plan/) nor the
// writers (topo/output/); topo/plan/ includes only core/ and itself.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"

namespace {

namespace fs = std::filesystem;

// "FILE: #include "X"" for each project include of a file under `dir` whose
// target starts with none of `allowed`.
std::vector<std::string> includes_outside(const std::string& dir, const std::vector<std::string>& allowed) {
    std::vector<std::string> bad;
    const fs::path root = fs::path(gputopo_test::source_dir()) / dir;
    for (const auto& e : fs::directory_iterator(root)) {
        const std::string ext = e.path().extension().string();
        if (ext != ".cpp" && ext != ".hpp") continue;
        std::ifstream in(e.path());
        std::string line;
        while (std::getline(in, line)) {
            const std::string directive = "#include \"";
            if (line.rfind(directive, 0) != 0) continue;
            const std::string target = line.substr(directive.size());
            bool ok = false;
            for (const auto& a : allowed) ok = ok || target.rfind(a, 0) == 0;
            if (!ok) bad.push_back(dir + "/" + e.path().filename().string() + ": " + line);
        }
    }
    return bad;
}

}  // namespace

TEST_CASE("topo/core includes only topo/core", "[layers]") {
    const auto bad = includes_outside("topo/core", {"topo/core/"});
    INFO(Catch::Detail::stringify(bad));
    CHECK(bad.empty());
}

TEST_CASE("topo/sources includes neither the planner nor the writers", "[layers]") {
    const auto bad = includes_outside("topo/sources", {"topo/core/", "topo/sources/"});
    INFO(Catch::Detail::stringify(bad));
    CHECK(bad.empty());
}

TEST_CASE("topo/plan includes only topo/core and itself", "[layers]") {
    const auto bad = includes_outside("topo/plan", {"topo/core/", "topo/plan/"});
    INFO(Catch::Detail::stringify(bad));
    CHECK(bad.empty());
}
