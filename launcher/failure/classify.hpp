// How the program ended, and why: pure, so every rule is tested on text.
//
// Classes, first match wins:
//   gpu_fault   a failed preflight; or, for a non-zero end, GPU evidence in
//               the exception PyTorch's @record wrote to TORCHELASTIC_ERROR_FILE
//               (launcher/failure/error_file.hpp: its message and traceback; a "NCCL
//               error" there counts too, not local) or else in the stderr tail: NVRM Xid lines, CUDA/driver errors (not the
//               ones a program causes itself: out of memory, device-side
//               assert, invalid argument...), ECC / fallen off the bus / GPU
//               lost.
//   user_error  exit code in --no-requeue-exit, or the reserved code (78).
//   timeout     the launcher got SIGTERM and the job's end time is (about) now.
//   preemption  the launcher got SIGTERM at another time (preemption, scancel).
//   success     exit 0.
//   peer_lost   this rank died because a peer did (connection reset/closed
//               by peer, NCCL remote errors, "remote process exited", NCCL
//               watchdog and collective timeouts): not a cause of its own. It
//               defers to the cause another rank records in the job's record
//               (launcher/failure/root_cause.hpp); with none within --peer-wait it
//               counts as node_fault (a node or its launcher died unseen).
//   node_fault  a node lost (srun's node failure lines, IB transport errors).
//   failed      anything else (a crash, exit 1 with a traceback ...).
// `local` tells whether the evidence points at this node (Xid, CUDA, a
// preflight): only then is this node kept out of the next attempt. A NCCL
// timeout seen here may be caused by a peer, so it retries without excluding.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace gputopo::launch {

enum class FailureClass { Success, UserError, GpuFault, NodeFault, Timeout, Preemption, Failed, PeerLost };
const char* failure_class_name(FailureClass c);  // "success", "user_error", "gpu_fault", ...

struct ChildEnd {
    bool exited = true;          // false: killed by term_signal
    int exit_code = 0;
    int term_signal = 0;
    bool got_term = false;       // the launcher received SIGTERM before the program ended
    // Seconds from SIGTERM to the job's end time; negative when SIGTERM came
    // after it (slurmctld enforces limits on a 30 s tick); NaN unknown.
    double term_time_left_s = std::numeric_limits<double>::quiet_NaN();
    std::string stderr_tail;
    std::string error_record;    // the error file's message and traceback ("" none)
    bool preflight_failed = false;
    std::string preflight_output;
};

struct ClassifyPolicy {
    std::vector<int> no_requeue_exit;
    int no_requeue_code = 78;
    double timeout_window_s = 60;  // SIGTERM within this many seconds of the end time = timeout
};

struct Classification {
    FailureClass cls = FailureClass::Success;
    std::string evidence;  // one line: the matching stderr line, the exit code, ...
    bool local = false;    // the evidence points at this node
};

Classification classify(const ChildEnd& end, const ClassifyPolicy& policy);

// The status the launcher exits with: the program's exit code, or 128+signal.
int exit_status_of(const ChildEnd& end);

// Finds the most telling GPU / node line in a stderr tail (the last match).
// Returns false when nothing matches. Exposed for tests.
bool find_gpu_evidence(const std::string& tail, std::string& line, bool& local);
bool find_node_evidence(const std::string& tail, std::string& line);
// A peer's loss seen here (connection closed/reset by peer, NCCL remote
// errors, NCCL/gloo timeouts).
bool find_peer_evidence(const std::string& tail, std::string& line);
// A NCCL error line (as torch raises it: "DistBackendError: NCCL error in: ...");
// `local` when it names an unhandled CUDA error.
bool find_nccl_error(const std::string& text, std::string& line, bool& local);
// The exception a Python program died of: the last line of its last traceback
// ("ZeroDivisionError: division by zero"), clipped; "" when the text has no
// traceback.
std::string find_exception_line(const std::string& text);
// Whether `line` is shaped like a traceback's last line ("Name: message" or
// "Name" at column 0, Name a dotted identifier).
bool is_exception_line(const std::string& line);
// `line` without the "[rankN]: " that torch 2.x puts before each line of an
// exception it prints in a distributed job.
std::string without_rank_prefix(const std::string& line);

}  // namespace gputopo::launch
