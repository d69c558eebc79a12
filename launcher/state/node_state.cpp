#include "launcher/state/node_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace gputopo::launch {

std::string private_state_dir(const std::string& base) {
    if (base.empty()) return "";
    std::string dir = base + "/gputopo-launch." + std::to_string(static_cast<unsigned long>(::geteuid()));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
    // Another user may have made it first (the name is predictable): use it
    // only when it is a directory, not a link, ours, and no one else's to write.
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return "";
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
    ::close(fd);
    return ok ? dir : "";
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

std::string first_private_state_dir(const std::vector<std::string>& bases, std::string* note) {
    std::string refused;
    for (const std::string& base : bases) {
        std::string dir = private_state_dir(base);
        if (!dir.empty()) return dir;
        refused += (refused.empty() ? "" : ", ") + base + "/gputopo-launch." + std::to_string(static_cast<unsigned long>(::geteuid()));
    }
    if (note)
        *note = "no private directory of this user (" + refused +
                ": each missing and not creatable, a link, another user's or open to others)";
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
