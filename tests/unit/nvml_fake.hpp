// How the unit tests reach the fake libnvidia-ml.so.1 (tests/fakes/nvml/) and
// its fixtures (tests/fixtures/nvml/). The library path comes from
// $GPUTOPO_FAKE_NVML (set by tests/run_tests.sh), else from the test binary's
// own build directory; a missing library fails the test rather than skipping.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/unit/fixtures.hpp"

namespace gputopo_test {

inline std::string fake_nvml_library() {
    if (const char* p = std::getenv("GPUTOPO_FAKE_NVML")) return p;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return "";
    std::string dir(exe, static_cast<size_t>(n));
    dir.erase(dir.rfind('/'));
    return dir + "/fake-nvml/libnvidia-ml.so.1";
}

inline bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

inline std::string nvml_fixture(const std::string& name) { return source_dir() + "/tests/fixtures/nvml/" + name; }

// Selects the fake's fixture for the lifetime of the object.
class FakeNvmlScenario {
public:
    explicit FakeNvmlScenario(const std::string& fixture_name) {
        if (const char* old = std::getenv(kVar)) {
            had_old_ = true;
            old_ = old;
        }
        setenv(kVar, nvml_fixture(fixture_name).c_str(), 1);
    }
    ~FakeNvmlScenario() {
        if (had_old_)
            setenv(kVar, old_.c_str(), 1);
        else
            unsetenv(kVar);
    }
    FakeNvmlScenario(const FakeNvmlScenario&) = delete;
    FakeNvmlScenario& operator=(const FakeNvmlScenario&) = delete;

private:
    static constexpr const char* kVar = "GPUTOPO_FAKE_NVML_FIXTURE";
    bool had_old_ = false;
    std::string old_;
};

}  // namespace gputopo_test
