#include "launcher/failure/events.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "topo/output/json_writer.hpp"

namespace gputopo::launch {

double unix_now() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

Event& Event::add(const std::string& key, const std::string& value) {
    fields_.emplace_back(key, json_quote(value));
    return *this;
}
Event& Event::add(const std::string& key, const char* value) { return add(key, std::string(value ? value : "")); }
Event& Event::add(const std::string& key, long long value) {
    fields_.emplace_back(key, std::to_string(value));
    return *this;
}
Event& Event::add(const std::string& key, double value) {
    if (!std::isfinite(value)) {
        fields_.emplace_back(key, "null");
        return *this;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", value);  // a unix time keeps its microseconds
    fields_.emplace_back(key, buf);
    return *this;
}
Event& Event::add(const std::string& key, bool value) {
    fields_.emplace_back(key, value ? "true" : "false");
    return *this;
}

std::string Event::to_json(const EventContext& ctx, double unix_time) const {
    time_t secs = static_cast<time_t>(unix_time);
    tm utc{};
    gmtime_r(&secs, &utc);
    char iso[48];
    int ms = static_cast<int>((unix_time - static_cast<double>(secs)) * 1000.0);
    if (ms < 0) ms = 0;
    if (ms > 999) ms = 999;
    std::snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
    std::string out = "{\"time\": " + json_quote(iso) + ", \"event\": " + json_quote(name_);
    out += ", \"job\": " + json_quote(ctx.job_id) + ", \"step\": " + json_quote(ctx.step_id);
    // The context's rank and node, unless the event names a rank or node of its own
    // (a step_end's failed rank): one key, one meaning, per line.
    auto own = [&](const char* key) {
        for (const auto& f : fields_)
            if (f.first == key) return true;
        return false;
    };
    out += ", \"restart\": " + std::to_string(ctx.restart);
    if (!own("rank")) out += ", \"rank\": " + std::to_string(ctx.rank);
    if (!own("node")) out += ", \"node\": " + json_quote(ctx.node);
    out += ", \"schema_version\": " + std::to_string(kJsonSchemaVersion);
    for (const auto& f : fields_) out += ", " + json_quote(f.first) + ": " + f.second;
    out += "}";
    return out;
}

EventLog::~EventLog() {
    if (fd_ >= 0) ::close(fd_);
}

static bool make_dirs(const std::string& dir) {
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
        pos = dir.find('/', pos + 1);
        partial = dir.substr(0, pos);
        if (partial.empty()) continue;
        if (::mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
    struct stat st {};
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool EventLog::open(const std::string& dir, const EventContext& ctx, std::string& error) {
    ctx_ = ctx;
    if (!make_dirs(dir)) {
        error = "--log " + dir + ": cannot create the directory (" + std::strerror(errno) + ")";
        return false;
    }
    std::string job = ctx.job_id.empty() ? "nojob" : ctx.job_id;
    // rank -1: the job-level supervisor of `gputopo run` (run/).
    path_ = dir + "/gputopo-launch." + job + "." + (ctx.rank < 0 ? std::string("job") : std::to_string(ctx.rank)) + ".jsonl";
    // Never through a link, never a FIFO or device, never another user's file: the
    // directory may be one others can write (a shared working directory).
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
    if (fd_ < 0) {
        error = "--log " + dir + ": cannot open " + path_ + " (" + std::strerror(errno) +
                (errno == ELOOP ? ": a symbolic link" : "") + ")";
        return false;
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
        error = "--log " + dir + ": " + path_ + " is not a regular file of this user's; not written";
        ::close(fd_);
        fd_ = -1;
        return false;
    }
    return true;
}

void EventLog::write(const Event& e) {
    if (fd_ < 0) return;
    std::string line = e.to_json(ctx_, unix_now()) + "\n";
    ssize_t n = ::write(fd_, line.data(), line.size());
    (void)n;
}

}  // namespace gputopo::launch
