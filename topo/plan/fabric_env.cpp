#include "topo/plan/fabric_env.hpp"

#include "topo/core/env_names.hpp"
#include "topo/core/strings.hpp"

namespace gputopo {

Fabric node_fabric(const Node& node, const std::vector<std::string>& nics) {
    if (nics.empty()) return Fabric::Verbs;
    Fabric f = Fabric::Verbs;
    for (size_t i = 0; i < nics.size(); ++i) {
        const Nic* n = node.nic(nics[i]);
        Fabric x = n ? nic_fabric(node, *n) : Fabric::Verbs;
        if (i == 0) f = x;
        else if (x != f) return Fabric::Verbs;
    }
    return f;
}

std::vector<std::string> fabric_devices(const Node& node, const std::vector<std::string>& nics, Fabric f) {
    std::vector<std::string> out;
    for (const auto& name : nics) {
        const Nic* n = node.nic(name);
        if (!n || !is_device_name(name) || nic_fabric(node, *n) != f) continue;
        if (f == Fabric::Cxi && !is_cxi_device_name(name)) continue;  // hsi0 is a netdev, not a CXI device
        out.push_back(name);
    }
    return out;
}

std::vector<EnvVar> fabric_env(const Node& node, Fabric f, const std::vector<std::string>& task_nics) {
    std::vector<EnvVar> out;
    if (f == Fabric::Verbs) return out;
    out.push_back({env::kFiProvider, fabric_name(f), true});
    std::vector<std::string> devices = fabric_devices(node, task_nics, f);
    if (!devices.empty())
        out.push_back({f == Fabric::Efa ? env::kFiEfaIface : env::kFiCxiDeviceName, join_strings(devices), true});
    return out;
}

std::vector<std::string> unnamed_nic_warnings(const Node& node, const Plan& plan) {
    std::vector<std::string> unnamed;
    for (const auto& n : plan.node_nics)
        if (!is_device_name(n)) unnamed.push_back(n);
    if (unnamed.empty()) return {};
    return {"NIC(s) " + join_strings(unnamed) + " of " + node.source +
            " have no device name (only a PCI address, and none under /sys/bus/pci/devices/ADDR/{infiniband,cxi,net} "
            "on this node): no NIC variable names them"};
}

}  // namespace gputopo
