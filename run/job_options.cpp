#include "run/job_options.hpp"

#include "run/rack_spares.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

namespace gputopo::launch::job {

namespace {

long parse_count(const std::string& opt, const std::string& v, long lo, long hi) {
    errno = 0;
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || errno || n < lo || n > hi)
        throw JobUsageError(opt + " '" + v + "': expected a whole number from " + std::to_string(lo) + " to " +
                            std::to_string(hi));
    return n;
}

// 1, 0.001, 604800: a limit as a person writes it.
std::string plain(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", x);
    return buf;
}

// Seconds: "90", "1.5", "10m", "2h", "3d".
double parse_seconds(const std::string& opt, const std::string& v, double lo, double hi) {
    errno = 0;
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    std::string unit = end ? end : "";
    static const std::map<std::string, double> mult = {{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
    auto u = mult.find(unit);
    if (v.empty() || end == v.c_str() || errno || u == mult.end() || !std::isfinite(d) || d * u->second < lo ||
        d * u->second > hi)
        throw JobUsageError(opt + " '" + v + "': expected seconds (a number, or with s, m, h, d) from " + plain(lo) +
                            " to " + plain(hi) + " s");
    return d * u->second;
}

// A fraction in (0, 1): "0.5".
double parse_fraction(const std::string& opt, const std::string& v) {
    errno = 0;
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || errno || !std::isfinite(d) || d <= 0 || d >= 1)
        throw JobUsageError(opt + " '" + v + "': expected a fraction between 0 and 1 (e.g. 0.5)");
    return d;
}

SlowAction parse_slow_action(const std::string& opt, const std::string& v) {
    for (SlowAction a : {SlowAction::Off, SlowAction::Report, SlowAction::Replace})
        if (v == slow_action_name(a)) return a;
    throw JobUsageError(opt + " '" + v + "': expected off, report or replace");
}

using Setter = std::function<void(JobOptions&, const std::string& opt, const std::string& value)>;

const std::map<std::string, Setter>& setters() {
    static const std::map<std::string, Setter> s = {
        {"--spares", [](JobOptions& o, const std::string& k, const std::string& v) {
             if (v == "auto") {
                 o.spares = kSparesAuto;
                 return;
             }
             try {
                 o.spares = int(parse_count(k, v, 0, 1000000));
             } catch (const JobUsageError& e) {
                 throw JobUsageError(std::string(e.what()) + ", or auto");
             }
         }},
        {"--max-restarts", [](JobOptions& o, const std::string& k, const std::string& v) { o.max_restarts = int(parse_count(k, v, 0, 100000)); }},
        {"--min-nodes", [](JobOptions& o, const std::string& k, const std::string& v) { o.min_nodes = int(parse_count(k, v, 1, 1000000)); }},
        {"--hang-timeout", [](JobOptions& o, const std::string& k, const std::string& v) { o.hang_timeout_s = parse_seconds(k, v, 1, 7 * 86400); }},
        {"--startup-timeout", [](JobOptions& o, const std::string& k, const std::string& v) { o.startup_timeout_s = parse_seconds(k, v, 1, 7 * 86400); }},
        {"--heartbeat", [](JobOptions& o, const std::string&, const std::string& v) { o.heartbeat = v; }},
        {"--state-dir", [](JobOptions& o, const std::string&, const std::string& v) { o.state_dir = v; }},
        {"--log", [](JobOptions& o, const std::string&, const std::string& v) { o.log_dir = v; }},
        {"--islands", [](JobOptions& o, const std::string&, const std::string& v) { o.islands = v; }},
        {"--ntasks-per-node", [](JobOptions& o, const std::string& k, const std::string& v) { o.tasks_per_node = int(parse_count(k, v, 1, 4096)); }},
        {"--kill-timeout", [](JobOptions& o, const std::string& k, const std::string& v) { o.kill_timeout_s = parse_seconds(k, v, 1, 3600); }},
        {"--start-timeout", [](JobOptions& o, const std::string& k, const std::string& v) { o.start_timeout_s = parse_seconds(k, v, 1, 86400); }},
        {"--spare-check", [](JobOptions& o, const std::string& k, const std::string& v) {
             if (v.empty()) throw JobUsageError(k + ": expected a command (run with sh -c on the spare)");
             o.spare_check = v;
         }},
        {"--spare-check-timeout", [](JobOptions& o, const std::string& k, const std::string& v) { o.spare_check_timeout_s = parse_seconds(k, v, 1, 86400); }},
        {"--checkpoint-cost", [](JobOptions& o, const std::string& k, const std::string& v) { o.checkpoint_cost_s = parse_seconds(k, v, 0.001, 86400); }},
        {"--checkpoint-persist", [](JobOptions& o, const std::string& k, const std::string& v) { o.checkpoint_persist_s = parse_seconds(k, v, 0, 86400); }},
        {"--mtbf-per-node", [](JobOptions& o, const std::string& k, const std::string& v) { o.mtbf_per_node_s = parse_seconds(k, v, 60, 1e12); }},
        {"--slow-nodes", [](JobOptions& o, const std::string& k, const std::string& v) { o.slow.action = parse_slow_action(k, v); }},
        {"--slow-fraction", [](JobOptions& o, const std::string& k, const std::string& v) { o.slow.fraction = parse_fraction(k, v); }},
        {"--slow-windows", [](JobOptions& o, const std::string& k, const std::string& v) { o.slow.windows = int(parse_count(k, v, 1, 1000)); }},
        {"--slow-window", [](JobOptions& o, const std::string& k, const std::string& v) { o.slow.window_s = parse_seconds(k, v, 1, 86400); }},
        {"--srun-arg", [](JobOptions& o, const std::string&, const std::string& v) { o.srun_args.push_back(v); }},
    };
    return s;
}

}  // namespace

JobOptions parse_job_options(const std::vector<std::string>& args) {
    JobOptions o;
    for (size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i];
        if (a == "--") {
            o.command.assign(args.begin() + long(i) + 1, args.end());
            break;
        }
        if (a == "--help" || a == "-h") {
            o.help = true;
            return o;
        }
        std::string value;
        bool inline_value = false;
        if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a = a.substr(0, eq);
            inline_value = true;
        }
        auto s = setters().find(a);
        if (s == setters().end()) {
            if (a.rfind("-", 0) != 0) {  // the program, without "--"
                o.command.assign(args.begin() + long(i), args.end());
                break;
            }
            throw JobUsageError("unknown option '" + a + "' (see gputopo run --help)");
        }
        if (!inline_value) {
            if (i + 1 >= args.size()) throw JobUsageError(a + ": expected a value");
            value = args[++i];
        }
        s->second(o, a, value);
    }
    if (o.command.empty()) throw JobUsageError("no program given: gputopo run [options] -- PROGRAM [ARGS]");
    return o;
}

std::vector<std::string> job_option_names() {
    std::vector<std::string> names;
    for (const auto& [k, v] : setters()) names.push_back(k);
    return names;
}

std::string job_usage() {
    return "usage: gputopo run [options] -- PROGRAM [ARGS]   (in a batch script, in place of srun)\n"
           "Runs the step with srun on the allocation's nodes less the spares, restarts it in the\n"
           "allocation on a failure (the failed node's ranks go to a spare of its island), requeues\n"
           "when no spare is left. Options:\n"
           "  --spares N|auto       nodes kept idle as replacements (default 0); auto: 1 per 9 nodes\n"
           "                        of each island (2 of an NVL72 rack's 18 trays)\n"
           "  --max-restarts M      in-job restarts before the job ends (default 3)\n"
           "  --min-nodes K         with no spare left, run on fewer nodes down to K (default: never)\n"
           "  --hang-timeout S      a rank that makes no progress for S is hung (default: off)\n"
           "  --startup-timeout S   the same for a rank before its first step (default: 600 s or S if longer)\n"
           "  --heartbeat FILE      heartbeat file per rank, %r = rank, %a = attempt (default STATE/heartbeat.%a.%r)\n"
           "  --state-dir DIR       directory all nodes see (default ./gputopo-run.JOBID)\n"
           "  --log DIR             JSON event log directory (default the state directory)\n"
           "  --islands FILE        gputopo.conf island file (default: Slurm's topology file)\n"
           "  --ntasks-per-node T   tasks per node (default SLURM_NTASKS_PER_NODE, else 1)\n"
           "  --kill-timeout S      bound on srun ending once the step must end (default 30)\n"
           "  --start-timeout S     bound on a step Slurm keeps waiting to create (default 60)\n"
           "  --spare-check CMD     run CMD (sh -c, one task) on a spare before it is used, and on\n"
           "                        every spare at the start; a spare that fails is excluded\n"
           "  --spare-check-timeout S  bound on one --spare-check (default 60)\n"
           "  --checkpoint-cost S   what a checkpoint stalls the program for, in the waste model (default 10)\n"
           "  --checkpoint-persist S  asynchronous checkpoint: durable S after its stall (default 0: blocking)\n"
           "  --mtbf-per-node D     MTBF per node in the waste model (default 6000h)\n"
           "  --slow-nodes MODE     off, report (default: an event names a slow node) or replace (by a\n"
           "                        spare, at the next checkpoint the program reports)\n"
           "  --slow-fraction F     a node is slow below F x the median node rate (default 0.5)\n"
           "  --slow-windows N      ... for N consecutive windows (default 3)\n"
           "  --slow-window S       length of one window (default 60)\n"
           "  --srun-arg ARG        pass ARG to srun (repeatable)\n"
           "Exit status: the step's (0 success, 78 a user error, ...). See gputopo(1).\n";
}

}  // namespace gputopo::launch::job
