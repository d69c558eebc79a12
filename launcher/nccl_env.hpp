// NCCL's socket interface list. NCCL_IB_HCA (the node-wide exact-match list of
// usable RDMA NICs) comes from the plan through topo/task_env, the same
// definition the plugin uses; this file adds NCCL_SOCKET_IFNAME: the
// interfaces that are up and have an address, never lo, docker*, virbr*,
// veth* (nor other container bridges: br-*, cni*, flannel*, cali*, tun*,
// tap*), as an exact-match list "=ib0,eth0" (IPoIB first, then the rest in
// the system's order). A value the user set wins.
#pragma once

#include <string>
#include <vector>

#include "topo/plan/task_env.hpp"

namespace gputopo::launch {

struct NetInterface {
    std::string name;
    bool up = false;
    bool loopback = false;
    bool has_address = false;  // IPv4 or IPv6
};

bool usable_socket_interface(const NetInterface& i);
// Pure: the exact-match list value, "" when nothing is usable.
std::string socket_ifname_value(const std::vector<NetInterface>& interfaces);
// This machine's interfaces (getifaddrs).
std::vector<NetInterface> list_interfaces();
// NCCL_SOCKET_IFNAME for this machine, user_wins; empty list when none usable.
std::vector<EnvVar> nccl_socket_env(const std::vector<NetInterface>& interfaces);

}  // namespace gputopo::launch
