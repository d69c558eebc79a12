// Failure-driven goodput of a 30-day training job at 100,000 GPUs: requeue
// after every interruption against gputopo run's in-job restart with hot
// spares (a spare per hardware failure until none is left, then a requeue,
// which brings a fresh allocation with its spares). Llama 3 405B's
// interruption mix and rate (Dubey et al. 2024, table 5: 419 unexpected
// interruptions in 54 days on 16,384 GPUs), scaled linearly with the GPU
// count. Checkpoint every Daly interval (launcher/job/step_end.hpp
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

#include "launcher/job/step_end.hpp"

using gputopo::launch::job::daly_with_restart;

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
    double checkpoint_s = 10;
    double injob_restart_s = 8;     // measured (loopback): fault seen -> every rank running again
    double requeue_s = 130;         // measured (loopback): requeue -> every rank running again (Slurm's hold included)
    double program_restart_s = 0;   // the program's own start at scale (NCCL init, checkpoint load): 0 = measured costs only; swept below
    unsigned seed = 20261201;
};

struct Result {
    double goodput = 0;
    int failures = 0, injob = 0, requeues = 0;
    double interval_s = 0;
};

// One 30-day job. spares < 0: requeue after every interruption.
Result simulate(const Inputs& in, int spares) {
    std::mt19937_64 rng(in.seed);
    const double mtbf = in.ref_days * 86400 * in.ref_gpus / (in.ref_interruptions * in.gpus);
    std::exponential_distribution<double> next(1 / mtbf);
    std::vector<double> weights;
    for (const auto& c : kCauses) weights.push_back(c.count);
    std::discrete_distribution<size_t> cause(weights.begin(), weights.end());
    const double injob = in.injob_restart_s + in.program_restart_s, requeue = in.requeue_s + in.program_restart_s;
    Result r;
    // The interval for the strategy's typical restart (Daly with R).
    r.interval_s = daly_with_restart(in.checkpoint_s, mtbf, spares < 0 ? requeue : injob).interval_s;
    const double end = in.days * 86400;
    double t = 0, useful = 0, fail_at = next(rng);
    int left = spares;
    while (t < end) {
        const double seg = r.interval_s + in.checkpoint_s;
        if (fail_at >= t + seg) {  // a full interval and its checkpoint
            t += seg;
            useful += r.interval_s;
            continue;
        }
        t = fail_at;  // the work since the last checkpoint is lost
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
        t += c.detect_s + cost;
        fail_at = t + next(rng);  // memoryless: a failure during the restart only delays the next
    }
    r.goodput = std::min(useful, end) / end;
    return r;
}

void print_inputs(const Inputs& in) {
    const double mtbf = in.ref_days * 86400 * in.ref_gpus / (in.ref_interruptions * in.gpus);
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
    std::printf("   checkpoint cost C %.0f s; in-job restart %.1f s (measured) + program restart %.0f s;"
                " requeue %.1f s (measured) + program restart %.0f s\n",
                in.checkpoint_s, in.injob_restart_s, in.program_restart_s, in.requeue_s, in.program_restart_s);
}

}  // namespace

int main(int argc, char** argv) {
    Inputs in;
    if (argc >= 3) {
        in.injob_restart_s = std::atof(argv[1]);
        in.requeue_s = std::atof(argv[2]);
    }
    print_inputs(in);
    const int nodes = int(in.gpus / in.gpus_per_node);
    std::printf("   %-22s %8s %9s %9s %8s %10s %12s\n", "strategy", "spares", "failures", "in-job", "requeues",
                "interval", "goodput");
    Result rq = simulate(in, -1);
    std::printf("   %-22s %8s %9d %9d %8d %9.0fs %11.2f%%\n", "requeue every time", "-", rq.failures, rq.injob, rq.requeues,
                rq.interval_s, rq.goodput * 100);
    int reached = -1;
    double best = 0;
    for (int s : {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
        Result r = simulate(in, s);
        std::printf("   %-22s %8d %9d %9d %8d %9.0fs %11.2f%%  (GPU-weighted %.2f%%)\n", "in-job restart", s, r.failures,
                    r.injob, r.requeues, r.interval_s, r.goodput * 100, r.goodput * nodes / (nodes + s) * 100);
        if (reached < 0 && r.goodput >= 0.97) reached = s;
        best = std::max(best, r.goodput);
    }
    if (reached >= 0)
        std::printf("   target 97%%: reached with %d spare node(s)\n", reached);
    else
        std::printf("   target 97%%: not reached (best %.2f%%): with C = %.0f s and M = %.1f min, Daly's waste alone is about"
                    " sqrt(2C/M) = %.1f%%\n",
                    best * 100, in.checkpoint_s, (in.ref_days * 86400 * in.ref_gpus / (in.ref_interruptions * in.gpus)) / 60,
                    std::sqrt(2 * in.checkpoint_s / (in.ref_days * 86400 * in.ref_gpus / (in.ref_interruptions * in.gpus))) * 100);
    // What the checkpoint cost must be for 97% with in-job restart (64 spares), and what the
    // program's own restart at scale costs.
    std::printf("   checkpoint cost sweep (in-job restart, 64 spares):");
    double c97 = -1;
    for (double c : {10.0, 5.0, 2.0, 1.0, 0.5, 0.25}) {
        Inputs x = in;
        x.checkpoint_s = c;
        double g = simulate(x, 64).goodput;
        if (c97 < 0 && g >= 0.97) c97 = c;
        std::printf(" C=%.2gs %.2f%%;", c, g * 100);
    }
    std::printf("\n   97%% needs a checkpoint cost of %s\n", c97 > 0 ? (std::to_string(c97).substr(0, 4) + " s or less").c_str() : "under 0.25 s");
    std::printf("   program restart sweep (in-job restart, 64 spares, C=%.0f s):", in.checkpoint_s);
    for (double p : {0.0, 30.0, 60.0, 300.0}) {
        Inputs x = in;
        x.program_restart_s = p;
        std::printf(" +%.0fs %.2f%%;", p, simulate(x, 64).goodput * 100);
    }
    std::printf("\n");
    return 0;
}
