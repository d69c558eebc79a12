#include "launcher/child/hooks.hpp"

#include <cmath>
#include <cstdio>

namespace gputopo::launch {

const char* trigger_name(Trigger t) {
    switch (t) {
        case Trigger::PreTimeout: return "pre_timeout";
        case Trigger::Term: return "term";
        case Trigger::Periodic: return "periodic";
    }
    return "periodic";
}

std::string format_duration(double s) {
    char buf[64];
    if (s < 0) return "unknown";
    if (s < 120) {
        std::snprintf(buf, sizeof buf, "%.1fs", s);
        return buf;
    }
    long long t = std::llround(s);
    long long h = t / 3600, m = (t % 3600) / 60, sec = t % 60;
    if (h > 0) std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", h, m, sec);
    else std::snprintf(buf, sizeof buf, "%lldm%02llds", m, sec);
    return buf;
}

YoungDaly young_daly(double cost_s, double mtbf_node_s, int nodes) {
    YoungDaly y;
    y.nodes = nodes < 1 ? 1 : nodes;
    y.cost_s = cost_s > 0 ? cost_s : 1;
    y.mtbf_job_s = mtbf_node_s / y.nodes;
    y.interval_s = std::sqrt(2.0 * y.cost_s * y.mtbf_job_s);
    if (y.interval_s < 2 * y.cost_s) y.interval_s = 2 * y.cost_s;
    return y;
}

std::string YoungDaly::explain() const {
    return "checkpoint every " + format_duration(interval_s) + " (Young/Daly sqrt(2*C*M): hook cost C=" +
           format_duration(cost_s) + ", job MTBF M=" + format_duration(mtbf_job_s) + " = MTBF per node " +
           format_duration(mtbf_job_s * nodes) + " / " + std::to_string(nodes) + " nodes)";
}

bool runs_command_hook(HookRanks ranks, int rank, int local_rank) {
    switch (ranks) {
        case HookRanks::All: return true;
        case HookRanks::Node: return local_rank == 0;
        case HookRanks::Zero: return rank == 0;
    }
    return false;
}

double hook_deadline(Trigger t, double now, double job_end_time, double kill_wait_s) {
    double kw = kill_wait_s >= 0 ? kill_wait_s : 30;  // Slurm's default KillWait
    if (t == Trigger::Term) return now + kw;
    if (job_end_time <= 0) return -1;
    return job_end_time + kw;
}

}  // namespace gputopo::launch
