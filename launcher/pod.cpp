#include "launcher/pod.hpp"

#include <dirent.h>

#include <fstream>
#include <sstream>

namespace gputopo::launch {

namespace {

std::optional<CpuSet> read_cpulist(const std::string& path) {
    std::ifstream in(path);
    std::string text;
    if (!in || !std::getline(in, text)) return std::nullopt;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (text.empty()) return std::nullopt;
    try {
        CpuSet s = CpuSet::parse_list(text);
        if (s.empty()) return std::nullopt;
        return s;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// The cgroup v2 path of this process ("0::/kubepods/pod.../cid" -> that path).
std::string own_cgroup_v2(const std::string& root) {
    std::ifstream in(root + "/proc/self/cgroup");
    std::string line;
    while (in && std::getline(in, line))
        if (line.rfind("0::", 0) == 0) return line.substr(3);
    return "";
}

int count_gpu_dirs(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (!d) return 0;
    int n = 0;
    while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n;
}

}  // namespace

std::optional<CpuSet> cgroup_cpuset(const std::string& root) {
    const std::string base = root + "/sys/fs/cgroup";
    std::string own = own_cgroup_v2(root);
    if (!own.empty() && own != "/")
        if (auto s = read_cpulist(base + own + "/cpuset.cpus.effective")) return s;
    if (auto s = read_cpulist(base + "/cpuset.cpus.effective")) return s;
    return read_cpulist(base + "/cpuset/cpuset.effective_cpus");
}

PodGpus pod_gpus(const Getenv& get, const std::string& root) {
    PodGpus out;
    auto nvd = get("NVIDIA_VISIBLE_DEVICES");
    int count = 0;
    if (nvd && *nvd != "all") {
        out.from = "NVIDIA_VISIBLE_DEVICES";
        if (*nvd == "none" || *nvd == "void" || nvd->empty()) return out;
        std::stringstream ss(*nvd);
        std::string item;
        while (std::getline(ss, item, ','))
            if (!item.empty()) ++count;
    } else {
        count = count_gpu_dirs(root + "/proc/driver/nvidia/gpus");
        if (count > 0) out.from = "/proc/driver/nvidia/gpus";
    }
    for (int i = 0; i < count; ++i) out.gpus.push_back(i);
    return out;
}

}  // namespace gputopo::launch
