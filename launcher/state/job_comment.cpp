#include "launcher/state/job_comment.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "topo/core/strings.hpp"

namespace gputopo::launch {

namespace {

// Where each record starting with `tag` begins and ends (a record runs to the
// next white space).
std::vector<std::pair<size_t, size_t>> record_spans(const std::string& comment, const std::string& tag) {
    std::vector<std::pair<size_t, size_t>> out;
    size_t pos = 0;
    while ((pos = comment.find(tag, pos)) != std::string::npos) {
        size_t end = comment.find_first_of(" \t\r\n", pos);
        if (end == std::string::npos) end = comment.size();
        out.emplace_back(pos, end);
        pos = end;
    }
    return out;
}

// The comment without its records starting with `tag` (and the space after
// each), trailing white space removed.
std::string without_records(const std::string& comment, const std::string& tag) {
    std::string rest = comment;
    const auto spans = record_spans(comment, tag);
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        size_t end = it->second;
        if (end < rest.size() && rest[end] == ' ') ++end;
        rest.erase(it->first, end - it->first);
    }
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.pop_back();
    return rest;
}

std::string appended(const std::string& rest, const std::string& record) {
    return rest.empty() ? record : rest + " " + record;
}

// A node list as the epilog accepts it for ExcNodeList: a plain hostlist.
bool plain_hostlist(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ',' ||
               c == '[' || c == ']';
    });
}

// "backoff=S": S when it is 1 to 9 digits and > 0.
std::optional<double> backoff_of(const std::string& part) {
    const std::string v = part.substr(8);
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const double s = std::stod(v);
    return s > 0 ? std::optional<double>(s) : std::nullopt;
}

std::optional<CauseRecord> parse_cause(const std::string& token) {
    // CLASS@NODE/KEY
    std::string body = token.substr(std::string(kCauseTag).size());
    size_t at = body.find('@'), slash = body.rfind('/');
    if (at == std::string::npos || slash == std::string::npos || slash < at) return std::nullopt;
    CauseRecord r{body.substr(0, at), body.substr(at + 1, slash - at - 1), body.substr(slash + 1)};
    if (r.cls.empty() || r.key.empty()) return std::nullopt;
    return r;
}

}  // namespace

ExclusionRecord parse_exclusion_record(const std::string& comment) {
    ExclusionRecord r;
    const std::string tag = kExcludeTag;
    for (const auto& [a, b] : record_spans(comment, tag)) {
        const std::string body = comment.substr(a + tag.size(), b - a - tag.size());
        const std::string list = body.substr(0, body.find(';'));
        if (!plain_hostlist(list)) continue;
        for (const auto& n : split_nonempty(list, ','))
            if (std::find(r.nodes.begin(), r.nodes.end(), n) == r.nodes.end()) r.nodes.push_back(n);
        for (const auto& part : split_nonempty(body, ';'))
            if (part.rfind("backoff=", 0) == 0)
                if (auto s = backoff_of(part)) r.backoff_s = *s;
    }
    return r;
}

std::string merge_exclusion_record(const std::string& comment, const std::string& node, double backoff_s) {
    ExclusionRecord r = parse_exclusion_record(comment);
    if (!node.empty() && std::find(r.nodes.begin(), r.nodes.end(), node) == r.nodes.end()) r.nodes.push_back(node);
    std::string rec = kExcludeTag;
    for (size_t i = 0; i < r.nodes.size(); ++i) rec += (i ? "," : "") + r.nodes[i];
    if (backoff_s > 0) rec += ";backoff=" + std::to_string(static_cast<long long>(std::llround(std::min(backoff_s, 999999999.0))));
    return appended(without_records(comment, kExcludeTag), rec);
}

std::optional<CauseRecord> find_cause(const std::string& comment, const std::string& key) {
    for (const auto& [a, b] : record_spans(comment, kCauseTag))
        if (auto r = parse_cause(comment.substr(a, b - a)); r && r->key == key) return r;
    return std::nullopt;
}

std::string merge_cause(const std::string& comment, const CauseRecord& r) {
    if (find_cause(comment, r.key)) return comment;
    return appended(without_records(comment, kCauseTag), std::string(kCauseTag) + r.cls + "@" + r.node + "/" + r.key);
}

bool comment_asks_requeue(const std::string& comment) {
    return comment.find(kRequeueAskedRecord) != std::string::npos;
}

std::string mark_requeue_asked(const std::string& comment) {
    if (comment_asks_requeue(comment)) return comment;
    return comment.empty() ? kRequeueAskedRecord : comment + " " + kRequeueAskedRecord;
}

}  // namespace gputopo::launch
