#include "topo/core/nic_fabric.hpp"

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

bool is_cxi_device_name(const std::string& name) {
    if (!starts_with(name, "cxi") || name.size() == 3) return false;
    for (size_t i = 3; i < name.size(); ++i)
        if (name[i] < '0' || name[i] > '9') return false;
    return true;
}

bool is_device_name(const std::string& name) {
    PciAddress a;
    return !name.empty() && !PciAddress::try_parse(name, a);
}

}  // namespace gputopo
