#include "launcher/env/nccl_env.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <sys/socket.h>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "topo/core/env_names.hpp"
#include "topo/core/files.hpp"
#include "topo/core/strings.hpp"

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
    std::string first = v.substr(1, v.find(',') == std::string::npos ? std::string::npos : v.find(',') - 1);
    return {{env::kNcclSocketIfname, v, true}, {env::kGlooSocketIfname, first, true}};
}

namespace {

// NCCL's own files are small; a longer one (NCCL_CONF_FILE=/dev/zero, a FIFO)
// is not NCCL's (issue 20, H8): read with the project's bounded reader, never
// blocking, at most this many bytes, else ignored.
constexpr uint64_t kMaxNcclConfBytes = uint64_t{1} << 20;

void read_conf_file(const std::string& path, std::map<std::string, ConfValue>& out) {
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{kMaxNcclConfBytes, true});
    if (!text) return;
    size_t pos = 0;
    for (int n = 0; pos < text->size() && n < 10000; ++n) {
        size_t nl = text->find('\n', pos);
        std::string line = text->substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? text->size() : nl + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        size_t eq = line.find('=');
        if (eq == std::string::npos || eq == 0) continue;
        std::string name = line.substr(0, eq);
        if (name.rfind("NCCL_", 0) != 0) continue;
        out.emplace(name, ConfValue{line.substr(eq + 1), path});
    }
}

std::string home_dir(const Getenv& get) {
    if (auto h = get("HOME"); h && !h->empty()) return *h;
    if (passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
    return "";
}

}  // namespace

std::map<std::string, ConfValue> nccl_conf_values(const Getenv& get, const std::string& root) {
    std::map<std::string, ConfValue> out;
    if (auto f = get(env::kNcclConfFile); f && !f->empty()) {
        read_conf_file(*f, out);
    } else {
        std::string home = home_dir(get);
        if (!home.empty()) read_conf_file(home + "/.nccl.conf", out);
    }
    read_conf_file(root + "/etc/nccl.conf", out);
    return out;
}

Getenv with_nccl_conf(const Getenv& get, const std::map<std::string, ConfValue>& conf) {
    if (conf.empty()) return get;
    return [get, conf](const std::string& name) -> std::optional<std::string> {
        if (auto v = get(name)) return v;
        auto it = conf.find(name);
        if (it == conf.end()) return std::nullopt;
        return it->second.value;
    };
}

}  // namespace gputopo::launch
