#include "launcher/options/options.hpp"

#include "topo/core/env_names.hpp"
#include "topo/core/suggest.hpp"

#include <csignal>
#include <cstring>
#include <unistd.h>

#include <optional>
#include <sstream>

#include "topo/core/errors.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/core/files.hpp"

namespace gputopo::launch {

const char* hook_ranks_name(HookRanks r) {
    switch (r) {
        case HookRanks::Zero: return "0";
        case HookRanks::Node: return "node";
        case HookRanks::All: return "all";
    }
    return "0";
}

namespace {

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos) return "";
    size_t b = s.find_last_not_of(" \t\r\n");
    return s.substr(a, b - a + 1);
}

[[noreturn]] void bad(const std::string& where, const std::string& value, const std::string& expected) {
    throw ParseError(where + " '" + value + "': expected " + expected);
}

long long parse_integer(const std::string& where, const std::string& v, long long lo, long long hi,
                        const std::string& expected) {
    if (v.empty()) bad(where, v, expected);
    size_t i = 0;
    bool neg = false;
    if (v[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i >= v.size()) bad(where, v, expected);
    long long n = 0;
    for (; i < v.size(); ++i) {
        if (v[i] < '0' || v[i] > '9') bad(where, v, expected);
        n = n * 10 + (v[i] - '0');
        if (n > 1000000000000LL) bad(where, v, expected);
    }
    if (neg) n = -n;
    if (n < lo || n > hi) bad(where, v, expected);
    return n;
}

bool parse_bool(const std::string& where, const std::string& v) {
    if (v == "1" || v == "yes" || v == "true" || v == "on") return true;
    if (v == "0" || v == "no" || v == "false" || v == "off") return false;
    bad(where, v, "yes or no");
}

struct Spec {
    const char* key;
    bool takes_value;
    const char* meta;
    const char* help;
    std::function<void(Options&, const std::string&, const std::string&)> set;
};

const std::vector<Spec>& specs() {
    static const std::vector<Spec> table = {
        {"help", false, "", "show this help and exit", [](Options& o, const std::string&, const std::string&) { o.help = true; }},
        {"version", false, "", "print the version and exit", [](Options& o, const std::string&, const std::string&) { o.version = true; }},
        {"dry-run", false, "", "print the environment and the plan, then exit",
         [](Options& o, const std::string& w, const std::string& v) { o.dry_run = v.empty() || parse_bool(w, v); }},
        {"verbose", false, "", "say what is set, kept and decided",
         [](Options& o, const std::string& w, const std::string& v) { o.verbose = v.empty() || parse_bool(w, v); }},
        {"config", true, "FILE", "key=value config file (read before everything else)",
         [](Options& o, const std::string&, const std::string& v) { o.config_path = v; }},
        {"log", true, "DIR", "append one JSON line per event to DIR/gputopo-launch.JOB.RANK.jsonl",
         [](Options& o, const std::string&, const std::string& v) { o.log_dir = v; }},
        {step::kGpuTopoOption, true, "MODE[,FLAG]",
         "binding when the plugin did not bind: none, closest, island; flags as srun's --gpu-topo (isolate, share, membind, ...)",
         [](Options& o, const std::string&, const std::string& v) { o.gpu_topo = step::parse_gpu_topo(v, "--gpu-topo "); }},
        {"topology", true, "FILE", "node topology file (hwloc or NCCL XML; %n node name, %h host name)",
         [](Options& o, const std::string&, const std::string& v) { o.topology = v; }},
        {"devices", true, "DIR", "where the node's GPU device files are, as plugstack devices= (default /dev and /dev/dri; %n node name, %h host name)",
         [](Options& o, const std::string&, const std::string& v) { o.devices = v; }},
        {"nic-include", true, "LIST", "only these NICs carry GPU traffic, as plugstack nic_include= (RDMA devices, netdevs, PCI bus ids)",
         [](Options& o, const std::string& w, const std::string& v) { o.nic_policy.include = parse_nic_list(v, w + " "); }},
        {"nic-exclude", true, "LIST", "never these NICs (storage, management HCA, bond), as plugstack nic_exclude=",
         [](Options& o, const std::string& w, const std::string& v) { o.nic_policy.exclude = parse_nic_list(v, w + " "); }},
        {"rank-order", true, "slurm|island", "RANK = SLURM_PROCID (slurm, default) or the island-ordered GPUTOPO_RANK",
         [](Options& o, const std::string& w, const std::string& v) {
             if (v != "slurm" && v != "island") bad(w, v, "slurm or island");
             o.rank_order = v;
         }},
        {"nccl-topo-file", true, "PATH",
         "write this node's NCCL topology XML to PATH (%n node name, %h host name, %j job id) and set NCCL_TOPO_FILE",
         [](Options& o, const std::string&, const std::string& v) { o.nccl_topo_file = v; }},
        {"islands", true, "FILE", "gputopo.conf for --rank-order=island without the plugin's GPUTOPO_RANK (adds to Slurm's topology)",
         [](Options& o, const std::string&, const std::string& v) { o.islands = v; }},
        {"layout", true, "SPEC",
         "RANK places a parallel layout, e.g. tp=8,pp=4[,cp=2,ep=8,order=tp-cp-ep-dp-pp]: TP/CP/EP groups inside "
         "NVLink domains, DP and PP across the fewest islands (islands as for --rank-order=island)",
         [](Options& o, const std::string& w, const std::string& v) {
             try {
                 (void)ParallelLayout::parse(v);
             } catch (const ParseError& e) {
                 bad(w, v, std::string("a layout: ") + e.what());
             }
             o.layout = v;
         }},
        {"nvlink-domain", true, "node|island|N",
         "with --layout: each node is one NVLink domain (node, default), each island is one (island: NVL72 racks), "
         "or N GPUs of a node share one",
         [](Options& o, const std::string& w, const std::string& v) {
             try {
                 (void)parse_nvlink_domain(v);
             } catch (const ParseError&) {
                 bad(w, v, "node, island or a GPU count");
             }
             o.nvlink_domain = v;
         }},
        {"model", true, "SPEC",
         "with --layout: the model (params=70B,layers=80,hidden=8192,seq=4096,micro-batch=1,micro-batches=16), so "
         "that whole pipelines go together where its pipeline traffic outweighs DP's; as gputopo ranks --model",
         [](Options& o, const std::string& w, const std::string& v) {
             try {
                 (void)parse_model_shape(v);
             } catch (const ParseError& e) {
                 bad(w, v, std::string("a model: ") + e.what());
             }
             o.model = v;
         }},
        {"island-procid", false, "",
         "with --rank-order=island or --layout also give the program SLURM_PROCID = that rank (for JAX, Lightning's "
         "Slurm path, Megatron-Bridge; the original stays in GPUTOPO_SLURM_PROCID)",
         [](Options& o, const std::string& w, const std::string& v) { o.island_procid = v.empty() || parse_bool(w, v); }},
        {"framework", true, "auto|jax",
         "jax: isolate gives way to JAX's own one-device choice (SLURM_LOCALID); refuses a plugin-isolated task JAX cannot run in",
         [](Options& o, const std::string& w, const std::string& v) {
             if (v != "auto" && v != "jax") bad(w, v, "auto or jax");
             o.framework = v;
         }},
        {"error-file", true, "PATTERN|auto|none",
         "TORCHELASTIC_ERROR_FILE per rank (%j job, %r rank, %R restart); auto: in --log DIR, else in "
         "/dev/shm/gputopo-launch.UID (else that directory under $TMPDIR or /tmp)",
         [](Options& o, const std::string&, const std::string& v) { o.error_file = v; }},
        {"sysroot", true, "DIR", "prefix for the /sys, /proc and /etc files read outside Slurm (cgroup cpuset, GPUs, nccl.conf; for tests)",
         [](Options& o, const std::string&, const std::string& v) { o.sysroot = v; }},
        {"master-port-range", true, "LO-HI", "MASTER_PORT range (default 20000-29999)",
         [](Options& o, const std::string& w, const std::string& v) {
             size_t dash = v.find('-');
             if (dash == std::string::npos) bad(w, v, "two port numbers LO-HI");
             const char* e = "two port numbers LO-HI with 1024 <= LO <= HI <= 65535";
             long long lo = parse_integer(w, v.substr(0, dash), 1024, 65535, e);
             long long hi = parse_integer(w, v.substr(dash + 1), 1024, 65535, e);
             if (lo > hi) bad(w, v, e);
             o.master_port_min = static_cast<int>(lo);
             o.master_port_max = static_cast<int>(hi);
         }},
        {"checkpoint-cmd", true, "CMD", "checkpoint command (run with /bin/sh -c)",
         [](Options& o, const std::string&, const std::string& v) { o.checkpoint_cmd = v; }},
        {"checkpoint-signal", true, "SIG", "signal asking the program to checkpoint itself (default SIGUSR2; none: off)",
         [](Options& o, const std::string& w, const std::string& v) {
             o.checkpoint_signal_given = true;
             o.checkpoint_signal = (v == "none") ? 0 : parse_signal(v, w);
         }},
        {"trigger-signal", true, "SIG", "signal from Slurm (--signal=SIG@SECS) that triggers the hook (default SIGUSR1)",
         [](Options& o, const std::string& w, const std::string& v) { o.trigger_signal = parse_signal(v, w); }},
        {"checkpoint-ranks", true, "0|node|all", "which ranks run the checkpoint command (default 0)",
         [](Options& o, const std::string& w, const std::string& v) {
             if (v == "0") o.checkpoint_ranks = HookRanks::Zero;
             else if (v == "node") o.checkpoint_ranks = HookRanks::Node;
             else if (v == "all") o.checkpoint_ranks = HookRanks::All;
             else bad(w, v, "0, node or all");
         }},
        {"checkpoint-every", true, "DURATION|auto", "also checkpoint periodically; auto = Young/Daly interval",
         [](Options& o, const std::string& w, const std::string& v) {
             if (v == "auto") {
                 o.checkpoint_auto = true;
                 o.checkpoint_every_s = 0;
             } else {
                 o.checkpoint_auto = false;
                 o.checkpoint_every_s = parse_duration(v, w);
                 if (o.checkpoint_every_s <= 0) bad(w, v, "a positive duration or auto");
             }
         }},
        {"checkpoint-cost", true, "DURATION", "hook duration assumed by auto until one is measured (default 60s)",
         [](Options& o, const std::string& w, const std::string& v) { o.checkpoint_cost_s = parse_duration(v, w); }},
        {"mtbf-per-node", true, "DURATION", "mean time between failures of one node, for auto (default 6000h)",
         [](Options& o, const std::string& w, const std::string& v) {
             o.mtbf_per_node_s = parse_duration(v, w);
             if (o.mtbf_per_node_s <= 0) bad(w, v, "a positive duration");
         }},
        {"kill-wait", true, "DURATION", "time between SIGTERM and SIGKILL (default: Slurm's KillWait)",
         [](Options& o, const std::string& w, const std::string& v) { o.kill_wait_s = parse_duration(v, w); }},
        {"checkpoint-on-term", true, "yes|no", "SIGTERM (time limit, preemption) triggers the hook (default yes)",
         [](Options& o, const std::string& w, const std::string& v) { o.checkpoint_on_term = parse_bool(w, v); }},
        {"forward-signals", true, "auto|always", "forward Slurm's signals even when Slurm signals every process itself (default auto)",
         [](Options& o, const std::string& w, const std::string& v) {
             if (v == "auto") o.forward_signals = Options::Forward::Auto;
             else if (v == "always") o.forward_signals = Options::Forward::Always;
             else bad(w, v, "auto or always");
         }},
        {"no-requeue-exit", true, "CODES", "exit codes meaning a permanent user error, e.g. 2,64-70",
         [](Options& o, const std::string& w, const std::string& v) { o.no_requeue_exit = parse_int_list(v, w); }},
        {"no-requeue-code", true, "CODE", "the reserved do-not-requeue exit code (default 78)",
         [](Options& o, const std::string& w, const std::string& v) {
             o.no_requeue_code = static_cast<int>(parse_integer(w, v, 1, 255, "an exit code 1-255"));
         }},
        {"requeue", true, "yes|no", "requeue on a retryable failure: yes even when the job did not ask (default: when sbatch --requeue asked)",
         [](Options& o, const std::string& w, const std::string& v) {
             o.requeue = parse_bool(w, v);
             o.requeue_explicit = o.requeue;
         }},
        {"no-requeue", false, "", "never requeue", [](Options& o, const std::string&, const std::string&) { o.requeue = false; }},
        {"requeue-on", true, "CLASSES", "retryable classes (default gpu_fault,node_fault)",
         [](Options& o, const std::string& w, const std::string& v) {
             std::vector<std::string> out;
             std::stringstream ss(v);
             std::string c;
             while (std::getline(ss, c, ',')) {
                 c = trim(c);
                 if (c != "gpu_fault" && c != "node_fault" && c != "timeout" && c != "preemption" && c != "failed")
                     bad(w, v, "a list of gpu_fault, node_fault, timeout, preemption, failed");
                 out.push_back(c);
             }
             o.requeue_on = out;
         }},
        {"max-restarts", true, "N", "restart budget against SLURM_RESTART_COUNT (default TORCHELASTIC_MAX_RESTARTS, else 3)",
         [](Options& o, const std::string& w, const std::string& v) {
             o.max_restarts = static_cast<int>(parse_integer(w, v, 0, 100000, "a non-negative integer"));
             o.max_restarts_explicit = true;
         }},
        {"peer-wait", true, "DURATION", "a rank that died of a peer's loss waits this long for the root cause (default 10s)",
         [](Options& o, const std::string& w, const std::string& v) {
             o.peer_wait_s = parse_duration(v, w);
             if (o.peer_wait_s > 600) bad(w, v, "a duration up to 10m");
         }},
        {"backoff", true, "DURATION", "hold before a restart, doubled per restart (default 0: Slurm's own hold)",
         [](Options& o, const std::string& w, const std::string& v) { o.backoff_s = parse_duration(v, w); }},
        {"state-dir", true, "DIR", "directory shared by the job's nodes, for one requeue per failure",
         [](Options& o, const std::string&, const std::string& v) { o.state_dir = v; }},
        {"node-state-dir", true, "DIR", "this node's directory for one requeue per node, %n = node name (default /dev/shm)",
         [](Options& o, const std::string&, const std::string& v) { o.node_state_dir = v; }},
        {"preflight", true, "CMD", "command run before the program (e.g. gputopo doctor); failure = gpu fault",
         [](Options& o, const std::string&, const std::string& v) { o.preflight = v; }},
        {"stderr-tail", true, "BYTES", "how much of the program's stderr to keep for classification (default 65536; 0 off)",
         [](Options& o, const std::string& w, const std::string& v) {
             long long n = parse_integer(w, v, 0, 64LL << 20, "a byte count up to 64 MiB");
             o.stderr_tail_bytes = static_cast<size_t>(n);
             o.capture_stderr = n > 0;
         }},
    };
    return table;
}

const Spec* find_spec(const std::string& key) {
    for (const auto& s : specs())
        if (key == s.key) return &s;
    return nullptr;
}

// "did you mean --checkpoint-cmd?" for a mistyped key (`dashes` "--" on the
// command line, "" in a config file), else where the list is.
std::string key_hint(const std::string& key, const std::string& dashes = "") {
    std::vector<std::string> keys;
    for (const auto& s : specs()) keys.push_back(s.key);
    const std::string near = nearest_word(key, keys);
    return near.empty() ? std::string("gputopo-launch --help lists the options")
                        : "did you mean " + dashes + near + "?";
}

std::string read_file(const std::string& path) {
    // Bounded, never blocking on a FIFO (issue 20, H8).
    ReadFailure why;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{kMaxConfigFileBytes, true}, &why);
    if (!text) throw ParseError("config file " + path + " " + why.what + " (expected a key=value file)");
    return std::move(*text);
}

}  // namespace

std::vector<std::string> option_keys() {
    std::vector<std::string> keys;
    for (const auto& s : specs()) keys.push_back(s.key);
    return keys;
}

void apply_config_text(Options& o, const std::string& text, const std::string& file_name) {
    std::stringstream ss(text);
    std::string line;
    int n = 0;
    while (std::getline(ss, line)) {
        ++n;
        std::string t = trim(line);
        if (t.empty() || t[0] == '#') continue;
        std::string where = file_name + " line " + std::to_string(n);
        size_t eq = t.find('=');
        if (eq == std::string::npos)
            throw ParseError(where + " '" + t + "': expected key=value");
        std::string key = trim(t.substr(0, eq));
        std::string value = trim(t.substr(eq + 1));
        if (key == "config" || key == "help" || key == "version")
            throw ParseError(where + ": '" + key + "' is not allowed in a config file");
        const Spec* s = find_spec(key);
        if (!s) throw ParseError(where + ": unknown key '" + key + "' (" + key_hint(key) + ")");
        s->set(o, where + " " + key, value);
    }
}

Options parse_options(int argc, const char* const* argv, const Getenv& getenv_fn) {
    Options o;
    // 1. Find --config on the command line first (it must be read before the rest).
    std::string config;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") break;
        if (a.rfind("--config=", 0) == 0) config = a.substr(9);
        else if (a == "--config" && i + 1 < argc) config = argv[i + 1];
    }
    if (config.empty()) {
        if (auto v = getenv_fn(env::kLaunchConfig)) config = *v;
    }
    if (config.empty()) {
        if (access("/etc/gputopo/gputopo-launch.conf", F_OK) == 0) config = "/etc/gputopo/gputopo-launch.conf";
    }
    if (!config.empty()) {
        apply_config_text(o, read_file(config), config);
        o.config_path = config;
    }
    // 2. Environment.
    for (const auto& s : specs()) {
        std::string name = "GPUTOPO_LAUNCH_";
        for (const char* p = s.key; *p; ++p) name += (*p == '-') ? '_' : static_cast<char>(std::toupper(*p));
        if (std::string(s.key) == "config" || std::string(s.key) == "help" || std::string(s.key) == "version") continue;
        if (auto v = getenv_fn(name)) s.set(o, name, *v);
    }
    // 3. Command line.
    int i = 1;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a.rfind("--", 0) != 0) break;  // the program starts here
        std::string key = a.substr(2), value;
        bool has_value = false;
        size_t eq = key.find('=');
        if (eq != std::string::npos) {
            value = key.substr(eq + 1);
            key = key.substr(0, eq);
            has_value = true;
        }
        const Spec* s = find_spec(key);
        if (!s) throw ParseError("unknown option '--" + key + "' (" + key_hint(key, "--") + ")");
        if (s->takes_value && !has_value) {
            if (i + 1 >= argc) throw ParseError("option --" + key + " needs a value (" + s->meta + ")");
            value = argv[++i];
        }
        if (!s->takes_value && has_value && key != "dry-run" && key != "verbose")
            throw ParseError("option --" + key + " takes no value (got '" + value + "')");
        if (key == "config") {
            o.config_path = value;
            continue;
        }
        s->set(o, "--" + key, value);
    }
    for (; i < argc; ++i) o.command.push_back(argv[i]);
    // One budget: --max-restarts (command line, GPUTOPO_LAUNCH_MAX_RESTARTS or
    // the config file) wins; else TORCHELASTIC_MAX_RESTARTS (torchrun's
    // --max_restarts, or the user's); else 3. The program gets that value.
    if (!o.max_restarts_explicit) {
        if (auto v = getenv_fn(env::kTorchelasticMaxRestarts); v && !v->empty())
            o.max_restarts = static_cast<int>(
                parse_integer(env::kTorchelasticMaxRestarts, *v, 0, 100000, "a non-negative integer"));
    }
    return o;
}

double parse_duration(const std::string& text, const std::string& what) {
    const char* expected = "a duration such as 90, 90s, 30m, 2h, 1d or 1h30m";
    std::string t = trim(text);
    if (t.empty()) bad(what, text, expected);
    double total = 0;
    size_t i = 0;
    bool any = false;
    while (i < t.size()) {
        size_t start = i;
        while (i < t.size() && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.')) ++i;
        if (start == i) bad(what, text, expected);
        double n = 0;
        try {
            n = std::stod(t.substr(start, i - start));
        } catch (...) {
            bad(what, text, expected);
        }
        double unit = 1;
        if (i < t.size()) {
            char u = t[i];
            if (u == 's') unit = 1;
            else if (u == 'm') unit = 60;
            else if (u == 'h') unit = 3600;
            else if (u == 'd') unit = 86400;
            else bad(what, text, expected);
            ++i;
        } else if (any) {
            bad(what, text, expected);  // "1h30": a bare number after a unit
        }
        total += n * unit;
        any = true;
    }
    return total;
}

int parse_signal(const std::string& text, const std::string& what) {
    static const std::pair<const char*, int> names[] = {
        {"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
        {"TERM", SIGTERM}, {"CONT", SIGCONT}, {"URG", SIGURG}, {"ALRM", SIGALRM}, {"WINCH", SIGWINCH},
        {"XCPU", SIGXCPU}, {"PWR", SIGPWR},
    };
    std::string t = trim(text);
    std::string up;
    for (char c : t) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (up.rfind("SIG", 0) == 0) up = up.substr(3);
    for (const auto& n : names)
        if (up == n.first) return n.second;
    bool digits = !up.empty();
    for (char c : up) digits = digits && c >= '0' && c <= '9';
    if (digits && up.size() < 3) {
        int n = std::stoi(up);
        if (n >= 1 && n < 65 && n != SIGKILL && n != SIGSTOP) return n;
    }
    bad(what, text, "a signal name or number such as USR2, SIGUSR1, TERM or 12 (not KILL or STOP)");
}

std::string signal_name(int sig) {
    switch (sig) {
        case SIGHUP: return "SIGHUP";
        case SIGINT: return "SIGINT";
        case SIGQUIT: return "SIGQUIT";
        case SIGKILL: return "SIGKILL";
        case SIGUSR1: return "SIGUSR1";
        case SIGUSR2: return "SIGUSR2";
        case SIGTERM: return "SIGTERM";
        case SIGCONT: return "SIGCONT";
        case SIGSTOP: return "SIGSTOP";
        case SIGSEGV: return "SIGSEGV";
        case SIGABRT: return "SIGABRT";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE";
        case SIGILL: return "SIGILL";
        case SIGPIPE: return "SIGPIPE";
        case SIGALRM: return "SIGALRM";
        case SIGURG: return "SIGURG";
        case SIGWINCH: return "SIGWINCH";
        case SIGXCPU: return "SIGXCPU";
        case SIGPWR: return "SIGPWR";
        default: return "signal " + std::to_string(sig);
    }
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what) {
    const char* expected = "exit codes 1-255 separated by commas, ranges allowed (2,64-70)";
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item = trim(item);
        if (item.empty()) bad(what, text, expected);
        size_t dash = item.find('-');
        if (dash == std::string::npos) {
            out.push_back(static_cast<int>(parse_integer(what, item, 1, 255, expected)));
        } else {
            long long lo = parse_integer(what, item.substr(0, dash), 1, 255, expected);
            long long hi = parse_integer(what, item.substr(dash + 1), 1, 255, expected);
            if (lo > hi) bad(what, text, expected);
            for (long long v = lo; v <= hi; ++v) out.push_back(static_cast<int>(v));
        }
    }
    if (out.empty()) bad(what, text, expected);
    return out;
}

std::string usage_text() {
    std::string out =
        "usage: gputopo-launch [OPTIONS] [--] PROGRAM [ARGS...]\n"
        "  runs PROGRAM as one task of a Slurm step: NCCL and framework environment, signal forwarding,\n"
        "  checkpoint hooks before Slurm kills the job, failure classification and bounded requeue.\n"
        "  Options also come from a config file (key=value) and GPUTOPO_LAUNCH_<KEY> variables.\n\n";
    for (const auto& s : specs()) {
        std::string left = std::string("  --") + s.key + (s.takes_value ? std::string(" ") + s.meta : "");
        if (left.size() < 34) left.resize(34, ' ');
        else left += "\n" + std::string(34, ' ');
        out += left + s.help + "\n";
    }
    return out;
}

}  // namespace gputopo::launch
