// Reading and writing the files gputopo handles, safely for a process that
// may run as root inside slurmstepd: every read is bounded in size, never
// blocks on a FIFO and never reads a device; every write goes to a fresh
// temporary file (O_EXCL | O_NOFOLLOW, so no planted file or link is
// followed) renamed into place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gputopo {

// Size limits: far above any real file of the kind, far below what would hurt a node.
inline constexpr uint64_t kMaxTopologyFileBytes = uint64_t{64} << 20;  // hwloc / NCCL XML, snapshots
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{16} << 20;    // gputopo.conf, topology.conf

struct ReadLimits {
    uint64_t max_bytes = kMaxTopologyFileBytes;
    bool follow_links = true;  // false: a symbolic link as the last component is refused
    bool owned_by_me = false;  // true: a file another user owns is refused (files in sticky, shared directories)
};

// Why a read failed: the errno that explains it (ENOENT, EISDIR, EFBIG,
// ELOOP, ...) and a phrase that completes "PATH ...": "does not exist", "is a
// directory", "is not a regular file", "is larger than N bytes", "is a
// symbolic link", "is owned by uid N, not by this user", "cannot be read (strerror)".
struct ReadFailure {
    int err = 0;
    std::string what;
};

// The whole content of the regular file `path`, or nothing with `failure`
// filled (when given). Never throws.
std::optional<std::string> read_file_bounded(const std::string& path, const ReadLimits& limits,
                                             ReadFailure* failure = nullptr);

// The first line of a small text file (a sysfs or /proc attribute), without its
// newline: read_file_bounded with a 64 KiB limit. "" when it cannot be read.
std::string read_first_line(const std::string& path);

// Writes `text` to `path` through `path`.tmp.<pid> created with O_EXCL |
// O_NOFOLLOW (mode `mode`), fsync'ed and renamed over `path`. Throws
// TopologyError naming the file on failure; leaves no temporary file behind.
void write_file_atomically(const std::string& path, const std::string& text, unsigned mode = 0644);

}  // namespace gputopo
