#include "launcher/ranks/rank_info.hpp"

#include <algorithm>

#include "launcher/ranks/rank_sources.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/host.hpp"

namespace gputopo::launch {

namespace {

// A rank or count up to kMaxWorld (launcher/ranks/rank_sources env_number):
// a value out of range is a ParseError naming the variable, never a wrapped int.
int env_int(const Getenv& get, const char* name, int fallback) {
    return static_cast<int>(env_number(get, name, kMaxWorld, fallback));
}

std::string env_str(const Getenv& get, const char* name) { return get(name).value_or(""); }

}  // namespace

RankInfo rank_info(const Getenv& get) {
    RankInfo r;
    r.getenv = get;
    r.rank = env_int(get, env::kSlurmProcid, 0);
    r.procid = env_str(get, env::kSlurmProcid);
    r.nodes = std::max(1, env_int(get, env::kSlurmStepNumNodes,
                                  env_int(get, env::kSlurmJobNumNodes, env_int(get, env::kSlurmNnodes, 1))));
    r.world = env_int(get, env::kSlurmStepNumTasks, env_int(get, env::kSlurmNtasks, 1));
    r.job_id = env_str(get, env::kSlurmJobId);
    r.step_id = env_str(get, env::kSlurmStepId);
    r.cluster = env_str(get, env::kSlurmClusterName);
    r.tmpdir = env_str(get, env::kTmpdir);
    r.job_end_time = env_str(get, env::kSlurmJobEndTime);
    r.restart_count = env_int(get, env::kSlurmRestartCount, 0);
    r.host = host_name();
    r.place = read_task_place(get, r.host);
    r.node = env_str(get, env::kSlurmdNodename);
    if (r.node.empty()) r.node = r.host;
    return r;
}

bool speaks(const Options& opt, const RankInfo& ri) { return ri.place.local_id == 0 || opt.verbose; }

}  // namespace gputopo::launch
