#include "launcher/ranks/rank_sources.hpp"

#include <cstdio>

#include "launcher/ranks/pod.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"

namespace gputopo::launch {

namespace {

// A rank or count (env_number up to kMaxWorld); `required`: unset is an error.
long long number(const Getenv& get, const char* name, bool required, long long fallback = -1) {
    auto v = get(name);
    if ((!v || v->empty()) && required) throw ParseError(std::string(name) + " is not set (expected a number)");
    return env_number(get, name, kMaxWorld, fallback);
}

bool present(const Getenv& get, const char* name) {
    auto v = get(name);
    return v && !v->empty();
}

std::string str(const Getenv& get, const char* name) { return get(name).value_or(""); }

// The normalised variables for `nodes` nodes of `per_node` tasks each.
void fill(RankSource& s, long long rank, long long local, long long node, long long world, long long per_node) {
    if (per_node < 1) per_node = 1;
    long long nodes = (world + per_node - 1) / per_node;
    if (nodes < 1) nodes = 1;
    s.vars[env::kSlurmProcid] = std::to_string(rank);
    s.vars[env::kSlurmLocalid] = std::to_string(local);
    s.vars[env::kSlurmNodeid] = std::to_string(node);
    s.vars[env::kSlurmStepNumTasks] = std::to_string(world);
    s.vars[env::kSlurmStepNumNodes] = std::to_string(nodes);
    s.vars[env::kSlurmStepTasksPerNode] = std::to_string(per_node) + "(x" + std::to_string(nodes) + ")";
    s.note = s.name + ": rank " + std::to_string(rank) + " of " + std::to_string(world) + ", local " +
             std::to_string(local) + " of " + std::to_string(per_node) + ", node " + std::to_string(node) + " of " +
             std::to_string(nodes);
}

void check_below(const char* what, long long v, const char* bound_name, long long bound) {
    if (v >= bound)
        throw ParseError(std::string(what) + "=" + std::to_string(v) + " is not below " + bound_name + "=" +
                         std::to_string(bound));
}

RankSource from_torchrun(const Getenv& get) {
    RankSource s;
    s.name = "torchrun";
    long long rank = number(get, "RANK", true), local = number(get, "LOCAL_RANK", true);
    long long world = number(get, "WORLD_SIZE", true), lws = number(get, "LOCAL_WORLD_SIZE", true);
    long long group = number(get, "GROUP_RANK", true);
    check_below("RANK", rank, "WORLD_SIZE", world);
    check_below("LOCAL_RANK", local, "LOCAL_WORLD_SIZE", lws);
    fill(s, rank, local, group, world, lws);
    if (auto g = number(get, "GROUP_WORLD_SIZE", false); g > 0) {
        s.vars[env::kSlurmStepNumNodes] = std::to_string(g);
        s.vars[env::kSlurmStepTasksPerNode] = std::to_string(lws) + "(x" + std::to_string(g) + ")";
    }
    return s;
}

RankSource from_openmpi(const Getenv& get) {
    RankSource s;
    s.name = "openmpi";
    long long rank = number(get, env::kOmpiCommWorldRank, true), world = number(get, env::kOmpiCommWorldSize, true);
    long long local = number(get, env::kOmpiCommWorldLocalRank, true);
    long long lws = number(get, env::kOmpiCommWorldLocalSize, true);
    check_below(env::kOmpiCommWorldRank, rank, env::kOmpiCommWorldSize, world);
    check_below(env::kOmpiCommWorldLocalRank, local, env::kOmpiCommWorldLocalSize, lws);
    // Open MPI's NODE_RANK is the node's index in the job's allocation;
    // without it (older releases) a by-slot mapping gives rank / local size.
    long long node = number(get, env::kOmpiCommWorldNodeRank, false, rank / (lws < 1 ? 1 : lws));
    fill(s, rank, local, node, world, lws);
    return s;
}

RankSource from_pytorchjob(const Getenv& get) {
    RankSource s;
    s.name = "pytorchjob";
    long long nnodes = number(get, env::kPetNnodes, true), node = number(get, env::kPetNodeRank, true);
    check_below(env::kPetNodeRank, node, env::kPetNnodes, nnodes);
    if (auto n = get(env::kPetNprocPerNode); n && !n->empty() && *n != "1")
        throw ParseError("PET_NPROC_PER_NODE='" + *n +
                         "': gputopo-launch runs one process per pod; run it under torchrun in the pod "
                         "(torchrun --no-python ... gputopo-launch -- PROGRAM) for several");
    fill(s, node, 0, node, nnodes, 1);
    s.master_addr = present(get, env::kPetMasterAddr) ? str(get, env::kPetMasterAddr) : str(get, "MASTER_ADDR");
    s.master_port = present(get, env::kPetMasterPort) ? str(get, env::kPetMasterPort) : str(get, "MASTER_PORT");
    return s;
}

RankSource from_indexed_job(const Getenv& get) {
    RankSource s;
    s.name = "indexed-job";
    long long per_job = number(get, env::kPodsPerJob, false, 1);
    if (per_job < 1) throw ParseError("GPUTOPO_PODS_PER_JOB=0: expected a positive number");
    long long index = number(get, "JOB_COMPLETION_INDEX", true);
    check_below("JOB_COMPLETION_INDEX", index, env::kPodsPerJob, per_job);
    long long job = number(get, "JOB_INDEX", false, 0);
    long long nnodes = number(get, env::kNnodes, false, per_job);
    long long node = job * per_job + index;
    check_below("node rank (JOB_INDEX * GPUTOPO_PODS_PER_JOB + JOB_COMPLETION_INDEX)", node, env::kNnodes, nnodes);
    fill(s, node, 0, node, nnodes, 1);
    std::string jobset = str(get, "JOBSET_NAME"), rjob = str(get, "REPLICATED_JOB_NAME");
    if (present(get, "MASTER_ADDR")) s.master_addr = str(get, "MASTER_ADDR");
    else if (!jobset.empty() && !rjob.empty()) s.master_addr = jobset + "-" + rjob + "-0-0." + jobset;
    s.master_port = str(get, "MASTER_PORT");
    return s;
}

}  // namespace

long long env_number(const Getenv& get, const char* name, long long max, long long fallback) {
    auto v = get(name);
    if (!v || v->empty()) return fallback;
    const std::string shown = v->size() > 40 ? v->substr(0, 40) + "..." : *v;
    auto bad = [&]() {
        return ParseError(std::string(name) + "='" + printable(shown) + "': expected a whole number from 0 to " +
                          std::to_string(max));
    };
    long long n = 0;
    for (char c : *v) {
        if (c < '0' || c > '9') throw bad();
        if (n > (max - (c - '0')) / 10) throw bad();  // n * 10 + digit > max, without overflow
        n = n * 10 + (c - '0');
    }
    return n;
}

RankSource detect_rank_source(const Getenv& get) {
    RankSource s;
    if (present(get, "GROUP_RANK") && present(get, "RANK") && present(get, "LOCAL_RANK") &&
        present(get, "WORLD_SIZE") && present(get, "LOCAL_WORLD_SIZE"))
        s = from_torchrun(get);
    else if (present(get, env::kOmpiCommWorldRank))
        s = from_openmpi(get);
    else if (present(get, env::kSlurmProcid)) {
        s.name = "slurm";
        s.note = "slurm: rank " + str(get, env::kSlurmProcid);
    } else if (present(get, env::kPetNnodes) && present(get, env::kPetNodeRank))
        s = from_pytorchjob(get);
    else if (present(get, "JOB_COMPLETION_INDEX"))
        s = from_indexed_job(get);
    else {
        s.note = "no rank source (no SLURM_*, torchrun, Open MPI, PET_* or JOB_COMPLETION_INDEX): rank 0 of 1";
    }
    return s;
}

Getenv with_rank_source(const Getenv& get, const RankSource& src) {
    if (src.vars.empty()) return get;
    return [get, vars = src.vars](const std::string& name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it != vars.end()) return it->second;
        return get(name);
    };
}

RankSourceView rank_source_view(const Options& opt, const Getenv& get) {
    RankSourceView view;
    try {
        view.source = detect_rank_source(get);
    } catch (const ParseError& e) {
        std::fprintf(stderr, "gputopo: %s; running as rank 0 of 1\n", e.what());
        view.source = RankSource{};
        view.source.note = std::string(e.what()) + "; rank 0 of 1";
    }
    if (view.source.name != "slurm") {
        bool listed = false;
        for (const char* n : {env::kSlurmStepGpus, env::kCudaVisibleDevices, env::kRocrVisibleDevices})
            if (auto v = get(n); v && !v->empty()) listed = true;
        if (!listed) {
            PodGpus g = pod_gpus(get, opt.sysroot);
            if (!g.gpus.empty()) {
                // As Slurm with cgroup-constrained devices: the node's indices, and
                // the zero-based numbering CUDA sees here (relative numbering).
                view.source.vars[env::kSlurmStepGpus] = join_ints(g.gpus);
                if (!g.container.empty()) view.source.vars[env::kCudaVisibleDevices] = join_ints(g.container);
                view.gpus_from = g.from + " (node GPUs " + join_ints(g.gpus) +
                                 (g.container.empty() ? "" : ", " + join_ints(g.container) + " in the container") + ")";
                if (!g.note.empty()) view.gpus_from += "; " + g.note;
            }
        }
        view.cpuset = cgroup_cpuset(opt.sysroot);
    }
    view.getenv = with_rank_source(get, view.source);
    return view;
}

}  // namespace gputopo::launch
