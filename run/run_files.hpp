// The files of a `gputopo run` job, opened as files in a directory that others
// may write must be: the state directory is the user's own (made 0700, or an
// existing one accepted only when it is a directory, not a link, owned by this
// user, writable by no one else); every file in it is read without following a
// link, without blocking (a FIFO is not waited on), regular files only, and
// bounded in size; every path handed to the program is absolute.
#pragma once

#include <optional>
#include <string>

namespace gputopo::launch::job {

// `path` made absolute against the current directory ("" stays "").
std::string absolute_path(const std::string& path);

// Creates `dir` (and its parents, 0700 for the last) or accepts it as it is when
// it is the user's own. Returns "" or the problem, a phrase naming the directory:
// "state directory X exists and is owned by uid 1001 (expected yours; remove it or give --state-dir)".
std::string own_directory(const std::string& dir, const std::string& option);

// What a file holds, read as above; nullopt when it is missing, not a regular file,
// a link, larger than `max_bytes`, or not the user's own. `mtime` (unix
// seconds) when given and read.
std::optional<std::string> read_own_file(const std::string& path, size_t max_bytes, double* mtime = nullptr);

// The first line of the checkpoint report the program wrote (at most 4 KiB); "" none.
std::string last_checkpoint(const std::string& report);

// The job's in-job restarts so far, kept in STATE/restarts across requeues (a
// file the supervisor writes atomically); 0 when none or unreadable.
int recorded_restarts(const std::string& state_dir);
void record_restarts(const std::string& state_dir, int restarts);

}  // namespace gputopo::launch::job
