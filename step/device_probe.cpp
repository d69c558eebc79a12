#include "step/device_probe.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gputopo::step {

namespace {

// "nvidia12" or "renderD128": a prefix then digits only.
bool gpu_file_name(const char* name) {
    for (const char* prefix : {"nvidia", "renderD"}) {
        const size_t n = std::strlen(prefix);
        if (std::strncmp(name, prefix, n) != 0) continue;
        const char* p = name + n;
        if (!*p) return false;
        for (; *p; ++p)
            if (*p < '0' || *p > '9') return false;
        return true;
    }
    return false;
}

void probe_dir(const std::string& dir, GpuDeviceFiles& out, int& looked) {
    DIR* d = opendir(dir.c_str());
    if (!d) return;
    while (dirent* e = readdir(d)) {
        if (!gpu_file_name(e->d_name)) continue;
        if (++looked > 1024) break;
        ++out.present;
        const std::string path = dir + "/" + e->d_name;
        if (access(path.c_str(), R_OK | W_OK) == 0 || (errno != EPERM && errno != EACCES)) ++out.openable;
    }
    closedir(d);
}

}  // namespace

std::optional<GpuDeviceFiles> probe_gpu_device_files(const std::string& dir) {
    GpuDeviceFiles out;
    int looked = 0;
    if (dir.empty()) {
        probe_dir("/dev", out, looked);
        probe_dir("/dev/dri", out, looked);
    } else {
        probe_dir(dir, out, looked);
    }
    if (out.present == 0) return std::nullopt;
    return out;
}

std::optional<int> openable_gpu_count(const std::string& dir) {
    auto f = probe_gpu_device_files(dir);
    if (!f) return std::nullopt;
    return f->openable;
}

}  // namespace gputopo::step
