// The launcher's event log: one JSON object per line, one file per rank
// (DIR/gputopo-launch.<job>.<rank>.jsonl, <rank> "job" for `gputopo run`'s supervisor; each attempt of a requeued job
// appends, so the file tells why a job came back). Every line carries the
// time, job, step, restart count, rank and node.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gputopo::launch {

struct EventContext {
    std::string job_id;   // "" outside Slurm
    std::string step_id;
    int restart = 0;
    int rank = 0;
    std::string node;
};

// One event's fields, in order. Values are kept as JSON text.
class Event {
public:
    explicit Event(std::string name) : name_(std::move(name)) {}
    Event& add(const std::string& key, const std::string& value);
    Event& add(const std::string& key, const char* value);
    Event& add(const std::string& key, long long value);
    Event& add(const std::string& key, int value) { return add(key, static_cast<long long>(value)); }
    Event& add(const std::string& key, double value);
    Event& add(const std::string& key, bool value);
    const std::string& name() const { return name_; }
    // The line, without the newline. `unix_time` in seconds.
    std::string to_json(const EventContext& ctx, double unix_time) const;

private:
    std::string name_;
    std::vector<std::pair<std::string, std::string>> fields_;  // key, JSON text
};

class EventLog {
public:
    EventLog() = default;
    ~EventLog();
    EventLog(const EventLog&) = delete;
    EventLog& operator=(const EventLog&) = delete;

    // Creates DIR if needed and opens the rank's file for appending. Returns
    // false with `error` set ("--log DIR: ...") when it cannot.
    bool open(const std::string& dir, const EventContext& ctx, std::string& error);
    bool enabled() const { return fd_ >= 0; }
    const std::string& path() const { return path_; }
    const EventContext& context() const { return ctx_; }
    void set_context(const EventContext& ctx) { ctx_ = ctx; }
    // Appends one line with a single write(2); silently does nothing when not open.
    void write(const Event& e);

private:
    int fd_ = -1;
    std::string path_;
    EventContext ctx_;
};

double unix_now();

}  // namespace gputopo::launch
