// Root cause, not first report, decides a failure.
//
// When one rank of a multi-rank step fails, its peers die too ("Connection
// closed by peer", NCCL remote errors, collective timeouts): class peer_lost
// (launcher/failure/classify.hpp). Which rank reports first is chance, so the rule
// every node applies alike is:
//  1. A rank with a cause of its own (failed, user_error, gpu_fault,
//     node_fault) records it in the job's record, the Comment, as
//     "gputopo:cause=CLASS@NODE/STEP.RESTART" (one per node: the first such
//     rank of the node; the first record of an attempt stays), then decides
//     as before: only retryable classes requeue.
//  2. A peer_lost rank (one per node: the first) reads the Comment every
//     second for at most --peer-wait (default 10 s) for a record of the same
//     step and attempt. Found: the recorded cause decides; this rank neither
//     requeues nor blames a node. None: no rank lived to say why, so a node or
//     its launcher died: node_fault, retryable (a killed node).
//  3. Every other peer_lost rank of the node exits without deciding.
// Records of earlier attempts or steps are dropped when a new one is written.
// Pure here; run.cpp does the reads and writes (bounded scontrol).
#pragma once

#include <optional>
#include <string>

#include "launcher/failure/classify.hpp"
#include "launcher/state/job_comment.hpp"

namespace gputopo::launch {

// The classes that are a rank's own cause (recorded).
bool is_root_cause(FailureClass c);
FailureClass failure_class_from_name(const std::string& name);  // Failed when unknown

std::string cause_key(const std::string& step_id, int restart_count);

// The record itself (CauseRecord, find_cause, merge_cause): launcher/state/job_comment.hpp.

// sbatch --requeue, as the shipped job_submit.lua records it in the Comment
// ("gputopo:requeue=asked"), or a Requeue=1 job on a cluster whose
// JobRequeue is 0 (`job_requeue_conf` = slurm.conf's value, "" unknown).
bool job_asked_requeue(const std::string& comment, bool requeue_allowed, const std::string& job_requeue_conf);

}  // namespace gputopo::launch
