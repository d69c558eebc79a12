// Checkpoint replica peers of a `gputopo run` step: every slot (node of the
// step) gets a peer slot in another failure domain that keeps a copy of its
// checkpoint shard, so a node replaced by a spare restores its state from the
// peer instead of the shared directory (issue 37).
//
// Failure domain: the node's island (NVL72 rack, leaf switch, or the islands=
// map), or the island's power domain when gputopo.conf gives one (Island=...
// PowerDomain=P: islands of one power domain are one domain); a node no
// source names is a domain of its own.
//
// The rule (plan_replica_peers), slots in rank order (split_allocation groups
// them island by island):
//   1. Pairs, NVRx-compatible: slots i and i+J are each other's peer, for
//      i = a*2J + b (b < J), the grouping of nvidia-resiliency-ext's
//      CliqueReplicationStrategy with replication_factor 2 and
//      replication_jump J x tasks per node. The smallest J (N divisible by 2J)
//      that puts every pair in two domains.
//   2. Else a ring: slot i's replica on slot (i+s) mod N, the smallest shift
//      tried that puts every replica in another domain.
//   3. Else (a domain holds more than half the slots; one island: no other
//      domain) the candidate with the fewest replicas inside their own domain
//      (pairs before a ring, smaller J/s first): those replicas are on another
//      node of the same domain, which the event and the note say.
// The plan is made once, at the job's start, and kept across restarts: a
// spare that takes a slot inherits the slot's peer, and until the program
// reports a checkpoint made after it came (GPUTOPO_LAST_CHECKPOINT changes) it
// is told to restore from the peer (restore_from), unless the peer slot was
// replaced as well in that time (then the replica is lost: the shared
// directory). A shrink (a slot dropped) makes a new plan.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launcher/failure/events.hpp"
#include "run/node_pool.hpp"
#include "topo/fabric/island_map.hpp"

namespace gputopo::launch::job {

enum class ReplicaRule { None, Pairs, Ring };
const char* replica_rule_name(ReplicaRule r);  // "none", "pairs", "ring"

struct ReplicaPeers {
    ReplicaRule rule = ReplicaRule::None;
    size_t jump = 0;               // Pairs: J (slots); Ring: the shift s
    std::vector<size_t> peer;      // peer[i]: the slot that keeps slot i's replica (i itself: none)
    std::vector<size_t> keeps;     // keeps[i]: the slot whose replica slot i keeps (i itself: none)
    size_t same_domain = 0;        // slots whose replica is inside their own failure domain
    bool one_domain = false;       // every slot is in one failure domain
    std::string note;              // one line: the rule chosen and why
};

// The failure domain of `node`: its island's power domain, else its island's
// name; "" when no island source names the node.
std::string failure_domain(const IslandMap& islands, const std::string& node);

// The plan for `slots` (rank order); `domain_of` gives each node's failure
// domain ("" unknown: the node alone). Pure.
ReplicaPeers plan_replica_peers(const std::vector<std::string>& slots,
                                const std::function<std::string(const std::string&)>& domain_of);

// One slot's line of the table the program reads (GPUTOPO_REPLICAS).
struct ReplicaSlot {
    size_t slot = 0;
    std::string node, domain, peer, peer_domain, keeps;
    std::string replaced;      // the node this slot's node replaced, while its state is still to restore
    std::string restore_from;  // where that node's replica lives ("" none, or lost)
};

// The table: a header line ("rule=pairs replication_jump=4 replication_factor=2
// tasks_per_node=2 slots=2 attempt=1 same_domain=0") then one line per slot
// ("slot=0 node=n2 domain=leaf1 peer=n3 peer_domain=leaf2 keeps=n3 replaced=n1
// restore_from=n3"). Empty values are written as "-".
std::string replica_table(const ReplicaPeers& p, const std::vector<ReplicaSlot>& rows, int tasks_per_node, int attempt);

// NVRx's replication_jump (ranks) for a Pairs plan; 0 for any other.
size_t nvrx_replication_jump(const ReplicaPeers& p, int tasks_per_node);

// The job's replica peers across its restarts: the hook job_run.cpp calls.
class ReplicaPeerSet {
public:
    ReplicaPeerSet(const NodePool& pool, const IslandMap& islands, int tasks_per_node);

    // Before a step is launched: writes STATE/replicas.<attempt>, logs the
    // assignment (event "replica_peers", one per attempt) and returns the
    // variables for the step (GPUTOPO_REPLICAS, GPUTOPO_REPLICATION_JUMP,
    // GPUTOPO_REPLICATION_FACTOR). `checkpoint`: what the program last reported.
    std::vector<std::pair<std::string, std::string>> launch(const NodePool& pool, const std::string& state_dir, int attempt,
                                                            const std::string& checkpoint, EventLog& log);

    // After the pool took a decision (apply_decision done): a Replace marks the
    // slot to restore from its peer; a Shrink makes a new plan.
    void applied(const RestartDecision& d, const NodePool& pool, const std::string& checkpoint);

    // The rows for `pool` as they are now (for tests and the event).
    std::vector<ReplicaSlot> rows(const NodePool& pool) const;
    const ReplicaPeers& plan() const { return plan_; }

private:
    std::string domain(const std::string& node) const;
    void replan(const NodePool& pool, const char* why);

    const IslandMap& islands_;
    int tasks_per_node_;
    ReplicaPeers plan_;
    // slot -> (replaced node, the checkpoint reported when it was replaced)
    std::map<size_t, std::pair<std::string, std::string>> pending_;
    std::string replanned_;  // why the plan was made again ("" at the start)
};

}  // namespace gputopo::launch::job
