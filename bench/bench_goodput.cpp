// Failure-driven goodput of a 30-day training job at 100,000 GPUs: requeue
// after every interruption against gputopo run's in-job restart with hot
// spares (a spare per hardware failure until none is left, then a requeue,
// which brings a fresh allocation with its spares), with fail-slow nodes in
// the mix. Llama 3 405B's interruption mix and rate (Dubey et al. 2024, table
// 5: 419 unexpected interruptions in 54 days on 16,384 GPUs), scaled linearly
// with the GPU count. Checkpoint every Daly interval (run/step_end.hpp
// daly_with_restart: the restart time is in the model). Every input printed;
// fixed seed; no timing. The headline: GPU-weighted goodput (the spares' idle
// GPUs counted as lost).
//
//   bench_goodput [--no-replicas] [--costs FILE] [INJOB_RESTART_S REQUEUE_S]
//
// Restart costs. Measured on the loopback cluster (bench/bench_job_restart.sh,
// tests/cluster/t_job_slow.sh), given as INJOB_RESTART_S REQUEUE_S or in a
// costs file: one "key=value" a line (seconds; '#' starts a comment; keys this
// bench does not know are listed and ignored):
//   injob_restart_s       fault seen -> every rank of the new step running (gputopo run, a spare)
//   requeue_s             fault -> every rank of the requeued job running (Slurm's hold included)
//   peer_restart_s        fault -> the program's first completed step, in-job restart, state from the peer
//   shared_restart_s      the same, state read from the shared directory
//   requeue_restart_s     fault -> the program's first completed step after a requeue
//   ranks                 ranks of the measured job (printed)
//   detect_hang_s         a hang (no progress) -> the step ended (replaces the 60 s of the hang causes)
//   detect_slow_s         a node throttled -> flagged slow, on the loopback (printed beside the model's)
//   slow_replace_s        flagged -> the step ended at the next checkpoint, on the loopback (printed)
//   slow_interval_s       the program's checkpoint interval meanwhile, on the loopback (printed)
// The program's restart at N GPUs (the model, printed with its sources):
//   measured part   peer_restart_s - injob_restart_s: the program's own restart on this
//                   machine (imports, process group, state from the peer, a first step);
//   rendezvous      NVIDIA Resiliency Extension (NVRx, nvidia.github.io/nvidia-resiliency-ext):
//                   the in-process restart's own parts (destroy and re-create the process group,
//                   re-assign ranks, a TCPStore barrier) take about 1.5 s at 16k ranks; scaled
//                   linearly with the ranks (one TCPStore that every rank talks to);
//   state load      from the peer: one node's state (8 GPUs x 4 GB) over its own NICs
//                   (8 x 400 Gb/s); from the shared directory: every GPU's 4 GB read at once
//                   through the storage's 2 TB/s sustained (Llama 3: Tectonic, 2 TB/s sustained,
//                   7 TB/s peak; 1 MB to 4 GB per GPU). A requeue restores from the shared
//                   directory (the peers' copies go with the allocation). Gemini (Wang et al.,
//                   SOSP'23) reports 13x faster recovery from in-memory peer copies than from
//                   remote storage: the model's ratio is printed beside it.
//   NVRx also reports about a minute for an in-job restart at scale: the program-restart
//   sweep shows it.
// Checkpoint replicas (gputopo run's replica peers, examples/pytorch/train_replicas.py): an
// asynchronous checkpoint is at the replica peer once one node's state has crossed its NICs
// (8 GPUs x 4 GB at 400 GB/s = 0.08 s after the stall), and durable in the shared
// directory C later. An in-job restart (the allocation kept: the failed node's peer and
// every other node's own copy survive) resumes from the last checkpoint the peers hold; a
// requeue (a new allocation) from the last durable one. A node and its peer lost together
// (peers sit in different failure domains) is not modelled. Without replicas
// (--no-replicas): every restart resumes from the last durable checkpoint.
// Fail-slow: as many fail-slow events as fail-stop interruptions (ByteRobust, Wan et al.
// SOSP'25, arXiv:2509.16293: at scale fail-slow is as common as fail-stop), each a node
// running 1.5x slower (assumed) that the whole data-parallel job waits for. gputopo run
// --slow-nodes=replace flags a node whose rate is below --slow-fraction x the median: a
// 1.5x slower node runs at 0.67 of it, so it is flagged with --slow-fraction 0.75 (what
// this bench models: a GPU job's busy times are steady) and never with gputopo run's
// default 0.5 (printed beside it). Flagged
// after --slow-windows x --slow-window (+ one window for the alignment), replaced at the
// next checkpoint (no work lost), an in-job restart with a spare. Not flagged, or not
// replaced (no spare left, the requeue baseline): slow until found by hand (1 h,
// assumed), then requeued at a checkpoint.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
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
    double program_restart_s = 0;   // the program's own restart at scale, in-job (program_restart_at); swept below
    double program_requeue_s = 0;   // the same after a requeue (state from the shared directory)
    bool measured = false;          // the restart times come from bench_job_restart.sh
    double detect_scale = 1;        // every cause's detection time times this (swept)
    // Measured by the cluster benches (costs file); -1: not measured.
    double peer_restart_s = -1, shared_restart_s = -1, requeue_restart_s = -1, ranks_measured = -1;
    double detect_hang_s = -1, detect_slow_s = -1, slow_replace_s = -1, slow_interval_s = -1;
    std::string costs_file;
    // The program's restart at scale (see the header).
    double rendezvous_ref_s = 1.5, rendezvous_ref_ranks = 16384;  // NVRx in-process parts
    double storage_tb_s = 2;        // shared storage, sustained (Llama 3)
    double node_net_gb_s = 400;     // one node's NICs: 8 x 400 Gb/s
    // Fail-slow.
    double slow_per_stop = 1;       // fail-slow events per fail-stop interruption (ByteRobust)
    double slow_factor = 1.5;       // the slow node's step time over the others' (assumed)
    double slow_manual_s = 3600;    // not replaced: slow until found by hand (assumed)
    double slow_window_s = 60, slow_windows = 3;  // gputopo run's defaults
    double slow_fraction = 0.75;    // --slow-fraction: the site setting modelled (gputopo run's default 0.5 is printed beside)
    bool replicas = true;           // checkpoint replicas at peers (--no-replicas: off)
    bool replace_slow = true;       // --slow-nodes=replace
    unsigned seed = 20261201;
};

// The program's restart at `in.gpus` (the header's model).
struct ProgramRestart {
    double measured = 0, rendezvous = 0, load_peer = 0, load_shared = 0;
    double injob() const { return measured + rendezvous + load_peer; }
    double requeue() const { return measured + rendezvous + load_shared; }
};
ProgramRestart program_restart_at(const Inputs& in) {
    ProgramRestart p;
    if (in.peer_restart_s >= 0) p.measured = std::max(0.0, in.peer_restart_s - in.injob_restart_s);
    p.rendezvous = in.rendezvous_ref_s * in.gpus / in.rendezvous_ref_ranks;
    p.load_peer = in.gpus_per_node * in.state_per_gpu_gb / in.node_net_gb_s;
    p.load_shared = in.gpus * in.state_per_gpu_gb / (in.storage_tb_s * 1000);
    return p;
}

// Slow node: flagged after this long at scale (the windows, and one for the alignment).
double slow_detect_s(const Inputs& in) { return (in.slow_windows + 1) * in.slow_window_s; }
// Whether --slow-fraction flags a node slow_factor times slower than the others.
bool slow_flagged(const Inputs& in) { return 1 / in.slow_factor < in.slow_fraction; }

// "key=value" lines into `in`; false with `error` set (file, line, what was expected).
// Keys of bench_job_restart.sh's file this bench does not use (not numbers, or details).
const std::set<std::string> kInformational = {
    "state_mb_per_rank", "shared_read_mbps", "load_average", "peer_restore_s", "shared_restore_s",
    "requeue_restore_s", "peer_fetch_s", "shared_fetch_s", "requeue_fetch_s", "peer_detect_s",
    "shared_detect_s", "requeue_detect_s", "restore_speedup", "fetch_speedup"};

bool read_costs(const std::string& path, Inputs& in, std::string& error) {
    std::ifstream f(path);
    if (!f) {
        error = "--costs " + path + ": cannot read it";
        return false;
    }
    const std::map<std::string, double*> keys = {
        {"injob_restart_s", &in.injob_restart_s},       {"requeue_s", &in.requeue_s},
        {"peer_restart_s", &in.peer_restart_s},         {"shared_restart_s", &in.shared_restart_s},
        {"requeue_restart_s", &in.requeue_restart_s}, {"ranks", &in.ranks_measured},
        {"detect_hang_s", &in.detect_hang_s},           {"detect_slow_s", &in.detect_slow_s},
        {"slow_replace_s", &in.slow_replace_s},         {"slow_interval_s", &in.slow_interval_s},
    };
    std::string line;
    for (int n = 1; std::getline(f, line) && n <= 10000; ++n) {
        line = line.substr(0, line.find('#'));
        const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
        if (b == std::string::npos) continue;
        line = line.substr(b, e - b + 1);
        const size_t eq = line.find('=');
        const std::string where = path + ":" + std::to_string(n) + ": ";
        if (eq == std::string::npos) {
            error = where + "'" + line.substr(0, 80) + "': expected key=value";
            return false;
        }
        const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
        auto k = keys.find(key);
        if (k == keys.end() && kInformational.count(key)) continue;  // bench_job_restart's details
        if (k == keys.end()) {
            std::printf("   (%s ignored: a key this bench does not use)\n", (where + key.substr(0, 60)).c_str());
            continue;
        }
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end || !std::isfinite(v) || v < 0 || v > 1e7) {
            error = where + key + "='" + value.substr(0, 40) + "': expected a number from 0 to 10000000 (seconds)";
            return false;
        }
        *k->second = v;
    }
    in.costs_file = path;
    in.measured = true;
    return true;
}

// What a checkpoint costs the step: it stalls for stall_s, is at the replica peers
// peer_s after the stall ends (-1: no replicas), and durable persist_s after it
// (0: blocking, durable at once).
struct Checkpoint {
    const char* name;
    double stall_s, persist_s, peer_s = -1;
};
Checkpoint blocking(const Inputs& in) { return {"blocking", in.checkpoint_s, 0}; }
Checkpoint async(const Inputs& in) {
    return {"asynchronous", in.state_per_gpu_gb / in.d2h_gb_s, in.checkpoint_s,
            in.replicas ? in.gpus_per_node * in.state_per_gpu_gb / in.node_net_gb_s : -1};
}

struct Result {
    double goodput = 0;
    int failures = 0, injob = 0, requeues = 0, slow = 0, slow_replaced = 0;
    double interval_s = 0;
};

double job_mtbf_s(const Inputs& in) { return in.ref_days * 86400 * in.ref_gpus / (in.ref_interruptions * in.gpus); }

// One 30-day job. spares < 0: requeue after every interruption. Checkpoints
// every interval; a failure rolls the work back to the last durable one.
Result simulate(const Inputs& in, int spares, const Checkpoint& ck) {
    std::mt19937_64 rng(in.seed);
    const double mtbf = job_mtbf_s(in);
    // Fail-stop interruptions and fail-slow events, one Poisson stream; the last weight is fail-slow's.
    std::exponential_distribution<double> next((1 + in.slow_per_stop) / mtbf);
    std::vector<double> weights;
    double stops = 0;
    for (const auto& c : kCauses) {
        weights.push_back(c.count);
        stops += c.count;
    }
    weights.push_back(stops * in.slow_per_stop);
    std::discrete_distribution<size_t> cause(weights.begin(), weights.end());
    const double injob = in.injob_restart_s + in.program_restart_s, requeue = in.requeue_s + in.program_requeue_s;
    // gputopo run keeps the allocation, so its restarts resume from the peers' copies.
    const bool peers = spares >= 0 && ck.peer_s >= 0;
    Result r;
    // The interval for the strategy's typical restart (Daly with R, and the lag until the copy it resumes from).
    r.interval_s = daly_with_restart(ck.stall_s, mtbf, spares < 0 ? requeue : injob, peers ? ck.peer_s : ck.persist_s).interval_s;
    const double end = in.days * 86400;
    double t = 0, fail_at = next(rng);
    double done = 0, durable = 0;            // work done; work in the last durable checkpoint
    double pending = -1, pending_at = 0;     // the checkpoint being written: its work, when durable
    double at_peer = 0, sent = -1, sent_at = 0;  // the same for the copy at the replica peers
    int left = spares;
    while (t < end) {
        const double seg = r.interval_s + ck.stall_s;
        if (fail_at >= t + seg) {  // a full interval and its checkpoint's stall
            t += seg;
            done += r.interval_s;
            if (pending >= 0 && pending_at <= t) durable = pending;  // the previous write is done
            if (sent >= 0 && sent_at <= t) at_peer = sent;
            if (peers) {
                sent = done;
                sent_at = t + ck.peer_s;
            }
            if (ck.persist_s > 0) {
                pending = done;
                pending_at = t + ck.persist_s;
            } else {
                durable = done;
            }
            continue;
        }
        if (pending >= 0 && pending_at <= fail_at) durable = pending;
        if (sent >= 0 && sent_at <= fail_at) at_peer = sent;
        pending = -1;
        sent = -1;
        at_peer = std::max(at_peer, durable);
        const size_t which = cause(rng);
        if (which == kCauses.size()) {  // fail-slow: the job goes on at 1/slow_factor
            ++r.slow;
            done += std::min(fail_at - t, r.interval_s);  // the work of the interval so far
            const bool replaced = in.replace_slow && slow_flagged(in) && spares >= 0 && left > 0;
            // Replaced: flagged, then the next checkpoint (half an interval on average), no work
            // lost, an in-job restart. Else slow until found by hand, then requeued at a checkpoint.
            const double slow_s = replaced ? slow_detect_s(in) + r.interval_s / 2 : in.slow_manual_s;
            done += slow_s / in.slow_factor;
            durable = at_peer = done;
            t = fail_at + slow_s + ck.stall_s;
            if (replaced) {
                --left;
                ++r.slow_replaced;
                t += injob;
            } else {
                left = spares;
                ++r.requeues;
                t += requeue;
            }
            fail_at = t + next(rng);
            continue;
        }
        t = fail_at;
        const Cause& c = kCauses[which];
        ++r.failures;
        double cost;
        if (spares >= 0 && (!c.node || left > 0)) {
            if (c.node) --left;
            cost = injob;
            ++r.injob;
            done = peers ? at_peer : durable;  // the work since the checkpoint resumed from is lost
        } else {
            cost = requeue;
            left = spares;  // a fresh allocation with its spares
            ++r.requeues;
            done = durable;
        }
        at_peer = done;  // the checkpoint resumed from is where the work stands (durable stays behind it)
        const double detect = (!c.node && c.detect_s >= 60 && in.detect_hang_s >= 0) ? in.detect_hang_s : c.detect_s;
        t += detect * in.detect_scale + cost;
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
    const ProgramRestart p = program_restart_at(in);
    std::printf("   restart, supervisor: in-job %.2f s, requeue %.1f s (%s)\n", in.injob_restart_s, in.requeue_s,
                in.measured ? (in.costs_file.empty() ? "measured on the loopback cluster by bench/bench_job_restart.sh"
                                                     : ("measured: " + in.costs_file).c_str())
                            : "defaults; bench/bench_job_restart.sh passes the ones it measures");
    if (in.peer_restart_s >= 0)
        std::printf("   restart, the program's own (measured on %.0f ranks): fault -> first completed step %.2f s with the state from"
                    " the peer, less the supervisor's %.2f s = %.2f s\n",
                    in.ranks_measured, in.peer_restart_s, in.injob_restart_s, p.measured);
    else
        std::printf("   restart, the program's own: NOT MEASURED (no peer_restart_s in a costs file): 0 s + the model below\n");
    if (in.shared_restart_s >= 0 && in.peer_restart_s > 0)
        std::printf("   state from the shared directory instead (measured): %.2f s to the first step (%.1fx the peer path)\n",
                    in.shared_restart_s, in.shared_restart_s / in.peer_restart_s);
    if (in.requeue_restart_s >= 0) std::printf("   requeue to the first completed step (measured): %.1f s\n", in.requeue_restart_s);
    std::printf("   restart, the program's own at %.0f GPUs (model): measured %.2f s + rendezvous %.2f s (NVRx: %.1f s at %.0f ranks,"
                " linear in ranks) + state %.2f s from the peer (%.0f GPUs x %.0f GB over %.0f GB/s) = %.1f s in-job;"
                " after a requeue state from the shared directory %.0f s (%.0f GPUs x %.0f GB at %.0f TB/s, Llama 3's storage) = %.1f s;"
                " peer vs shared state %.0fx (Gemini, SOSP'23: 13x)\n",
                in.gpus, p.measured, p.rendezvous, in.rendezvous_ref_s, in.rendezvous_ref_ranks, p.load_peer, in.gpus_per_node,
                in.state_per_gpu_gb, in.node_net_gb_s, p.injob(), p.load_shared, in.gpus, in.state_per_gpu_gb, in.storage_tb_s,
                p.requeue(), (p.measured + p.load_shared) / std::max(1e-9, p.measured + p.load_peer));
    std::printf("   checkpoint replicas: %s\n",
                in.replicas ? "an asynchronous checkpoint is at the replica peer 0.08 s after its stall (one node's 8 x 4 GB over"
                              " 400 GB/s); in-job restarts resume from it, requeues from the durable one"
                            : "none (--no-replicas): every restart resumes from the durable checkpoint");
    std::printf("   detection: hang causes %s; fail-slow: %.0f per fail-stop interruption (ByteRobust), %.1fx slower"
                " (%.2f of the median rate: %s by --slow-fraction %.2f),"
                " flagged after (%.0f windows + 1) x %.0f s = %.0f s (--slow-windows, --slow-window: gputopo run's defaults)%s;"
                " not replaced: found by hand after %.0f s\n",
                in.detect_hang_s >= 0 ? ("measured " + std::to_string(in.detect_hang_s).substr(0, 5) + " s").c_str() : "60 s",
                in.slow_per_stop, in.slow_factor, 1 / in.slow_factor, slow_flagged(in) ? "flagged" : "NOT flagged",
                in.slow_fraction, in.slow_windows, in.slow_window_s, slow_detect_s(in),
                in.detect_slow_s >= 0 ? (", measured on the loopback " + std::to_string(in.detect_slow_s).substr(0, 5) +
                                         " s with 3 s windows").c_str() : "",
                in.slow_manual_s);
}

// Goodput with every cause's detection time scaled.
double detection_scaled(const Inputs& in, double k) {
    Inputs x = in;
    x.detect_scale = k;
    return simulate(x, 64, async(x)).goodput * 100;
}

// The strategies side by side for one checkpoint model; the fewest spares
// that reach 97% (-1: none), and the best goodput.
int strategy_table(const Inputs& in, const Checkpoint& ck, double& best, double& weighted_best, int& weighted_spares) {
    const int nodes = int(in.gpus / in.gpus_per_node);
    std::printf("\n   %s checkpoint (stall %.2f s, durable %.0f s after it)\n", ck.name, ck.stall_s, ck.persist_s);
    std::printf("   %-22s %8s %9s %9s %8s %9s %10s %12s\n", "strategy", "spares", "failures", "in-job", "requeues",
                "slow/repl", "interval", "goodput");
    Result rq = simulate(in, -1, ck);
    std::printf("   %-22s %8s %9d %9d %8d %5d/%-3d %9.0fs %11.2f%%\n", "requeue every time", "-", rq.failures, rq.injob, rq.requeues,
                rq.slow, rq.slow_replaced, rq.interval_s, rq.goodput * 100);
    int reached = -1, best_weighted_spares = 0;
    double best_weighted = 0;
    best = 0;
    for (int s : {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
        Result r = simulate(in, s, ck);
        std::printf("   %-22s %8d %9d %9d %8d %5d/%-3d %9.0fs %11.2f%%  (GPU-weighted %.2f%%)\n", "in-job restart", s, r.failures,
                    r.injob, r.requeues, r.slow, r.slow_replaced, r.interval_s, r.goodput * 100, r.goodput * nodes / (nodes + s) * 100);
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
    // The same spares with one input changed at a time.
    auto same_spares = [&](const char* what, Inputs x) {
        const Result r = simulate(x, best_weighted_spares, ck.persist_s > 0 ? async(x) : blocking(x));
        std::printf("   the same %d spares, %s: %.2f%% (GPU-weighted %.2f%%)\n", best_weighted_spares, what, r.goodput * 100,
                    r.goodput * nodes / (nodes + best_weighted_spares) * 100);
    };
    Inputs x = in;
    x.replace_slow = false;
    same_spares("slow nodes not replaced (--slow-nodes=report)", x);
    x = in;
    x.slow_fraction = 0.5;
    same_spares("--slow-fraction 0.5 (gputopo run's default: a 1.5x slower node is not flagged)", x);
    x = in;
    x.replicas = false;
    same_spares("no checkpoint replicas (every restart resumes from the durable checkpoint)", x);
    weighted_best = best_weighted;
    weighted_spares = best_weighted_spares;
    const Result ij = simulate(in, best_weighted_spares, ck);
    const RestartWaste w = daly_with_restart(ck.stall_s, job_mtbf_s(in), in.injob_restart_s + in.program_restart_s,
                                             ck.peer_s >= 0 ? ck.peer_s : ck.persist_s);
    // A slow node replaced within two checkpoint intervals: flagged, then the next checkpoint (at most one interval).
    const double replaced = slow_detect_s(in) + ij.interval_s;
    std::printf("   slow node replaced after at most %.0f s (flagged %.0f s + one interval %.0f s) = %.2f checkpoint intervals"
                " from the slowdown's start, 1 from its flagging (target: within two: %s)\n", replaced, slow_detect_s(in),
                ij.interval_s, replaced / ij.interval_s, replaced <= 2 * ij.interval_s ? "met" : "NOT met");
    std::printf("   model (run/step_end daly_with_restart, in-job restart, detection not included): interval %.0f s,"
                " waste %.2f%%\n", w.interval_s, w.waste * 100);
    return reached;
}

}  // namespace

int main(int argc, char** argv) {
    Inputs in;
    std::vector<std::string> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size();) {
        if (args[i] == "--no-replicas") {
            in.replicas = false;
            args.erase(args.begin() + long(i));
        } else if (args[i] == "--costs" && i + 1 < args.size()) {
            std::string err;
            if (!read_costs(args[i + 1], in, err)) {
                std::fprintf(stderr, "bench_goodput: %s\n", err.c_str());
                return 2;
            }
            args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
        } else {
            ++i;
        }
    }
    if (args.size() == 2) {
        char* e1 = nullptr;
        char* e2 = nullptr;
        in.injob_restart_s = std::strtod(args[0].c_str(), &e1);
        in.requeue_s = std::strtod(args[1].c_str(), &e2);
        if (*e1 || *e2 || !(in.injob_restart_s >= 0 && in.injob_restart_s < 1e7) || !(in.requeue_s >= 0 && in.requeue_s < 1e7)) {
            std::fprintf(stderr, "bench_goodput: '%s' '%s': expected two restart times in seconds (in-job, requeue)\n",
                         args[0].c_str(), args[1].c_str());
            return 2;
        }
        in.measured = true;
    } else if (!args.empty()) {
        std::fprintf(stderr, "usage: bench_goodput [--no-replicas] [--costs FILE] [INJOB_RESTART_S REQUEUE_S]\n");
        return 2;
    }
    const ProgramRestart pr = program_restart_at(in);
    in.program_restart_s = pr.injob();
    in.program_requeue_s = pr.requeue();
    print_inputs(in);
    const double mtbf = job_mtbf_s(in);
    double best_blocking = 0, best_async = 0;
    double weighted_blocking = 0, weighted_async = 0;
    int spares_blocking = 0, spares_async = 0;
    const int blocking_reached = strategy_table(in, blocking(in), best_blocking, weighted_blocking, spares_blocking);
    const int async_reached = strategy_table(in, async(in), best_async, weighted_async, spares_async);
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
    std::printf("\n   program restart sweep (in-job restart, 64 spares, asynchronous; the program's own restart in-job, after a"
                " requeue %.0f s more):", in.program_requeue_s - in.program_restart_s);
    for (double p : {0.0, 30.0, 60.0, 300.0}) {
        Inputs x = in;
        x.program_requeue_s = p + (in.program_requeue_s - in.program_restart_s);
        x.program_restart_s = p;
        std::printf(" %.0fs %.2f%%;", p, simulate(x, 64, async(x)).goodput * 100);
    }
    std::printf("\n   detection sweep (in-job restart, 64 spares, asynchronous): the causes' detection times x0.5 %.2f%%, x1 %.2f%%, x2 %.2f%%\n",
                detection_scaled(in, 0.5), detection_scaled(in, 1), detection_scaled(in, 2));
    std::printf("   fail-slow sweep (in-job restart, 64 spares, asynchronous, GPU-weighted):");
    for (double window : {60.0, 30.0, 10.0})
        for (double ratio : {0.0, 0.5, 1.0}) {
            Inputs x = in;
            x.slow_window_s = window;
            x.slow_per_stop = ratio;
            const double nodes = in.gpus / in.gpus_per_node;
            std::printf(" %.0fs windows, %.1f per fail-stop %.2f%%;", window, ratio,
                        simulate(x, 64, async(x)).goodput * nodes / (nodes + 64) * 100);
        }
    std::printf("\n== HEADLINE: GPU-weighted goodput at %.0f GPUs, fail-stop and fail-slow, asynchronous checkpoint: %.2f%% (%d spare"
                " nodes; the program's restart %s: %.1f s in-job, %.1f s after a requeue) -- target >= 97%%: %s\n",
                in.gpus, weighted_async * 100, spares_async,
                in.peer_restart_s >= 0 ? "measured + modelled to scale" : "NOT measured (modelled parts only)",
                in.program_restart_s, in.program_requeue_s, weighted_async >= 0.97 ? "met" : "NOT met");
    {
        Inputs x = in;
        x.slow_per_stop = 0;
        std::printf("   (fail-stop only, as before fail-slow was in the mix, asynchronous:");
        for (int sp : {0, 64}) {
            const double nodes = in.gpus / in.gpus_per_node;
            std::printf(" %d spares GPU-weighted %.2f%%;", sp, simulate(x, sp, async(x)).goodput * nodes / (nodes + sp) * 100);
        }
        std::printf(")\n");
    }
    {
        // What no supervisor can beat in this model: in-job restarts, detection and the slow-node flag free.
        Inputs x = in;
        x.injob_restart_s = x.program_restart_s = 0;
        x.detect_scale = 0;
        x.slow_window_s = 0;
        const double nodes = in.gpus / in.gpus_per_node;
        double best = 0;
        int best_spares = 0;
        for (int sp : {0, 16, 32, 64, 128, 256, 512}) {
            const double g = simulate(x, sp, async(x)).goodput * nodes / (nodes + sp);
            if (g > best) best = g, best_spares = sp;
        }
        std::printf("   ceiling of this model (every in-job restart, every detection and the slow-node flag take 0 s; requeues,"
                    " the checkpoint and the failure mix as above): %.2f%% GPU-weighted with %d spares\n", best * 100, best_spares);
    }
    if (in.detect_slow_s >= 0 && in.slow_replace_s >= 0 && in.slow_interval_s > 0)
        std::printf("   slow node on the loopback (measured, tests/cluster/t_job_slow.sh): flagged %.1f s after the throttle began,"
                    " replaced %.1f s later at the next checkpoint = %.2f checkpoint intervals of %.1f s (target: within two: %s)\n",
                    in.detect_slow_s, in.slow_replace_s, (in.detect_slow_s + in.slow_replace_s) / in.slow_interval_s,
                    in.slow_interval_s, in.detect_slow_s + in.slow_replace_s <= 2 * in.slow_interval_s ? "met" : "NOT met");
    (void)weighted_blocking;
    (void)spares_blocking;
    return 0;
}
