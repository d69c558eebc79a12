#include "step/framework_env.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "step/slurm_rank_order.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/hostlist.hpp"
#include "topo/fabric/rank_order.hpp"

namespace gputopo::step {

namespace {

bool parse_uint(const std::string& s, unsigned long long& out) {
    if (s.empty() || s.size() > 18) return false;
    unsigned long long n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + static_cast<unsigned>(c - '0');
    }
    out = n;
    return true;
}

// The first of `names` that is set and not empty.
std::optional<std::string> first_set(const Getenv& get, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (auto v = get(n); v && !v->empty()) return v;
    return std::nullopt;
}

}  // namespace

int tasks_on_node(const std::string& text, int node_index) {
    auto bad = [&]() -> ParseError {
        return ParseError("tasks per node '" + text + "' (node index " + std::to_string(node_index) +
                          "): expected Slurm's form such as 2(x3),1 covering the node");
    };
    if (node_index < 0) throw bad();
    size_t pos = 0;
    long long seen = 0;
    while (pos < text.size()) {
        size_t comma = text.find(',', pos);
        std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        pos = comma == std::string::npos ? text.size() : comma + 1;
        unsigned long long count = 0, repeat = 1;
        size_t paren = item.find("(x");
        if (paren != std::string::npos) {
            if (item.back() != ')' || !parse_uint(item.substr(paren + 2, item.size() - paren - 3), repeat)) throw bad();
            item = item.substr(0, paren);
        }
        if (!parse_uint(item, count) || repeat == 0) throw bad();
        if (node_index < seen + static_cast<long long>(repeat)) return static_cast<int>(count);
        seen += static_cast<long long>(repeat);
    }
    throw bad();
}

std::string first_host(const std::string& hostlist) {
    Hostlist h = Hostlist::parse(hostlist);
    if (h.empty()) throw ParseError("node list '" + hostlist + "': expected at least one host name");
    return h.nth(0);
}

int master_port(unsigned long long job_id, unsigned long long step_id, int lo, int hi) {
    if (hi < lo) std::swap(lo, hi);
    const unsigned long long span = static_cast<unsigned long long>(hi - lo) + 1;
    const unsigned long long offset = (job_id % span + (step_id % span) * (1009 % span)) % span;
    return lo + static_cast<int>(offset);
}

std::string step_first_node(const Getenv& get) {
    auto nodes = first_set(get, {env::kSlurmStepNodelist, env::kSlurmJobNodelist, env::kSlurmNodelist});
    return nodes ? first_host(*nodes) : std::string();
}

void apply_island_order(std::vector<EnvVar>& wanted, const std::string& rank, const std::string& group_rank) {
    auto put = [&](const char* name, const std::string& value) {
        if (value.empty()) return;
        for (EnvVar& v : wanted)
            if (v.name == name) {
                v.value = value;
                return;
            }
        wanted.push_back({name, value, true});
    };
    // ROLE_RANK is RANK for torchrun's single role.
    put(env::kRankVar, rank);
    put(env::kRoleRank, rank);
    put(env::kGroupRank, group_rank);
    put(env::kNodeRank, group_rank);
}

std::string port_clash(int port) {
    if (port <= 0 || port > 65535) return "MASTER_PORT=" + std::to_string(port) + " is not a TCP port (1-65535)";
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = fd >= 0;
    if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return "";  // cannot tell
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons(static_cast<uint16_t>(port));
        rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons(static_cast<uint16_t>(port));
        rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    const int err = errno;
    close(fd);
    if (rc == 0 || err != EADDRINUSE) return "";
    return "MASTER_PORT=" + std::to_string(port) +
           " is already in use on this node (another program listens there; rank 0 would fail with errno 98): export "
           "MASTER_PORT=<a free port> before srun, or give gputopo-launch --master-port-range";
}

bool host_resolves(const std::string& host, double timeout_s) {
    if (host.empty()) return false;
    // getaddrinfo_a: a DNS server that does not answer cannot hold the step.
    struct Req {
        std::string name;
        addrinfo hints{};
        gaicb cb{};
    };
    auto* r = new Req;
    r->name = host;
    r->hints.ai_socktype = SOCK_STREAM;
    r->cb.ar_name = r->name.c_str();
    r->cb.ar_request = &r->hints;
    gaicb* list[1] = {&r->cb};
    if (getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr) != 0) {
        delete r;
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        int st = gai_error(&r->cb);
        if (st != EAI_INPROGRESS) {
            if (r->cb.ar_result) freeaddrinfo(r->cb.ar_result);
            delete r;
            return st == 0;
        }
        double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) break;
        timespec ts{static_cast<time_t>(left), static_cast<long>((left - static_cast<double>(static_cast<time_t>(left))) * 1e9)};
        const gaicb* const wait_list[1] = {&r->cb};
        gai_suspend(wait_list, 1, &ts);
    }
    if (gai_cancel(&r->cb) == EAI_ALLDONE) {
        if (r->cb.ar_result) freeaddrinfo(r->cb.ar_result);
        delete r;
    }
    // else: the lookup still runs and owns `r` (a few bytes, once per step).
    return false;
}

std::string parse_node_addr(const std::string& out, const std::string& name) {
    // One line per node: "NodeName=n1 Arch=... NodeAddr=127.0.0.1 NodeHostName=...".
    size_t line_start = 0;
    while (line_start < out.size()) {
        size_t line_end = out.find('\n', line_start);
        if (line_end == std::string::npos) line_end = out.size();
        const std::string line = out.substr(line_start, line_end - line_start);
        line_start = line_end + 1;
        if (line.rfind("NodeName=" + name + " ", 0) != 0) continue;
        size_t at = line.find(" NodeAddr=");
        if (at == std::string::npos) return "";
        at += 10;
        size_t end = line.find_first_of(" \t", at);
        std::string addr = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
        if (addr.empty() || addr.size() > 255) return "";
        for (char c : addr)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_')) return "";
        return addr;
    }
    return "";
}

namespace {
bool safe_addr(const std::string& a) {
    if (a.empty() || a.size() > 255) return false;
    for (char c : a)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_')) return false;
    return true;
}

// The value of `key=` (case-insensitive) among the words of one slurm.conf line.
std::string conf_word(const std::string& line, const char* key) {
    const size_t klen = std::strlen(key);
    size_t pos = 0;
    while (pos < line.size()) {
        size_t b = line.find_first_not_of(" \t", pos);
        if (b == std::string::npos) break;
        size_t e = line.find_first_of(" \t", b);
        if (e == std::string::npos) e = line.size();
        if (e - b > klen && line[b + klen] == '=' && strncasecmp(line.c_str() + b, key, klen) == 0)
            return line.substr(b + klen + 1, e - b - klen - 1);
        pos = e;
    }
    return "";
}
}  // namespace

std::string node_addr_from_conf(const std::string& text, const std::string& name) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        const std::string names = conf_word(line, "NodeName");
        if (names.empty() || names == "DEFAULT") continue;
        try {
            Hostlist hl = Hostlist::parse(names);
            auto at = hl.index_of(name);
            if (!at) continue;
            const std::string addrs = conf_word(line, "NodeAddr");
            if (addrs.empty()) return "";
            Hostlist al = Hostlist::parse(addrs);
            std::string a = al.count() == hl.count() ? al.nth(*at) : (al.count() == 1 ? al.nth(0) : "");
            return safe_addr(a) ? a : "";
        } catch (const std::exception&) {
            continue;
        }
    }
    return "";
}

std::string read_local_slurm_conf() {
    const char* conf = std::getenv(env::kSlurmConf);
    const std::string path = conf && *conf ? conf : "/etc/slurm/slurm.conf";
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return "";
    struct stat st {};
    std::string out;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        char buf[65536];
        ssize_t n;
        while (out.size() < (4u << 20) && (n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return out;
}

MasterAddr resolve_master_addr(const std::string& first, const CommandRunner& run, double timeout_s,
                               const std::string& slurm_conf) {
    MasterAddr m;
    m.addr = first;
    if (first.empty() || host_resolves(first, timeout_s)) return m;
    std::string addr = node_addr_from_conf(slurm_conf, first);
    if (!addr.empty() && addr != first && host_resolves(addr, timeout_s)) {
        m.addr = addr;
        return m;
    }
    addr.clear();
    if (run) {
        auto [status, output] = run({"scontrol", "show", "node", "-o", first}, timeout_s);
        if (status == 0) addr = parse_node_addr(output, first);
    }
    if (!addr.empty() && addr != first) {
        m.addr = addr;
        return m;
    }
    m.warning = "MASTER_ADDR: the first node '" + first + "' does not resolve" +
                (addr.empty() ? std::string(" and Slurm gave no NodeAddr for it") : std::string(", nor does its NodeAddr")) +
                "; ranks may time out connecting: export MASTER_ADDR=<its address>";
    return m;
}

long node_rank_from_ranks(const Getenv& get) {
    const std::optional<uint64_t> first_rank = node_first_rank(get);
    if (!first_rank) return -1;
    const uint64_t first = *first_rank;
    const SlurmNodeOrder o = step_node_order(get, first, nullptr, false);
    if (o.node_rank >= 0) return o.node_rank;
    auto tpn = first_set(get, {env::kSlurmStepTasksPerNode, env::kSlurmTasksPerNode});
    if (!tpn) return -1;
    try {
        const TaskCounts counts = TaskCounts::parse(*tpn);
        if (counts.runs().size() != 1 || counts.runs()[0].first == 0) return -1;
        const uint64_t per = counts.runs()[0].first;
        if (first % per != 0 || first / per >= counts.nodes()) return -1;
        return static_cast<long>(first / per);
    } catch (const std::exception&) {
        return -1;
    }
}

void torchrun_env(const Getenv& get, const FrameworkInputs& in, std::vector<EnvVar>& out) {
    auto first = [&](std::initializer_list<const char*> names) { return first_set(get, names); };
    auto add = [&](const char* name, const std::string& value) { out.push_back({name, value, true}); };
    const long node_rank = in.node_rank >= 0 ? in.node_rank : node_rank_from_ranks(get);
    if (node_rank >= 0) {
        add(env::kGroupRank, std::to_string(node_rank));
        add(env::kNodeRank, std::to_string(node_rank));
    }
    if (auto v = first({env::kSlurmStepNumNodes, env::kSlurmJobNumNodes, env::kSlurmNnodes})) add(env::kGroupWorldSize, *v);
    if (auto v = first({env::kSlurmProcid})) add(env::kRoleRank, *v);
    if (auto v = first({env::kSlurmStepNumTasks, env::kSlurmNtasks})) add(env::kRoleWorldSize, *v);
    if (first({env::kSlurmProcid})) add(env::kRoleName, "default");
    auto job = first({env::kSlurmJobId, env::kSlurmJobid});
    if (job) {
        add(env::kTorchelasticRunId, *job);
        add(env::kTorchelasticRestartCount, first({env::kSlurmRestartCount}).value_or("0"));
    }
    if (in.max_restarts >= 0) add(env::kTorchelasticMaxRestarts, std::to_string(in.max_restarts));
    if (!in.error_file.empty()) add(env::kTorchelasticErrorFile, in.error_file);
}

std::vector<EnvVar> framework_env(const Getenv& get, const FrameworkInputs& in) {
    std::vector<EnvVar> out;
    auto first = [&](std::initializer_list<const char*> names) { return first_set(get, names); };
    auto add = [&](const char* name, const std::string& value) { out.push_back({name, value, true}); };

    if (auto v = first({env::kSlurmProcid})) add(env::kRankVar, *v);
    if (auto v = first({env::kSlurmLocalid})) add(env::kLocalRank, *v);
    if (auto v = first({env::kSlurmStepNumTasks, env::kSlurmNtasks})) add(env::kWorldSize, *v);
    if (auto tpn = first({env::kSlurmStepTasksPerNode, env::kSlurmTasksPerNode})) {
        unsigned long long node = 0;
        if (auto id = first({env::kSlurmNodeid}); id && parse_uint(*id, node))
            add(env::kLocalWorldSize, std::to_string(tasks_on_node(*tpn, static_cast<int>(node))));
    }
    if (!in.master_addr.empty())
        add(env::kMasterAddr, in.master_addr);
    else if (auto nodes = first({env::kSlurmStepNodelist, env::kSlurmJobNodelist, env::kSlurmNodelist}))
        add(env::kMasterAddr, first_host(*nodes));
    unsigned long long job = 0, step = 0;
    auto job_text = first({env::kSlurmJobId, env::kSlurmJobid});
    if (!in.master_port.empty()) {
        add(env::kMasterPort, in.master_port);
    } else if (job_text && parse_uint(*job_text, job)) {
        if (auto s = first({env::kSlurmStepId, env::kSlurmStepid})) parse_uint(*s, step);
        add(env::kMasterPort, std::to_string(master_port(job, step, in.master_port_min, in.master_port_max)));
    }
    torchrun_env(get, in, out);
    return out;
}

}  // namespace gputopo::step
