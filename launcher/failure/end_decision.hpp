// How a rank's program ended, decided across the ranks of its job
// (launcher/failure/root_cause.hpp has the rule): the class (classify.hpp,
// with a SIGTERM that follows another rank's recorded cause told from a
// preemption), the rank's own cause recorded in the job's Comment, a peer_lost
// rank deferring to the recorded cause or, after --peer-wait without one,
// node_fault. Said once per node; logged. The node's leader claims it takes
// are released when the decision is made.
#pragma once

#include <optional>

#include "launcher/child/supervisor.hpp"
#include "launcher/failure/classify.hpp"
#include "launcher/failure/events.hpp"
#include "launcher/options/options.hpp"
#include "launcher/ranks/rank_info.hpp"

namespace gputopo::launch {

// The class that decides this rank's end (Success included), or nullopt when
// another rank decides (the root cause's own rank, or its node's first
// peer_lost rank): then this rank neither requeues nor blames a node.
std::optional<Classification> decide_end(const Options& opt, const RankInfo& ri, const SuperviseResult& sr,
                                         EventLog& log);

}  // namespace gputopo::launch
