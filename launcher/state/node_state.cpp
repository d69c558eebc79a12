#include "launcher/state/node_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>

namespace gputopo::launch {

namespace {

std::string uid_text() { return std::to_string(static_cast<unsigned long>(::geteuid())); }

// `dir` opened without following a link: a directory this user owns that no
// one else may enter or write.
bool is_own_private_dir(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
    ::close(fd);
    return ok;
}

// `dir`, made 0700 when missing; "" unless is_own_private_dir.
std::string usable_private_dir(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
    return is_own_private_dir(dir) ? dir : "";
}

uint64_t realtime_ns() {
    timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string hex(uint64_t v, int digits) {
    static const char d[] = "0123456789abcdef";
    std::string out(static_cast<size_t>(digits), '0');
    for (int i = digits - 1; i >= 0; --i, v >>= 4) out[static_cast<size_t>(i)] = d[v & 15];
    return out;
}

// Fresh directories: BASE/gputopo-launch.UID.<16 hex digits: creation time in ns>.<random>.
// Another user can make names like these, not directories this user owns: only
// ours count, and the oldest is everyone's (fresh_private_dir).
constexpr uint64_t kFreshMkdirSlackNs = 50000000;  // a name's time is at most this before its mkdir
constexpr uint64_t kFreshSettleNs = 200000000;     // after which every older name is visible
constexpr int kFreshScanLimit = 100000;             // entries of BASE looked at per scan

std::string fresh_prefix() { return "gputopo-launch." + uid_text() + "."; }

// The oldest of this user's fresh directories in `base` ("" when none).
std::string oldest_fresh(const std::string& base) {
    DIR* d = ::opendir(base.c_str());
    if (!d) return "";
    const std::string prefix = fresh_prefix();
    std::string best;
    int seen = 0;
    while (dirent* e = ::readdir(d)) {
        if (++seen > kFreshScanLimit) break;
        const std::string name = e->d_name;
        if (name.size() != prefix.size() + 16 + 1 + 8 || name.compare(0, prefix.size(), prefix) != 0 ||
            name[prefix.size() + 16] != '.' || (!best.empty() && name >= best))
            continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            st.st_uid == ::geteuid() && (st.st_mode & 077) == 0)
            best = name;
    }
    ::closedir(d);
    return best;
}

uint64_t fresh_time(const std::string& name) {
    return std::strtoull(name.substr(fresh_prefix().size(), 16).c_str(), nullptr, 16);
}

// Makes a fresh directory in `base`; "" when it cannot.
std::string make_fresh(const std::string& base) {
    std::random_device random;
    for (int attempt = 0; attempt < 8; ++attempt) {
        const uint64_t t = realtime_ns();
        const std::string name = fresh_prefix() + hex(t, 16) + "." + hex(random(), 8);
        if (::mkdir((base + "/" + name).c_str(), 0700) != 0) {
            if (errno == EEXIST) continue;
            return "";
        }
        if (realtime_ns() - t <= kFreshMkdirSlackNs) return name;
        ::rmdir((base + "/" + name).c_str());  // made too long after its time: another name
    }
    return "";
}

}  // namespace

std::string private_state_dir(const std::string& base) {
    if (base.empty()) return "";
    // Another user may have made it first (the name is predictable): used only
    // when it is a directory, not a link, ours, and no one else's to write.
    return usable_private_dir(base + "/gputopo-launch." + uid_text());
}

std::string fresh_private_dir(const std::string& base) {
    if (base.empty()) return "";
    std::string best = oldest_fresh(base), mine;
    if (best.empty()) {
        mine = make_fresh(base);
        if (mine.empty()) return "";
        best = oldest_fresh(base);
        if (best.empty() || mine < best) best = mine;
    }
    // Every directory named before `best` was made within the slack after its
    // name's time: once the settle time has passed, a scan sees all of them,
    // so every task of the step ends on the same oldest one.
    const uint64_t due = fresh_time(best) + kFreshSettleNs, now = realtime_ns();
    if (now < due) {
        const uint64_t wait = std::min(due - now, kFreshSettleNs);
        std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
        std::string again = oldest_fresh(base);
        if (!again.empty() && again < best) best = again;
    }
    if (!mine.empty() && mine != best) ::rmdir((base + "/" + mine).c_str());  // empty, and nobody's choice
    return is_own_private_dir(base + "/" + best) ? base + "/" + best : "";
}

std::vector<std::string> runtime_dirs() {
    std::vector<std::string> out;
    if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && x[0] == '/') out.push_back(x);
    const std::string run = "/run/user/" + uid_text();
    if (out.empty() || out[0] != run) out.push_back(run);
    return out;
}

std::string node_state_base(const std::string& option, const std::string& node, const std::string& tmpdir) {
    if (!option.empty()) {
        std::string out;
        for (size_t i = 0; i < option.size(); ++i) {
            if (option[i] == '%' && i + 1 < option.size() && option[i + 1] == 'n') {
                out += node;
                ++i;
            } else {
                out += option[i];
            }
        }
        return out;
    }
    if (::access("/dev/shm", W_OK) == 0) return "/dev/shm";
    return tmpdir.empty() ? "/tmp" : tmpdir;
}

void sweep_stale_claims(const std::string& dir, double stale_after_s) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    const time_t now = ::time(nullptr);
    int seen = 0;
    while (dirent* e = ::readdir(d)) {
        if (++seen > 4096) break;  // bounded: what is left goes at the next claim
        std::string name = e->d_name;
        if (name.rfind("gputopo-launch.", 0) != 0 || name.size() < 7 || name.compare(name.size() - 7, 7, ".leader") != 0)
            continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            static_cast<double>(now - st.st_mtime) > stale_after_s)
            ::unlinkat(::dirfd(d), name.c_str(), 0);
    }
    ::closedir(d);
}

void release_claim(const std::string& dir, const std::string& key) {
    if (!dir.empty()) ::unlink((dir + "/gputopo-launch." + key + ".leader").c_str());
}

std::vector<std::string> node_state_bases(const std::string& option, const std::string& node, const std::string& tmpdir) {
    std::vector<std::string> out;
    auto add = [&](const std::string& b) {
        if (!b.empty() && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    };
    if (!option.empty()) add(node_state_base(option, node, tmpdir));
    if (::access("/dev/shm", W_OK) == 0) add("/dev/shm");
    add(tmpdir);
    add("/tmp");
    return out;
}

std::string first_private_state_dir(const std::vector<std::string>& bases, std::string* note,
                                    const std::vector<std::string>& runtime) {
    std::string refused;
    for (const std::string& base : bases) {
        std::string dir = private_state_dir(base);
        if (!dir.empty()) return dir;
        refused += (refused.empty() ? "" : ", ") + base + "/gputopo-launch." + uid_text();
    }
    // Every predictable name taken (issue 33, finding 3): the user's private
    // runtime directory, else a fresh directory only this user can have made.
    for (const std::string& rt : runtime)
        if (is_own_private_dir(rt))
            if (std::string dir = usable_private_dir(rt + "/gputopo-launch"); !dir.empty()) return dir;
    for (const std::string& base : bases)
        if (std::string dir = fresh_private_dir(base); !dir.empty()) return dir;
    if (note)
        *note = "no private directory of this user (" + refused +
                ": each missing and not creatable, a link, another user's or open to others; no private runtime "
                "directory and no fresh directory could be made)";
    return "";
}

std::string node_private_dir(const std::string& option, const std::string& node, const std::string& tmpdir,
                             std::string* note) {
    return first_private_state_dir(node_state_bases(option, node, tmpdir), note);
}

bool claim_leadership(const std::string& dir, const std::string& key, double stale_after_s) {
    if (dir.empty()) return true;  // no safe place: slurmctld arbitrates
    sweep_stale_claims(dir, stale_after_s);
    std::string path = dir + "/gputopo-launch." + key + ".leader";
    for (int attempt = 0; attempt < 2; ++attempt) {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::close(fd);
            return true;
        }
        if (errno != EEXIST) return true;  // unusable dir: slurmctld arbitrates
        // A claim from long ago is another job's (job ids are reused across
        // clusters and after a controller's state is reset): take it over.
        struct stat st {};
        if (attempt == 0 && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            static_cast<double>(::time(nullptr) - st.st_mtime) > stale_after_s)
            ::unlink(path.c_str());
        else
            return false;
    }
    return false;
}

}  // namespace gputopo::launch
