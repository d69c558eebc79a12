// Where the unit tests find their fixture files.
#pragma once

#include <dirent.h>

#include <algorithm>
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

// Every shipped hwloc and NCCL XML file (some are not loadable topologies), sorted.
inline std::vector<std::string> topology_files() {
    std::vector<std::string> out;
    for (const char* sub : {"hwloc", "nccl"}) {
        std::string dir = topology(sub);
        if (DIR* d = opendir(dir.c_str())) {
            while (dirent* e = readdir(d)) {
                std::string name = e->d_name;
                if (name.size() > 4 && name.compare(name.size() - 4, 4, ".xml") == 0) out.push_back(dir + "/" + name);
            }
            closedir(d);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace gputopo_test
