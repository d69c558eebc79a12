// Who and where this rank is (Slurm's task variables, read once per launcher
// run), shared by the launcher's phases (launcher/run.cpp), its failure
// decision (launcher/failure/end_decision) and its requeue (launcher/requeue/requeue_run).
#pragma once

#include <string>

#include "launcher/env/binding.hpp"
#include "launcher/options/options.hpp"

namespace gputopo::launch {

// Who and where this rank is: Slurm's task variables, read once, from the task's
// environment as the launcher sees it (the real one with the rank source's
// normalised SLURM_* variables in front: launcher/ranks/rank_sources).
struct RankInfo {
    Getenv getenv;       // that environment, for the phases that read more of it
    int rank = 0;
    std::string procid;  // SLURM_PROCID as written ("" when unset)
    TaskPlace place;     // SLURM_LOCALID, the node's task count, the node name (read_task_place)
    int nodes = 1;
    int world = 1;       // the step's tasks (SLURM_STEP_NUM_TASKS, else SLURM_NTASKS)
    std::string job_id;
    std::string step_id;
    std::string cluster;     // SLURM_CLUSTER_NAME
    std::string tmpdir;      // TMPDIR (the node state's last fallback)
    std::string job_end_time;  // SLURM_JOB_END_TIME
    int restart_count = 0;
    std::string node;    // SLURMD_NODENAME (slurmstepd sets it per task), else the host name
    std::string host;
};

// From the task's environment as the launcher sees it (the real one with the
// rank source's normalised SLURM_* variables in front: launcher/ranks/rank_sources).
// Throws ParseError for a rank or count that is not a number up to kMaxWorld.
RankInfo rank_info(const Getenv& get);

// Whether this rank speaks for its node (local task 0, or --verbose).
bool speaks(const Options& opt, const RankInfo& ri);

}  // namespace gputopo::launch
