// The launcher's requeue (launcher/requeue/requeue.hpp has the rule): a
// retryable failure requeues the job once per failure across ranks: one
// leader per failure (this node's private directory, then --state-dir) asks
// slurmctld, decides (the budget, whether the job asked) and speaks; the node
// to exclude goes into the job's Comment first.
#pragma once

#include "launcher/failure/classify.hpp"
#include "launcher/failure/events.hpp"
#include "launcher/options/options.hpp"
#include "launcher/ranks/rank_info.hpp"

namespace gputopo::launch {

// `c`: the decided class (retryable); `status`: the program's exit status (logged when the budget is spent).
void requeue_if_due(const Options& opt, const RankInfo& ri, const Classification& c, int status, EventLog& log);

}  // namespace gputopo::launch
