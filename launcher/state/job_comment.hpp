// The job's Comment record: what gputopo keeps in the job's Comment, beside
// the user's free text, across the ranks, nodes and attempts of a job (it goes
// through slurmctld: no shared file system). Each record is one token that runs
// to the next white space:
//   gputopo:exclude=NODE[,NODE...][;backoff=S]  nodes to keep out of the next
//       attempt and a back-off in whole seconds: written by the requeue leader
//       (launcher/requeue/requeue.cpp) and `gputopo run` (run/), read
//       by etc/epilog_slurmctld_gputopo.sh, which moves them to ExcNodeList and
//       StartTime;
//   gputopo:cause=CLASS@NODE/STEP.RESTART  a rank's own failure, the root cause
//       its peers defer to (launcher/failure/root_cause.hpp);
//   gputopo:requeue=asked  the job was submitted with --requeue: written by
//       etc/job_submit.lua, read by launcher/requeue/requeue_asked.
// This is the one C++ reading and writing of the format; the epilog script and
// job_submit.lua keep their own copies, and tests/unit/test_job_comment.cpp
// feeds the same strings to all three and requires the same reading.
// Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gputopo::launch {

inline constexpr const char* kExcludeTag = "gputopo:exclude=";
inline constexpr const char* kCauseTag = "gputopo:cause=";
inline constexpr const char* kRequeueAskedRecord = "gputopo:requeue=asked";

// gputopo:exclude=. parse: the nodes of every record in the comment (a comment
// can hold more than one: a user's copy, an older launcher's; none may be
// lost), in order, without repeats; the last back-off (1 to 9 digits, > 0) of
// a record with nodes. A record whose node list is empty or not a plain
// hostlist (letters, digits, - _ . [ ] between the commas) counts for nothing.
// merge: one record with those nodes plus `node` (if not there) and `backoff_s`
// (0: none), in place of all old ones, keeping the rest of the comment.
struct ExclusionRecord {
    std::vector<std::string> nodes;
    double backoff_s = 0;
};
ExclusionRecord parse_exclusion_record(const std::string& comment);
std::string merge_exclusion_record(const std::string& comment, const std::string& node, double backoff_s);

// gputopo:cause=.
struct CauseRecord {
    std::string cls;   // failure_class_name()
    std::string node;
    std::string key;   // "STEP.RESTART"
};
// The first record with `key` in the comment.
std::optional<CauseRecord> find_cause(const std::string& comment, const std::string& key);
// The comment with `r` appended and every record of another key removed (the
// rest of the comment kept); unchanged when a record with r.key is there.
std::string merge_cause(const std::string& comment, const CauseRecord& r);

// gputopo:requeue=asked: whether the comment holds it, and the comment with it
// added (unchanged when there), as job_submit.lua writes it.
bool comment_asks_requeue(const std::string& comment);
std::string mark_requeue_asked(const std::string& comment);

}  // namespace gputopo::launch
