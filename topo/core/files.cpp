#include "topo/core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

std::optional<std::string> failed(ReadFailure* failure, int err, std::string what) {
    if (failure) {
        failure->err = err;
        failure->what = std::move(what);
    }
    return std::nullopt;
}

std::string describe_errno(int err) {
    switch (err) {
    case ENOENT: return "does not exist";
    case EISDIR: return "is a directory";
    case ELOOP: return "is a symbolic link";
    default: return std::string("cannot be read (") + std::strerror(err) + ")";
    }
}

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

}  // namespace

std::optional<std::string> read_file_bounded(const std::string& path, const ReadLimits& limits, ReadFailure* failure) {
    // O_NONBLOCK: opening a FIFO does not wait for a writer; the fstat below
    // then refuses anything that is not a regular file before any read.
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (!limits.follow_links) flags |= O_NOFOLLOW;
    Fd fd(::open(path.c_str(), flags));
    if (fd.get() < 0) return failed(failure, errno, describe_errno(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed(failure, errno, describe_errno(errno));
    if (S_ISDIR(st.st_mode)) return failed(failure, EISDIR, describe_errno(EISDIR));
    if (!S_ISREG(st.st_mode)) return failed(failure, EINVAL, "is not a regular file");
    if (limits.owned_by_me && st.st_uid != ::geteuid())
        return failed(failure, EPERM, "is owned by uid " + std::to_string(st.st_uid) + ", not by this user");
    auto too_large = [&] {
        return failed(failure, EFBIG, "is larger than " + std::to_string(limits.max_bytes) + " bytes");
    };
    if (static_cast<uint64_t>(st.st_size) > limits.max_bytes) return too_large();
    std::string text;
    text.reserve(static_cast<size_t>(st.st_size));
    char buf[65536];
    while (true) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return failed(failure, errno, describe_errno(errno));
        }
        if (n == 0) break;
        // The file may grow while it is read: the limit holds for what is read.
        if (text.size() + static_cast<size_t>(n) > limits.max_bytes) return too_large();
        text.append(buf, static_cast<size_t>(n));
    }
    return text;
}

std::string read_first_line(const std::string& path) {
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{uint64_t{1} << 16, true});
    return text ? text->substr(0, text->find('\n')) : std::string();
}

void write_file_atomically(const std::string& path, const std::string& text, unsigned mode) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    // Errors name the file the caller asked for; the temporary file follows.
    auto fail = [&](int e) {
        return TopologyError("cannot write " + path + ": " + std::strerror(e) + " (through the temporary file " + tmp + ")");
    };
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd < 0) throw fail(errno);
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            throw fail(e);
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        throw fail(e);
    }
    if (::close(fd) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        throw fail(e);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        throw fail(e);
    }
}

}  // namespace gputopo
