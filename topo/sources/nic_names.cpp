#include "topo/sources/nic_names.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "topo/core/nic_fabric.hpp"

namespace gputopo {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> entry_names(const fs::path& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        out.push_back(it->path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

SysfsNicNames read_sysfs_nic_names(const std::string& root, const PciAddress& pci) {
    SysfsNicNames n;
    try {
        const fs::path dev = fs::path(root.empty() ? "/" : root) / "sys/bus/pci/devices" / pci.to_string();
        n.rdma = entry_names(dev / "infiniband");
        n.cxi = entry_names(dev / "cxi");
        n.netdevs = entry_names(dev / "net");
    } catch (...) {
        // unreadable sysfs: no names
    }
    return n;
}

int resolve_nic_names(Node& node, const std::string& root) {
    int renamed = 0;
    for (auto& nic : node.nics) {
        const bool has_name = is_device_name(nic.name);
        const bool cxi_netdev = has_name && nic_fabric(node, nic) == Fabric::Cxi && nic.name.rfind("cxi", 0) != 0;
        if (has_name && !cxi_netdev) continue;
        SysfsNicNames s = read_sysfs_nic_names(root, nic.pci);
        for (const auto& d : s.netdevs)
            if (!has(nic.netdevs, d)) nic.netdevs.push_back(d);
        std::string name;
        if (!s.rdma.empty()) name = s.rdma.front();
        else if (!s.cxi.empty()) name = s.cxi.front();
        else if (!nic.rdma && !s.netdevs.empty() && !has_name) name = s.netdevs.front();
        if (name.empty() || name == nic.name) continue;
        if (is_device_name(nic.name) && !has(nic.netdevs, nic.name)) nic.netdevs.push_back(nic.name);
        nic.name = name;
        if (!s.rdma.empty() || !s.cxi.empty()) nic.rdma = true;
        ++renamed;
    }
    if (renamed > 0) node.finalize();
    return renamed;
}

}  // namespace gputopo
