#include "topo/sources/nic_policy.hpp"

#include <algorithm>

#include "topo/core/errors.hpp"
#include "topo/core/pci_address.hpp"

namespace gputopo {

namespace {

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':' || c == '-';
}

const char* const kExpected = "expected a comma-separated list of RDMA devices, netdevs or PCI bus ids, "
                              "e.g. mlx5_4,bond0,0000:d2:00.0";

std::vector<std::string> unmatched(const Node& node, const std::vector<std::string>& names, const char* list) {
    std::vector<std::string> out;
    for (const auto& name : names)
        if (std::none_of(node.nics.begin(), node.nics.end(), [&](const Nic& n) { return nic_matches(n, name); }))
            out.push_back(std::string("NIC policy: the ") + list + " list names '" + name + "', which is not on this node");
    return out;
}

}  // namespace

std::vector<std::string> parse_nic_list(const std::string& value, const std::string& what) {
    if (value.empty()) throw ParseError(what + ": empty list (" + kExpected + ")");
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= value.size()) {
        size_t comma = value.find(',', start);
        std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty()) throw ParseError(what + value + ": empty name (" + kExpected + ")");
        auto bad = std::find_if_not(item.begin(), item.end(), name_char);
        if (bad != item.end())
            throw ParseError(what + value + ": '" + item + "' has the character '" + std::string(1, *bad) + "' (" +
                             kExpected + ")");
        if (std::find(out.begin(), out.end(), item) != out.end())
            throw ParseError(what + value + ": '" + item + "' is listed twice");
        out.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

bool nic_matches(const Nic& nic, const std::string& name) {
    if (nic.name == name || std::find(nic.netdevs.begin(), nic.netdevs.end(), name) != nic.netdevs.end()) return true;
    PciAddress a;
    return PciAddress::try_parse(name, a) && nic.pci == a;
}

std::vector<std::string> apply_nic_policy(Node& node, const NicPolicy& policy) {
    for (auto& nic : node.nics) {
        const bool included = policy.include.empty() ||
                              std::any_of(policy.include.begin(), policy.include.end(),
                                          [&](const std::string& n) { return nic_matches(nic, n); });
        const bool excluded = std::any_of(policy.exclude.begin(), policy.exclude.end(),
                                          [&](const std::string& n) { return nic_matches(nic, n); });
        if (!included || excluded) nic.storage = true;
    }
    std::vector<std::string> out = unmatched(node, policy.include, "include");
    for (auto& m : unmatched(node, policy.exclude, "exclude")) out.push_back(std::move(m));
    return out;
}

}  // namespace gputopo
