#include "launcher/ranks/pod.hpp"

#include <dirent.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "topo/core/files.hpp"

namespace gputopo::launch {

namespace {

std::optional<CpuSet> read_cpulist(const std::string& path) {
    std::string text = read_first_line(path);
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

// The lines of a small kernel file, through the project's bounded reader
// (issue 20, H8: no FIFO, no device, at most 64 KiB; nothing when it cannot be read).
std::vector<std::string> small_file_lines(const std::string& path) {
    std::vector<std::string> out;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{uint64_t{1} << 16, true});
    if (!text) return out;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The cgroup v2 path of this process ("0::/kubepods/pod.../cid" -> that path).
std::string own_cgroup_v2(const std::string& root) {
    for (const std::string& line : small_file_lines(root + "/proc/self/cgroup"))
        if (line.rfind("0::", 0) == 0) return line.substr(3);
    return "";
}

std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> out;
    DIR* d = opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d))
        if (e->d_name[0] != '.' && out.size() < 65536) out.push_back(e->d_name);
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

// The driver's GPUs: /proc/driver/nvidia/gpus/<PCI bus id>/.
std::vector<std::string> driver_gpus(const std::string& root) { return list_dir(root + "/proc/driver/nvidia/gpus"); }

// UUID -> PCI bus id, from each GPU's "GPU UUID:" line.
std::map<std::string, std::string> driver_uuids(const std::string& root) {
    std::map<std::string, std::string> out;
    for (const std::string& bus : driver_gpus(root)) {
        for (const std::string& line : small_file_lines(root + "/proc/driver/nvidia/gpus/" + bus + "/information")) {
            if (line.rfind("GPU UUID:", 0) != 0) continue;
            size_t a = line.find_first_not_of(" \t", 9);
            if (a != std::string::npos) out[line.substr(a)] = bus;
        }
    }
    return out;
}

// The node's NVIDIA GPUs in PCI bus-id order (what the topology numbers).
std::vector<std::string> node_gpu_buses(const std::string& root) {
    std::vector<std::string> out;
    const std::string base = root + "/sys/bus/pci/devices/";
    for (const std::string& bus : list_dir(base)) {
        std::string cls = read_first_line(base + bus + "/class");
        if (read_first_line(base + bus + "/vendor") == "0x10de" && (cls.rfind("0x0300", 0) == 0 || cls.rfind("0x0302", 0) == 0))
            out.push_back(bus);
    }
    return out;
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
    if (!nvd || *nvd == "all") {
        int count = static_cast<int>(driver_gpus(root).size());
        if (count > 0) out.from = "/proc/driver/nvidia/gpus";
        for (int i = 0; i < count; ++i) out.gpus.push_back(i);
        return out;
    }
    out.from = "NVIDIA_VISIBLE_DEVICES";
    if (*nvd == "none" || *nvd == "void" || nvd->empty()) return out;
    std::vector<std::string> items;
    std::stringstream ss(*nvd);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) items.push_back(item);
    if (items.size() > 4096) items.resize(4096);
    std::vector<std::string> node_bus = node_gpu_buses(root);
    std::map<std::string, std::string> uuid_bus = driver_uuids(root);
    std::set<int> indices;
    for (const std::string& item : items) {
        if (item.find_first_not_of("0123456789") == std::string::npos && item.size() < 6) {
            indices.insert(std::stoi(item));
            continue;
        }
        auto bus = uuid_bus.find(item);
        auto at = bus == uuid_bus.end() ? node_bus.end() : std::find(node_bus.begin(), node_bus.end(), bus->second);
        if (at == node_bus.end()) {
            out.note = "GPU " + item + " is not in " + root + "/proc/driver/nvidia/gpus/*/information with a PCI " +
                       "device in " + root + "/sys/bus/pci/devices; the container's numbering (0.." +
                       std::to_string(items.size() - 1) + ") stands in for the node's";
            out.gpus.clear();
            for (size_t i = 0; i < items.size(); ++i) out.gpus.push_back(static_cast<int>(i));
            return out;
        }
        indices.insert(static_cast<int>(at - node_bus.begin()));
    }
    out.gpus.assign(indices.begin(), indices.end());
    for (size_t i = 0; i < out.gpus.size(); ++i) out.container.push_back(static_cast<int>(i));
    if (out.container == out.gpus) out.container.clear();
    return out;
}

}  // namespace gputopo::launch
