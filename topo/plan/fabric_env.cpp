#include "topo/plan/fabric_env.hpp"

#include "topo/core/env_names.hpp"
#include "topo/core/pci_address.hpp"

namespace gputopo {

namespace {

constexpr unsigned kAmazonVendor = 0x1d0f;
constexpr unsigned kCrayVendor = 0x17db;

const PciObject* pci_of(const Node& node, const Nic& nic) {
    if (nic.pci_object >= 0 && static_cast<size_t>(nic.pci_object) < node.pci.size())
        return &node.pci[static_cast<size_t>(nic.pci_object)];
    for (const auto& o : node.pci)
        if (o.has_address && o.address == nic.pci && o.kind == PciKind::Device) return &o;
    return nullptr;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_cxi_device_name(const std::string& name) {
    if (!starts_with(name, "cxi") || name.size() == 3) return false;
    for (size_t i = 3; i < name.size(); ++i)
        if (name[i] < '0' || name[i] > '9') return false;
    return true;
}

}  // namespace

const char* fabric_name(Fabric f) {
    switch (f) {
        case Fabric::Efa: return "efa";
        case Fabric::Cxi: return "cxi";
        case Fabric::Verbs: break;
    }
    return "verbs";
}

Fabric nic_fabric(const Node& node, const Nic& nic) {
    if (const PciObject* o = pci_of(node, nic)) {
        if (o->vendor_id == kAmazonVendor && (o->device_id & 0xfff0u) == 0xefa0u) return Fabric::Efa;
        if (o->vendor_id == kCrayVendor) return Fabric::Cxi;
    }
    if (is_cxi_device_name(nic.name)) return Fabric::Cxi;
    return Fabric::Verbs;
}

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

bool is_device_name(const std::string& name) {
    PciAddress a;
    return !name.empty() && !PciAddress::try_parse(name, a);
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

}  // namespace gputopo
