// Structured failure evidence from PyTorch's @record
// (torch.distributed.elastic.multiprocessing.errors.record): on an uncaught
// exception it writes, to the file TORCHELASTIC_ERROR_FILE names,
//   {"message": {"message": "<ExceptionType>: <text>",
//                "extraInfo": {"py_callstack": "<traceback>", "timestamp": "<unix s>"}}}
// (pytorch torch/distributed/elastic/multiprocessing/errors/error_handler.py,
// ErrorHandler.record_exception). An agent copying a child's file may add
// "errorCode" next to "extraInfo", or write "message" as a plain string
// (ErrorHandler.override_error_code_in_rootcause_data). The launcher gives
// every rank its own file, removes it before the program starts, reads it
// after a failed end and classifies from it (launcher/failure/classify.hpp).
#pragma once

#include <string>

namespace gputopo::launch {

struct Options;
// The pattern the options ask for: --error-file PATTERN, "auto" (the
// default) = LOGDIR/gputopo-error.%j.%r.json with --log, else
// PRIVATE/gputopo-error.%j.%r.json in this user's private directory on the node
// (launcher/state/node_state.hpp node_private_dir: /dev/shm/gputopo-launch.UID, else under
// TMPDIR or /tmp; issue 20, H3: never a name another user can create first in
// a shared /tmp); "" (no error file) when there is no such directory.
// Expanded for this rank.
std::string resolve_error_file(const Options& opt, const std::string& job, int rank, int restart);

// The rank's file: PATTERN with %j -> job id ("nojob" outside Slurm, as the event log),
// %r -> rank, %R -> restart count. "" or "none" -> "" (no error file).
std::string error_file_path(const std::string& pattern, const std::string& job, int rank, int restart);

struct ErrorRecord {
    bool found = false;       // the file exists and is torch's format
    std::string message;      // "RuntimeError: CUDA error: ..."
    std::string callstack;    // py_callstack ("" when absent)
    std::string timestamp;    // "" when absent
    long long error_code = 0; // "errorCode" when present
    std::string problem;      // why a file that exists was not understood ("" when fine)
};

// Pure: parses the text of an error file (at most 1 MiB is looked at).
ErrorRecord parse_error_record(const std::string& text);
// Reads `path` (a missing file: found == false, problem ""): without following
// a link, without blocking on a FIFO, only a regular file this user owns, at
// most 1 MiB (topo/core/files read_file_bounded). Never throws.
ErrorRecord read_error_record(const std::string& path);

}  // namespace gputopo::launch
