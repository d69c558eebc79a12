#include "launcher/failure/root_cause.hpp"

#include <vector>

namespace gputopo::launch {

namespace {
const char* kCauseTag = "gputopo:cause=";

// Each "gputopo:cause=..." token: (start, end).
std::vector<std::pair<size_t, size_t>> cause_spans(const std::string& comment) {
    std::vector<std::pair<size_t, size_t>> out;
    size_t pos = 0;
    while ((pos = comment.find(kCauseTag, pos)) != std::string::npos) {
        size_t end = comment.find_first_of(" \t\r\n", pos);
        if (end == std::string::npos) end = comment.size();
        out.emplace_back(pos, end);
        pos = end;
    }
    return out;
}

std::optional<CauseRecord> parse_one(const std::string& token) {
    // CLASS@NODE/KEY
    std::string body = token.substr(std::string(kCauseTag).size());
    size_t at = body.find('@'), slash = body.rfind('/');
    if (at == std::string::npos || slash == std::string::npos || slash < at) return std::nullopt;
    CauseRecord r{body.substr(0, at), body.substr(at + 1, slash - at - 1), body.substr(slash + 1)};
    if (r.cls.empty() || r.key.empty()) return std::nullopt;
    return r;
}
}  // namespace

bool is_root_cause(FailureClass c) {
    return c == FailureClass::Failed || c == FailureClass::UserError || c == FailureClass::GpuFault ||
           c == FailureClass::NodeFault;
}

FailureClass failure_class_from_name(const std::string& name) {
    for (FailureClass c : {FailureClass::Success, FailureClass::UserError, FailureClass::GpuFault,
                           FailureClass::NodeFault, FailureClass::Timeout, FailureClass::Preemption,
                           FailureClass::Failed, FailureClass::PeerLost})
        if (name == failure_class_name(c)) return c;
    return FailureClass::Failed;
}

std::string cause_key(const std::string& step_id, int restart_count) {
    return (step_id.empty() ? "batch" : step_id) + "." + std::to_string(restart_count);
}

std::optional<CauseRecord> find_cause(const std::string& comment, const std::string& key) {
    for (const auto& [a, b] : cause_spans(comment))
        if (auto r = parse_one(comment.substr(a, b - a)); r && r->key == key) return r;
    return std::nullopt;
}

std::string merge_cause(const std::string& comment, const CauseRecord& r) {
    if (find_cause(comment, r.key)) return comment;
    std::string rest = comment;
    auto spans = cause_spans(comment);
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        size_t end = it->second;
        if (end < rest.size() && rest[end] == ' ') ++end;
        rest.erase(it->first, end - it->first);
    }
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.pop_back();
    std::string rec = std::string(kCauseTag) + r.cls + "@" + r.node + "/" + r.key;
    return rest.empty() ? rec : rest + " " + rec;
}

bool job_asked_requeue(const std::string& comment, bool requeue_allowed, const std::string& job_requeue_conf) {
    if (!requeue_allowed) return false;
    if (comment.find("gputopo:requeue=asked") != std::string::npos) return true;
    return job_requeue_conf == "0";
}

}  // namespace gputopo::launch
