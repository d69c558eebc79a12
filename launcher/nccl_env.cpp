#include "launcher/nccl_env.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>

#include "topo/core/env_names.hpp"

namespace gputopo::launch {

namespace {
bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
}  // namespace

bool usable_socket_interface(const NetInterface& i) {
    if (!i.up || i.loopback || !i.has_address || i.name.empty()) return false;
    for (const char* p : {"lo", "docker", "virbr", "veth", "br-", "cni", "flannel", "cali", "tun", "tap"})
        if (starts_with(i.name, p)) return false;
    return true;
}

std::string socket_ifname_value(const std::vector<NetInterface>& interfaces) {
    std::vector<std::string> ib, rest;
    for (const auto& i : interfaces) {
        if (!usable_socket_interface(i)) continue;
        auto& into = starts_with(i.name, "ib") ? ib : rest;
        if (std::find(into.begin(), into.end(), i.name) == into.end()) into.push_back(i.name);
    }
    ib.insert(ib.end(), rest.begin(), rest.end());
    if (ib.empty()) return "";
    return "=" + join_strings(ib);
}

std::vector<NetInterface> list_interfaces() {
    std::vector<NetInterface> out;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return out;
    for (ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_name) continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const NetInterface& n) { return n.name == a->ifa_name; });
        if (it == out.end()) {
            out.push_back({a->ifa_name, false, false, false});
            it = out.end() - 1;
        }
        it->up = it->up || (a->ifa_flags & IFF_UP);
        it->loopback = it->loopback || (a->ifa_flags & IFF_LOOPBACK);
        if (a->ifa_addr && (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6))
            it->has_address = true;
    }
    freeifaddrs(list);
    return out;
}

std::vector<EnvVar> nccl_socket_env(const std::vector<NetInterface>& interfaces) {
    std::string v = socket_ifname_value(interfaces);
    if (v.empty()) return {};
    return {{env::kNcclSocketIfname, v, true}};
}

}  // namespace gputopo::launch
