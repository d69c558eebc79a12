// Failure-driven goodput of a 30-day training job at 100,000 GPUs: requeue
// after every interruption against gputopo run's in-job restart with hot
// spares (a spare per hardware failure until none is left, then a requeue,
// which brings a fresh allocation with its spares). Llama 3 405B's
// interruption mix and rate (Dubey et al. 2024, table 5: 419 unexpected
// interruptions in 54 days on 16,384 GPUs), scaled linearly with the GPU
// count. Checkpoint every Daly interval (run/step_end.hpp
// daly_with_restart: the restart time is in the model). Restart costs: the
// measured ones (bench/bench_job_restart.sh passes them: in-job restart and
// requeue on the loopback cluster) plus the program's own restart at scale
// (an input, printed). Every input printed; fixed seed; no timing.
//
//   bench_goodput [INJOB_RESTART_S REQUEUE_S]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "run/step_end.hpp"

using gputopo::launch::job::daly_with_restart;
using gputopo::launch::job::RestartWaste;

namespace {

struct Cause {
    const char* name;
    int count;       // of Llama 3's 419
    bool node;       // needs the node out (a spare), else a process fault (same nodes)
    double detect_s; // fault -> the step seen ended
};

// Llama 3 405B pre-training, 54 days, 16,384 H100 (table 5). Detection: a
// crash or a lost node is seen when srun ends (SlurmdTimeout for a dead node,
// 30 s here); a NCCL watchdog / silent corruption as a hang (--hang-timeout 60 s).
const std::vector<Cause> kCauses = {
    {"faulty GPU", 148, true, 5},          {"GPU HBM3 memory", 72, true, 5},
    {"software bug", 54, false, 5},        {"network switch/cable", 35, true, 30},
    {"host maintenance", 32, true, 30},    {"GPU SRAM memory", 19, true, 5},
    {"GPU system processor", 17, true, 5}, {"NIC", 7, true, 30},
    {"NCCL watchdog timeouts", 7, false, 60}, {"silent data corruption", 6, false, 60},
    {"GPU thermal interface + sensor", 6, true, 5}, {"SSD", 3, true, 30},
    {"power supply", 3, true, 30},         {"server chassis", 2, true, 30},
    {"IO expansion board", 2, true, 30},   {"dependency", 2, false, 5},
    {"CPU", 2, true, 30},                  {"system memory", 2, true, 30},
};

struct Inputs {
    double gpus = 100000, gpus_per_node = 8;
    double days = 30;
    double ref_interruptions = 419, ref_days = 54, ref_gpus = 16384;
    double checkpoint_s = 10;       // writing one checkpoint to storage
    // Asynchronous checkpoint: the stall is the copy of a GPU's state to pinned
    // host memory. Llama 3's checkpoints hold 1 MB to 4 GB per GPU (section 3.3.4);
    // the largest, over a PCIe 5 x16 link at an effective 25 GB/s.
    double state_per_gpu_gb = 4, d2h_gb_s = 25;
    double injob_restart_s = 8;     // measured (loopback): fault seen -> every rank running again
    double requeue_s = 130;         // measured (loopback): requeue -> every rank running again (Slurm's hold included)
    double program_restart_s = 0;   // the program's own start at scale (NCCL init, checkpoint load): 0 = measured costs only; swept below
    bool measured = false;          // the restart times come from bench_job_restart.sh
    double detect_scale = 1;        // every cause's detection time times this (swept)
    unsigned seed = 20261201;
};

// What a checkpoint costs the step: it stalls for stall_s, and is durable
// persist_s after the stall ends (0: blocking, durable at once).
struct Checkpoint {
    const char* name;
    double stall_s, persist_s;
};
Checkpoint blocking(const Inputs& in) { return {"blocking", in.checkpoint_s, 0}; }
Checkpoint async(const Inputs& in) { return {"asynchronous", in.state_per_gpu_gb / in.d2h_gb_s, in.checkpoint_s}; }

struct Result {
    double goodput = 0;
    int failures = 0, injob = 0, requeues = 0;
    double interval_s = 0;
};

double job_mtbf_s(const Inputs& in) { return in.ref_days * 86400 * in.ref_gpus / (in.ref_interruptions * in.gpus); }

// One 30-day job. spares < 0: requeue after every interruption. Checkpoints
// every interval; a failure rolls the work back to the last durable one.
Result simulate(const Inputs& in, int spares, const Checkpoint& ck) {
    std::mt19937_64 rng(in.seed);
    const double mtbf = job_mtbf_s(in);
    std::exponential_distribution<double> next(1 / mtbf);
    std::vector<double> weights;
    for (const auto& c : kCauses) weights.push_back(c.count);
    std::discrete_distribution<size_t> cause(weights.begin(), weights.end());
    const double injob = in.injob_restart_s + in.program_restart_s, requeue = in.requeue_s + in.program_restart_s;
    Result r;
    // The interval for the strategy's typical restart (Daly with R, and the write's lag).
    r.interval_s = daly_with_restart(ck.stall_s, mtbf, spares < 0 ? requeue : injob, ck.persist_s).interval_s;
    const double end = in.days * 86400;
    double t = 0, fail_at = next(rng);
    double done = 0, durable = 0;            // work done; work in the last durable checkpoint
    double pending = -1, pending_at = 0;     // the checkpoint being written: its work, when durable
    int left = spares;
    while (t < end) {
        const double seg = r.interval_s + ck.stall_s;
        if (fail_at >= t + seg) {  // a full interval and its checkpoint's stall
            t += seg;
            done += r.interval_s;
            if (pending >= 0 && pending_at <= t) durable = pending;  // the previous write is done
            if (ck.persist_s > 0) {
                pending = done;
                pending_at = t + ck.persist_s;
            } else {
                durable = done;
            }
            continue;
        }
        if (pending >= 0 && pending_at <= fail_at) durable = pending;
        pending = -1;
        done = durable;  // the work since the last durable checkpoint is lost
        t = fail_at;
        const Cause& c = kCauses[cause(rng)];
        ++r.failures;
        double cost;
        if (spares >= 0 && (!c.node || left > 0)) {
            if (c.node) --left;
            cost = injob;
            ++r.injob;
        } else {
            cost = requeue;
            left = spares;  // a fresh allocation with its spares
            ++r.requeues;
        }
        t += c.detect_s * in.detect_scale + cost;
        fail_at = t + next(rng);  // memoryless: a failure during the restart only delays the next
    }
    r.goodput = std::min(done, end) / end;
    return r;
}

void print_inputs(const Inputs& in) {
    const double mtbf = job_mtbf_s(in);
    std::printf("== goodput at %.0f GPUs over %.0f days (failure-driven simulation, seed %u)\n", in.gpus, in.days, in.seed);
    std::printf("   rate: %.0f interruptions / %.0f days on %.0f GPUs (Llama 3 405B), scaled to %.0f GPUs: job MTBF %.1f min\n",
                in.ref_interruptions, in.ref_days, in.ref_gpus, in.gpus, mtbf / 60);
    std::printf("   mix (count, kind, detection):");
    int sum = 0;
    for (const auto& c : kCauses) {
        std::printf("%s %s %d %s %.0fs", &c == &kCauses[0] ? "" : ";", c.name, c.count, c.node ? "node" : "process", c.detect_s);
        sum += c.count;
    }
    std::printf("  (sum %d)\n", sum);
    std::printf("   checkpoint: writing one takes C = %.0f s. blocking: the step stops for C. asynchronous: the step stops for"
                " the copy to host memory, %.0f GB per GPU at %.0f GB/s = %.2f s, and the checkpoint is durable C later\n",
                in.checkpoint_s, in.state_per_gpu_gb, in.d2h_gb_s, in.state_per_gpu_gb / in.d2h_gb_s);
    std::printf("   restart: in-job %.1f s + program restart %.0f s; requeue %.1f s + program restart %.0f s (%s)\n",
                in.injob_restart_s, in.program_restart_s, in.requeue_s, in.program_restart_s,
                in.measured ? "measured on the loopback cluster by bench/bench_job_restart.sh"
                            : "defaults; bench/bench_job_restart.sh passes the ones it measures");
}

// Goodput with every cause's detection time scaled.
double detection_scaled(const Inputs& in, double k) {
    Inputs x = in;
    x.detect_scale = k;
    return simulate(x, 64, async(x)).goodput * 100;
}

// The strategies side by side for one checkpoint model; the fewest spares
// that reach 97% (-1: none), and the best goodput.
int strategy_table(const Inputs& in, const Checkpoint& ck, double& best) {
    const int nodes = int(in.gpus / in.gpus_per_node);
    std::printf("\n   %s checkpoint (stall %.2f s, durable %.0f s after it)\n", ck.name, ck.stall_s, ck.persist_s);
    std::printf("   %-22s %8s %9s %9s %8s %10s %12s\n", "strategy", "spares", "failures", "in-job", "requeues",
                "interval", "goodput");
    Result rq = simulate(in, -1, ck);
    std::printf("   %-22s %8s %9d %9d %8d %9.0fs %11.2f%%\n", "requeue every time", "-", rq.failures, rq.injob, rq.requeues,
                rq.interval_s, rq.goodput * 100);
    int reached = -1, best_weighted_spares = 0;
    double best_weighted = 0;
    best = 0;
    for (int s : {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
        Result r = simulate(in, s, ck);
        std::printf("   %-22s %8d %9d %9d %8d %9.0fs %11.2f%%  (GPU-weighted %.2f%%)\n", "in-job restart", s, r.failures,
                    r.injob, r.requeues, r.interval_s, r.goodput * 100, r.goodput * nodes / (nodes + s) * 100);
        if (reached < 0 && r.goodput >= 0.97) reached = s;
        best = std::max(best, r.goodput);
        const double weighted = r.goodput * nodes / (nodes + s);
        if (weighted > best_weighted) {
            best_weighted = weighted;
            best_weighted_spares = s;
        }
    }
    std::printf("   GPU-weighted (the spares' idle GPUs counted as lost): best %.2f%% with %d spares\n", best_weighted * 100,
                best_weighted_spares);
    const RestartWaste w = daly_with_restart(ck.stall_s, job_mtbf_s(in), in.injob_restart_s + in.program_restart_s, ck.persist_s);
    std::printf("   model (run/step_end daly_with_restart, in-job restart, detection not included): interval %.0f s,"
                " waste %.2f%%\n", w.interval_s, w.waste * 100);
    return reached;
}

}  // namespace

int main(int argc, char** argv) {
    Inputs in;
    if (argc >= 3) {
        in.injob_restart_s = std::atof(argv[1]);
        in.requeue_s = std::atof(argv[2]);
        in.measured = true;
    }
    print_inputs(in);
    const double mtbf = job_mtbf_s(in);
    double best_blocking = 0, best_async = 0;
    const int blocking_reached = strategy_table(in, blocking(in), best_blocking);
    const int async_reached = strategy_table(in, async(in), best_async);
    std::printf("\n");
    if (blocking_reached >= 0)
        std::printf("   target 97%%, blocking %.0f s checkpoint: reached with %d spare node(s)\n", in.checkpoint_s, blocking_reached);
    else
        std::printf("   target 97%%, blocking %.0f s checkpoint: not reachable (best %.2f%%): with C = %.0f s and M = %.1f min,"
                    " Daly's waste alone is about sqrt(2C/M) = %.1f%%\n",
                    in.checkpoint_s, best_blocking * 100, in.checkpoint_s, mtbf / 60, std::sqrt(2 * in.checkpoint_s / mtbf) * 100);
    if (async_reached >= 0)
        std::printf("   target 97%%, asynchronous %.0f s checkpoint: reached with %d spare node(s) (%.2f%% of the job's nodes)\n",
                    in.checkpoint_s, async_reached, 100.0 * async_reached / (in.gpus / in.gpus_per_node));
    else
        std::printf("   target 97%%, asynchronous %.0f s checkpoint: not reached (best %.2f%%)\n", in.checkpoint_s, best_async * 100);
    // What the stall must be for 97% with in-job restart (64 spares), and what the
    // program's own restart at scale costs.
    std::printf("   stall sweep (in-job restart, 64 spares; 0 s: blocking, else asynchronous with the write %.0f s):", in.checkpoint_s);
    for (double c : {10.0, 5.0, 2.0, 1.0, 0.5, 0.25}) {
        Inputs x = in;
        Checkpoint ck = c >= in.checkpoint_s ? blocking(x) : Checkpoint{"asynchronous", c, in.checkpoint_s};
        std::printf(" %s %.2gs %.2f%%;", ck.persist_s > 0 ? "stall" : "blocking", c, simulate(x, 64, ck).goodput * 100);
    }
    std::printf("\n   program restart sweep (in-job restart, 64 spares, asynchronous):");
    for (double p : {0.0, 30.0, 60.0, 300.0}) {
        Inputs x = in;
        x.program_restart_s = p;
        std::printf(" +%.0fs %.2f%%;", p, simulate(x, 64, async(x)).goodput * 100);
    }
    std::printf("\n   detection sweep (in-job restart, 64 spares, asynchronous): the causes' detection times x0.5 %.2f%%, x1 %.2f%%, x2 %.2f%%\n",
                detection_scaled(in, 0.5), detection_scaled(in, 1), detection_scaled(in, 2));
    return 0;
}
