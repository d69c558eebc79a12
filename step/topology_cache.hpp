// cache=DIR: live hwloc discovery (100s of ms) done once per node and kept as
// hwloc XML, re-done when the cache is missing or stale (another boot id,
// another NVIDIA driver version). Task launch only reads the cache.
// Files: DIR/<host>.xml, DIR/<host>.snap (node_snapshot.hpp: what task
// launch reads) and DIR/<host>.meta ("boot_id=..\ndriver=..\nlive=complete\n",
// cache_meta_text),
// written atomically (temporary file + rename). DIR is admin-set.
#pragma once

#include <string>

#include "topo/core/files.hpp"
#include "topo/core/model.hpp"
#include "topo/sources/source_merge.hpp"

namespace gputopo::step {

struct CacheStamp {
    std::string boot_id;   // /proc/sys/kernel/random/boot_id
    std::string driver;    // first line of /proc/driver/nvidia/version, "" when absent
    std::string to_text() const;
    bool operator==(const CacheStamp& o) const { return boot_id == o.boot_id && driver == o.driver; }
};

CacheStamp current_stamp();

std::string cache_xml_path(const std::string& dir, const std::string& host);
std::string cache_meta_path(const std::string& dir, const std::string& host);

// The metadata file's text: the stamp, then "live=complete" when the live
// sources answered (apply_live_sources), else "live=incomplete until=T" (unix
// time `now` + kIncompleteCacheLifeS): a node described while NVML hung or
// failed is rediscovered after that, not kept until the next boot
// (issue 33, finding 8).
inline constexpr long kIncompleteCacheLifeS = 120;
std::string cache_meta_text(const CacheStamp& stamp, bool live_complete, long now);

// True when both files exist and the metadata matches `stamp` (cache_meta_text:
// complete, or incomplete and not yet past its time; an older metadata format
// is stale).
bool cache_fresh(const std::string& dir, const std::string& host, const CacheStamp& stamp);

// Discovers this machine (hwloc refined by `live`) and writes the cache;
// returns the node discovered. A cache that cannot be written (a full or
// read-only file system, a directory the caller may not write) does not lose
// the node (issue 20, H5): with `unwritten` the reason goes there and the node
// is returned; without it, TopologyError is thrown. Discovery failures throw.
Node refresh_cache(const std::string& dir, const std::string& host, const LiveSources& live,
                   std::string* unwritten = nullptr);

// The node from the cache; discovers (and writes the cache) when it is missing
// or stale. When the cache cannot be written, the node discovered is returned
// and the reason put in `unwritten`. Throws TopologyError.
Node load_cached_topology(const std::string& dir, const std::string& host, const LiveSources& live,
                          std::string* unwritten = nullptr);

// True the first time this boot that `marker` is created (O_CREAT|O_EXCL|O_NOFOLLOW,
// the caller picks a root-owned, per-boot place such as /run), and when it
// cannot be created for another reason than that it exists: "warn once per
// node and boot" for an unwritable cache.
bool first_this_boot(const std::string& marker);
inline constexpr const char* kCacheWarningMarker = "/run/gputopo-cache-unwritable";

// A topology file (topology=) read through a snapshot kept in `dir`
// (DIR/topo-<path with / as _>.snap, valid while the file's size and mtime
// are unchanged): the XML is parsed once, later steps read the snapshot.
// Writing the snapshot is best effort (the directory may not be writable by
// the job's user). `dir` empty: the file is read directly.
Node load_topology_via_snapshot(const std::string& path, const std::string& dir);

// The cache directory as the plugin trusts it (it runs as root there): a real
// directory, not a symbolic link, owned by root, not writable by group or
// others. Throws TopologyError naming it and what was expected otherwise;
// refresh_cache, load_cached_topology and load_topology_via_snapshot check it
// first. Files in it are read only when regular, without following links,
// and at most kMaxTopologyFileBytes (topo/core/files.hpp).
void check_cache_dir(const std::string& dir);

// Writes `text` to `path` atomically (topo/core/files.hpp). Throws TopologyError.
using gputopo::write_file_atomically;

}  // namespace gputopo::step
