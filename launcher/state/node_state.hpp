// The node's private state: the directory a node's ranks share (the leader
// claims, the step-GPU exchange, the error file) and the leader election in it.
// Used by the requeue, the root cause, the GPU exchange and the error file.
#pragma once

#include <string>
#include <vector>

namespace gputopo::launch {

// Where this node's ranks elect their leader. node_state_base: the
// --node-state-dir option with %n replaced by the node name, else /dev/shm
// when writable, else TMPDIR (or /tmp). private_state_dir: BASE/gputopo-launch.UID,
// made 0700; "" unless it is a directory (not a symlink) this user owns with
// no group or other access, since anyone can pre-create a name in /dev/shm.
std::string node_state_base(const std::string& option, const std::string& node, const std::string& tmpdir);
std::string private_state_dir(const std::string& base);
// The bases to try, in order (issue 20, H4): --node-state-dir (%n expanded)
// when given, /dev/shm when writable, TMPDIR, /tmp; no duplicates.
std::vector<std::string> node_state_bases(const std::string& option, const std::string& node, const std::string& tmpdir);
// A fresh directory in `base` that only this user can have made, the same for
// every task of the user on the node (issue 33, finding 3):
// BASE/gputopo-launch.UID.<creation time>.<random>, made 0700; among this
// user's such directories (owner, mode 0700, not a link: names another user
// makes do not count) the oldest is taken, after a short wait (0.2 s at most,
// only right after one was made) that lets tasks starting together agree.
// "" when none can be made.
std::string fresh_private_dir(const std::string& base);
// The user's private runtime directories: $XDG_RUNTIME_DIR (when absolute),
// /run/user/UID; used only when this user owns them with mode 0700.
std::vector<std::string> runtime_dirs();
// The first base whose BASE/gputopo-launch.UID is usable (private_state_dir):
// another user who pre-creates the name in /dev/shm only moves this user to
// the next base. When another user took the name in every base:
// RUNTIME/gputopo-launch in the first private runtime directory, else
// fresh_private_dir in the first base that takes one. "" when none is usable,
// with `note` naming what was refused.
std::string first_private_state_dir(const std::vector<std::string>& bases, std::string* note = nullptr,
                                    const std::vector<std::string>& runtime = runtime_dirs());
// first_private_state_dir(node_state_bases(option, node, tmpdir)): the one
// directory the leader claim, the GPU exchange and the error file use.
std::string node_private_dir(const std::string& option, const std::string& node, const std::string& tmpdir,
                             std::string* note = nullptr);

// Leader election among the ranks of one attempt: true for the first caller
// with this key in `dir` (O_CREAT|O_EXCL|O_NOFOLLOW). True also when the dir is
// "" or unusable (then slurmctld arbitrates). A claim older than stale_after_s
// belongs to an earlier job with the same id and is taken over.
bool claim_leadership(const std::string& dir, const std::string& key, double stale_after_s = 300);
// Removes this directory's claims older than stale_after_s (at most 4096
// entries a call): each claim made after a job's end clears earlier jobs' ones,
// so claims do not pile up in /dev/shm with no epilog (claim_leadership calls it).
void sweep_stale_claims(const std::string& dir, double stale_after_s);
// Removes a claim made with claim_leadership (its owner is done).
void release_claim(const std::string& dir, const std::string& key);

}  // namespace gputopo::launch
