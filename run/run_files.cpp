#include "run/run_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "topo/core/files.hpp"

namespace gputopo::launch::job {

std::string absolute_path(const std::string& path) {
    if (path.empty() || path[0] == '/') return path;
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd)) return path;
    std::string base = cwd;
    std::string rel = path;
    while (rel.rfind("./", 0) == 0) rel.erase(0, 2);
    return base == "/" ? "/" + rel : base + "/" + rel;
}

std::string own_directory(const std::string& dir, const std::string& option) {
    const std::string what = "state directory " + dir;
    // Parents as the user's umask allows (the path the user named); the last one 0700.
    for (size_t pos = dir.find('/', 1); pos != std::string::npos; pos = dir.find('/', pos + 1)) {
        const std::string parent = dir.substr(0, pos);
        if (::mkdir(parent.c_str(), 0777) != 0 && errno != EEXIST)
            return what + ": cannot create " + parent + " (" + std::strerror(errno) + ")";
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return what + ": cannot create it (" + std::strerror(errno) + ")";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return what + (errno == ELOOP || errno == ENOTDIR ? " is not a directory (a link or a file)"
                                                          : " cannot be opened (" + std::string(std::strerror(errno)) + ")") +
               "; remove it or give " + option;
    struct stat st {};
    const bool stat_ok = ::fstat(fd, &st) == 0;
    ::close(fd);
    if (!stat_ok) return what + " cannot be read";
    if (st.st_uid != ::geteuid())
        return what + " exists and is owned by uid " + std::to_string(st.st_uid) + " (expected yours); remove it or give " + option;
    if (st.st_mode & 022)
        return what + " can be written by others (mode " + std::to_string((st.st_mode >> 6) & 7) +
               std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + "); chmod go-w it or give " + option;
    return "";
}

std::optional<std::string> read_own_file(const std::string& path, size_t max_bytes, double* mtime) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
        static_cast<unsigned long long>(st.st_size) > max_bytes) {
        ::close(fd);
        return std::nullopt;
    }
    std::string text(max_bytes, '\0');
    size_t got = 0;
    while (got < max_bytes) {
        ssize_t n = ::read(fd, &text[got], max_bytes - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += size_t(n);
    }
    ::close(fd);
    text.resize(got);
    if (mtime) *mtime = double(st.st_mtim.tv_sec) + double(st.st_mtim.tv_nsec) * 1e-9;
    return text;
}

std::string last_checkpoint(const std::string& report) {
    auto text = read_own_file(report, 4096);
    if (!text) return "";
    std::string line = text->substr(0, text->find('\n'));
    for (char& ch : line)
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') ch = '?';  // one line, no control characters
    return line;
}

int recorded_restarts(const std::string& state_dir) {
    auto text = read_own_file(state_dir + "/restarts", 32);
    if (!text) return 0;
    long n = 0;
    size_t i = 0;
    for (; i < text->size() && i < 9 && (*text)[i] >= '0' && (*text)[i] <= '9'; ++i) n = n * 10 + ((*text)[i] - '0');
    return i == 0 ? 0 : int(n);
}

void record_restarts(const std::string& state_dir, int restarts) {
    try {
        write_file_atomically(state_dir + "/restarts", std::to_string(restarts) + "\n", 0600);
    } catch (const std::exception&) {
        // The budget then counts from the job's record and SLURM_RESTART_COUNT alone.
    }
}

}  // namespace gputopo::launch::job
