// Where the unit tests find their fixture files.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace gputopo_test {

inline std::string source_dir() {
    if (const char* d = std::getenv("GPUTOPO_SOURCE_DIR")) return d;
    return GPUTOPO_SOURCE_DIR;
}

// The shipped copy of ../shared/topologies (tests/fixtures/topologies).
inline std::string topologies_dir() { return source_dir() + "/tests/fixtures/topologies"; }

inline std::string topology(const std::string& relative) { return topologies_dir() + "/" + relative; }

}  // namespace gputopo_test
