#include "run/replica_peers.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <set>
#include <sstream>

#include "topo/core/env_names.hpp"
#include "topo/core/files.hpp"

namespace gputopo::launch::job {

namespace {

// Ring shifts tried besides the ones the domains suggest: enough for any
// layout of small domains, bounded for 100k-GPU steps (each costs one pass).
constexpr size_t kRingShiftsTried = 64;

struct Candidate {
    ReplicaRule rule = ReplicaRule::None;
    size_t jump = 0;
    size_t same = 0;
};

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

// Slots whose replica stays in their own domain, pairs {i, i+J} (NVRx cliques of 2).
size_t pairs_same(const std::vector<std::string>& key, size_t j) {
    size_t same = 0;
    for (size_t i = 0; i < key.size(); ++i)
        if ((i / j) % 2 == 0 && key[i] == key[i + j]) same += 2;
    return same;
}

size_t ring_same(const std::vector<std::string>& key, size_t s) {
    size_t same = 0;
    for (size_t i = 0; i < key.size(); ++i) same += key[i] == key[(i + s) % key.size()];
    return same;
}

}  // namespace

const char* replica_rule_name(ReplicaRule r) {
    switch (r) {
        case ReplicaRule::None: return "none";
        case ReplicaRule::Pairs: return "pairs";
        case ReplicaRule::Ring: return "ring";
    }
    return "none";
}

std::string failure_domain(const IslandMap& islands, const std::string& node) {
    const size_t id = islands.find(node);
    if (id == IslandMap::npos) return "";
    const Island& isl = islands.island(id);
    return isl.power_domain.empty() ? isl.name : isl.power_domain;
}

ReplicaPeers plan_replica_peers(const std::vector<std::string>& slots,
                                const std::function<std::string(const std::string&)>& domain_of) {
    ReplicaPeers p;
    const size_t n = slots.size();
    p.peer.resize(n);
    p.keeps.resize(n);
    for (size_t i = 0; i < n; ++i) p.peer[i] = p.keeps[i] = i;
    if (n < 2) {
        p.note = "one node: no replica peer (the shared directory holds the only copy)";
        return p;
    }
    std::vector<std::string> key(n);
    std::map<std::string, size_t> count;
    for (size_t i = 0; i < n; ++i) {
        const std::string d = domain_of(slots[i]);
        key[i] = d.empty() ? "\1node:" + slots[i] : d;  // unknown: the node alone
        ++count[key[i]];
    }
    size_t largest = 0;
    for (const auto& [k, c] : count) largest = std::max(largest, c);
    p.one_domain = count.size() == 1;

    Candidate best;
    auto consider = [&](ReplicaRule rule, size_t jump, size_t same) {
        if (best.rule == ReplicaRule::None || same < best.same) best = Candidate{rule, jump, same};
    };
    auto perfect = [&] { return best.rule != ReplicaRule::None && best.same == 0; };
    for (size_t j = 1; 2 * j <= n && !perfect(); ++j)
        if (n % (2 * j) == 0) consider(ReplicaRule::Pairs, j, pairs_same(key, j));
    if (!perfect()) {
        std::set<size_t> shifts;
        for (size_t s = 1; s < n && s <= kRingShiftsTried; ++s) shifts.insert(s);
        for (size_t s : {largest, n / 2, n - largest})
            if (s >= 1 && s < n) shifts.insert(s);
        for (auto s = shifts.begin(); s != shifts.end() && !perfect(); ++s) consider(ReplicaRule::Ring, *s, ring_same(key, *s));
    }
    p.rule = best.rule;
    p.jump = best.jump;
    p.same_domain = best.same;
    for (size_t i = 0; i < n; ++i) {
        if (p.rule == ReplicaRule::Pairs) {
            p.peer[i] = p.keeps[i] = (i / p.jump) % 2 == 0 ? i + p.jump : i - p.jump;
        } else {
            p.peer[i] = (i + p.jump) % n;
            p.keeps[(i + p.jump) % n] = i;
        }
    }
    std::ostringstream note;
    if (p.rule == ReplicaRule::Pairs)
        note << "pairs: slot i and i+" << p.jump << " keep each other's replica (NVRx cliques of 2)";
    else
        note << "ring: slot i's replica on slot i+" << p.jump << " (no pairing of " << n
             << " slots puts every replica in another domain)";
    if (p.one_domain)
        note << "; every node is in one failure domain (" << (key[0][0] == '\1' ? "unknown" : key[0])
             << "): no other domain, the replicas are on another node of it";
    else if (p.same_domain > 0)
        note << "; " << p.same_domain << " of " << n << " replicas in their own failure domain (a domain holds "
             << largest << " of the " << n << " slots)";
    else
        note << "; every replica in another failure domain";
    p.note = note.str();
    return p;
}

size_t nvrx_replication_jump(const ReplicaPeers& p, int tasks_per_node) {
    return p.rule == ReplicaRule::Pairs ? p.jump * static_cast<size_t>(tasks_per_node) : 0;
}

std::string replica_table(const ReplicaPeers& p, const std::vector<ReplicaSlot>& rows, int tasks_per_node, int attempt) {
    std::ostringstream out;
    out << "rule=" << replica_rule_name(p.rule) << " replication_jump=" << nvrx_replication_jump(p, tasks_per_node)
        << " replication_factor=" << (p.rule == ReplicaRule::None ? 1 : 2) << " tasks_per_node=" << tasks_per_node
        << " slots=" << rows.size() << " attempt=" << attempt << " same_domain=" << p.same_domain << "\n";
    for (const auto& r : rows)
        out << "slot=" << r.slot << " node=" << r.node << " domain=" << or_dash(r.domain) << " peer=" << or_dash(r.peer)
            << " peer_domain=" << or_dash(r.peer_domain) << " keeps=" << or_dash(r.keeps)
            << " replaced=" << or_dash(r.replaced) << " restore_from=" << or_dash(r.restore_from) << "\n";
    return out.str();
}

ReplicaPeerSet::ReplicaPeerSet(const NodePool& pool, const IslandMap& islands, int tasks_per_node)
    : islands_(islands), tasks_per_node_(tasks_per_node) {
    replan(pool, "");
}

std::string ReplicaPeerSet::domain(const std::string& node) const { return failure_domain(islands_, node); }

void ReplicaPeerSet::replan(const NodePool& pool, const char* why) {
    plan_ = plan_replica_peers(pool.slots, [this](const std::string& n) { return domain(n); });
    pending_.clear();
    replanned_ = why;
}

std::vector<ReplicaSlot> ReplicaPeerSet::rows(const NodePool& pool) const {
    std::vector<ReplicaSlot> rows;
    const size_t n = std::min(pool.slots.size(), plan_.peer.size());
    for (size_t i = 0; i < n; ++i) {
        ReplicaSlot r;
        r.slot = i;
        r.node = pool.slots[i];
        r.domain = domain(r.node);
        if (plan_.peer[i] != i) {
            r.peer = pool.slots[plan_.peer[i]];
            r.peer_domain = domain(r.peer);
            r.keeps = pool.slots[plan_.keeps[i]];
        }
        if (auto it = pending_.find(i); it != pending_.end()) {
            r.replaced = it->second.first;
            // The replica is gone when the slot that kept it was replaced too since.
            if (plan_.peer[i] != i && !pending_.count(plan_.peer[i])) r.restore_from = r.peer;
        }
        rows.push_back(r);
    }
    return rows;
}

std::vector<std::pair<std::string, std::string>> ReplicaPeerSet::launch(const NodePool& pool, const std::string& state_dir,
                                                                        int attempt, const std::string& checkpoint,
                                                                        EventLog& log) {
    // A checkpoint reported since a slot was replaced: its node has its own state now.
    for (auto it = pending_.begin(); it != pending_.end();)
        it = it->second.second != checkpoint ? pending_.erase(it) : std::next(it);
    const std::vector<ReplicaSlot> rs = rows(pool);
    std::string path = state_dir + "/replicas." + std::to_string(attempt), table_error;
    try {
        write_file_atomically(path, replica_table(plan_, rs, tasks_per_node_, attempt), 0600);
    } catch (const std::exception& e) {
        // The step still runs: without the table the program keeps its state as it would without gputopo.
        table_error = e.what();
        std::fprintf(stderr, "gputopo run: replica peers table %s not written (%s): the program is not told its peers\n",
                     path.c_str(), table_error.c_str());
        path.clear();
    }
    std::string assignments, restores;
    size_t same_now = 0;
    for (const auto& r : rs) {
        assignments += (assignments.empty() ? "" : ",") + r.node + ">" + or_dash(r.peer);
        same_now += !r.peer.empty() && r.domain == r.peer_domain;
        if (!r.replaced.empty())
            restores += (restores.empty() ? "" : ",") + r.node + "<" + or_dash(r.restore_from) + " (was " + r.replaced + ")";
    }
    const size_t jump = nvrx_replication_jump(plan_, tasks_per_node_);
    log.write(Event("replica_peers").add("attempt", attempt).add("rule", replica_rule_name(plan_.rule))
                  .add("replication_jump", static_cast<long long>(jump)).add("assignments", assignments)
                  .add("restores", restores).add("same_domain", static_cast<long long>(same_now))
                  .add("one_domain", plan_.one_domain).add("replanned", replanned_).add("note", plan_.note)
                  .add("table", path).add("table_error", table_error));
    replanned_.clear();
    std::vector<std::pair<std::string, std::string>> vars;
    if (!path.empty()) vars.emplace_back(env::kRunReplicas, path);
    if (jump > 0) {
        vars.emplace_back(env::kRunReplicationJump, std::to_string(jump));
        vars.emplace_back(env::kRunReplicationFactor, "2");
    }
    return vars;
}

void ReplicaPeerSet::applied(const RestartDecision& d, const NodePool& pool, const std::string& checkpoint) {
    if (d.action == RestartAction::Shrink) {
        replan(pool, "shrink: a slot was dropped, the replicas kept until now are not where the new plan puts them");
        return;
    }
    if (d.action != RestartAction::Replace) return;
    const auto at = std::find(pool.slots.begin(), pool.slots.end(), d.replacement);
    if (at == pool.slots.end()) return;
    const size_t slot = static_cast<size_t>(at - pool.slots.begin());
    // A node that replaced one whose state was still to restore restores the same state.
    auto earlier = pending_.find(slot);
    pending_[slot] = {d.failed_node, earlier != pending_.end() ? earlier->second.second : checkpoint};
}

}  // namespace gputopo::launch::job
