// NCCL's socket interface list. NCCL_IB_HCA (the node-wide exact-match list of
// usable RDMA NICs) comes from the plan through topo/task_env, the same
// definition the plugin uses; this file adds NCCL_SOCKET_IFNAME: the
// interfaces that are up and have an address, never lo, docker*, virbr*,
// veth* (nor other container bridges: br-*, cni*, flannel*, cali*, tun*,
// tap*), as an exact-match list "=ib0,eth0" (IPoIB first, then the rest in
// the system's order); and GLOO_SOCKET_IFNAME (PyTorch's gloo backend, used
// for CPU collectives and by some frameworks' barriers): the first of that
// list only, without "=" (gloo takes plain names, and with several it
// round-robins over them and needs every rank to list the same number). A
// value the user set wins.
//
// NCCL also reads NAME=VALUE lines from NCCL_CONF_FILE (else ~/.nccl.conf)
// and /etc/nccl.conf, and an environment variable beats the file
// (nccl src/misc/param.cc, initEnvFunc/setEnvFile). A NCCL_* value in one of
// those files is the user's (or the site's): gputopo does not override it
// with an environment variable (nccl_conf_values, with_nccl_conf).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/options/options.hpp"

#include "topo/core/env_var.hpp"

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
// NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME for this machine, user_wins;
// empty list when none usable.
std::vector<EnvVar> nccl_socket_env(const std::vector<NetInterface>& interfaces);

// The NCCL_* settings in NCCL's configuration files, in NCCL's order:
// NCCL_CONF_FILE (else $HOME/.nccl.conf; NCCL itself takes the home
// directory from the password database, the same unless HOME was changed),
// then `root`/etc/nccl.conf; the first file naming a variable gives its value.
// '#' lines and lines without '=' are skipped. Never throws.
struct ConfValue {
    std::string value;
    std::string file;
};
std::map<std::string, ConfValue> nccl_conf_values(const Getenv& getenv_fn, const std::string& root = "");

// `getenv_fn` that also answers for the variables set in those files.
Getenv with_nccl_conf(const Getenv& getenv_fn, const std::map<std::string, ConfValue>& conf);

}  // namespace gputopo::launch
