// The variables PyTorch, DeepSpeed, Lightning and friends read to form their
// process group, from what Slurm gives the task. One implementation for the
// SPANK plugin (spank/glue/remote_context.cpp, task_init) and gputopo-launch
// (launcher/run.cpp):
//   RANK = SLURM_PROCID, LOCAL_RANK = SLURM_LOCALID, WORLD_SIZE =
//   SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), LOCAL_WORLD_SIZE = this node's
//   entry of SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE),
//   MASTER_ADDR = the node that holds rank 0 (the front ends find it:
//   step/slurm_rank_order.hpp; else the first node of SLURM_STEP_NODELIST,
//   else SLURM_JOB_NODELIST), or its NodeAddr when that name does not resolve
//   (resolve_master_addr), MASTER_PORT = master_port(job, step) in [min, max],
//   the same on every rank of the step.
// and the rest of what torchrun's agent gives each worker (pytorch
// torch/distributed/elastic/agent/server/local_elastic_agent.py,
// LocalElasticAgent._start_workers, worker_env), so code written for torchrun
// (Lightning's TorchElasticEnvironment, Composer's dist, torch's @record)
// finds it under srun too:
//   GROUP_RANK = NODE_RANK = the node's position in rank order, from the ranks
//   it holds (never SLURM_NODEID, which stays in name order where 26.05 places
//   ranks in topology order: node_rank_from_ranks), GROUP_WORLD_SIZE = the step's node
//   count, ROLE_RANK = RANK, ROLE_WORLD_SIZE = WORLD_SIZE, ROLE_NAME =
//   "default" (torchrun's --role default), TORCHELASTIC_RESTART_COUNT =
//   SLURM_RESTART_COUNT (0 in a job never requeued), TORCHELASTIC_MAX_RESTARTS
//   = --max-restarts, TORCHELASTIC_RUN_ID = SLURM_JOB_ID,
//   TORCHELASTIC_ERROR_FILE = the rank's error file (launcher/failure/error_file.hpp).
// In island order (--gpu-topo=island, --rank-order=island) RANK and ROLE_RANK
// are the island rank and GROUP_RANK / NODE_RANK the node's position in that
// order (apply_island_order), so RANK = GROUP_RANK x LOCAL_WORLD_SIZE +
// LOCAL_RANK holds as under torchrun.
// A value the user already set wins (EnvVar::user_wins). Pure, apart from
// resolve_master_addr and port_clash.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "step/step_inputs.hpp"
#include "topo/core/env_var.hpp"

namespace gputopo::step {

struct FrameworkInputs {
    int master_port_min = 20000;
    int master_port_max = 29999;
    int max_restarts = -1;          // TORCHELASTIC_MAX_RESTARTS; <0 not set
    std::string error_file;         // TORCHELASTIC_ERROR_FILE; "" not set
    std::string master_addr;        // from the rank source or resolve_master_addr; "" the first node's name
    std::string master_port;        // from the rank source; "" derive from the job id
    long node_rank = -1;            // GROUP_RANK / NODE_RANK (step/slurm_rank_order.hpp); <0 from the task's ranks
};

// This node's position in rank order from the ranks it holds (SLURM_PROCID -
// SLURM_LOCALID, the lowest under block distribution): where the node list's
// order gives this node that lowest rank, its index there; else, with the same
// task count on every node, lowest rank / tasks per node; else -1 (unknown).
long node_rank_from_ranks(const Getenv& getenv_fn);

// Missing Slurm variables leave the matching framework variable out (a run
// outside Slurm gets nothing). Throws ParseError for a malformed Slurm value.
std::vector<EnvVar> framework_env(const Getenv& getenv_fn, const FrameworkInputs& in);

// The torchrun-only part (GROUP_RANK ... TORCHELASTIC_ERROR_FILE), appended to `out`.
void torchrun_env(const Getenv& getenv_fn, const FrameworkInputs& in, std::vector<EnvVar>& out);

// Island order: RANK and ROLE_RANK become `rank`, GROUP_RANK and NODE_RANK
// `group_rank` (either "" = left as they are), keeping user_wins.
void apply_island_order(std::vector<EnvVar>& wanted, const std::string& rank, const std::string& group_rank);

// "2(x3),1" + node index 3 -> 1. Throws ParseError on malformed text or an
// index past the end.
int tasks_on_node(const std::string& tasks_per_node, int node_index);

// The first host of a Slurm hostlist expression ("gpu[007-009],x" -> "gpu007").
std::string first_host(const std::string& hostlist);

// The first node of the step (SLURM_STEP_NODELIST, else the job's); "" when unset.
std::string step_first_node(const Getenv& getenv_fn);

// MASTER_PORT for (job, step) in [lo, hi]: lo + (job + 1009 x step) mod span.
// Job ids are consecutive, so jobs less than `span` ids apart never share a
// port in step 0, and steps 0-8 of jobs less than 1,000 ids apart never do
// (1009 x k mod 10000 stays >= 1009 for k = 1..8 with the default range).
int master_port(unsigned long long job_id, unsigned long long step_id, int lo, int hi);

// "" when this host can listen on TCP `port` now (bind with SO_REUSEADDR, as
// torch's TCPStore does), else one line naming the port, MASTER_PORT and what
// to do. Never throws.
std::string port_clash(int port);

// Runs argv (no shell) and returns (exit status, output); status -1 when it
// could not run or ran past timeout_s (then it is killed).
using CommandRunner = std::function<std::pair<int, std::string>(const std::vector<std::string>& argv, double timeout_s)>;

// True when `host` resolves (getaddrinfo) within timeout_s.
bool host_resolves(const std::string& host, double timeout_s);

// NodeAddr=... of `scontrol show node -o NAME` output for node `name`; "" none.
std::string parse_node_addr(const std::string& scontrol_output, const std::string& name);

// NodeAddr of `name` in slurm.conf text ("NodeName=n[1-4] NodeAddr=10.0.0.[1-4]",
// the n-th address for the n-th name); "" when no line names it (or the line
// gives no NodeAddr). Pure, never throws.
std::string node_addr_from_conf(const std::string& slurm_conf_text, const std::string& name);

// The text of the slurm.conf this process sees (SLURM_CONF, else
// /etc/slurm/slurm.conf), at most 4 MiB; "" when unreadable.
std::string read_local_slurm_conf();

struct MasterAddr {
    std::string addr;     // the value for MASTER_ADDR ("" when there is no first node)
    std::string warning;  // one line when neither the name nor a NodeAddr resolves / is known
};
// The first node's name when it resolves, else its NodeAddr: from
// `slurm_conf` (node_addr_from_conf; no RPC) else one bounded `scontrol show
// node -o NAME` through `run`; else the name and a warning.
MasterAddr resolve_master_addr(const std::string& first_node, const CommandRunner& run, double timeout_s = 5,
                               const std::string& slurm_conf = "");

// A runner for CommandRunner: step/run_bounded.hpp.

}  // namespace gputopo::step
