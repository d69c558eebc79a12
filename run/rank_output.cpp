#include "run/rank_output.hpp"

#include <algorithm>

#include "launcher/failure/classify.hpp"

namespace gputopo::launch::job {

namespace {
void keep_last(std::string& s, size_t bytes) {
    if (s.size() > bytes) s.erase(0, s.size() - bytes);
}
}  // namespace

int line_label(const std::string& line, int ranks, size_t& text_start) {
    size_t i = 0;
    while (i < line.size() && i < 16 && line[i] == ' ') ++i;
    const size_t d0 = i;
    long long r = 0;
    while (i < line.size() && i - d0 < 10 && line[i] >= '0' && line[i] <= '9') r = r * 10 + (line[i++] - '0');
    const size_t digits = i - d0;
    if (digits == 0 || digits > 9 || i >= line.size() || line[i] != ':') return -1;
    if (i + 1 < line.size() && line[i + 1] != ' ') return -1;  // "12:30 ..." is not a label
    if (r >= ranks) return -1;
    text_start = std::min(line.size(), i + 2);
    return static_cast<int>(r);
}

RankOutput::RankOutput(int ranks, bool strip_labels, size_t max_ranks, size_t tail_bytes)
    : ranks_(ranks), strip_(strip_labels), max_ranks_(max_ranks), tail_bytes_(tail_bytes) {}

std::string RankOutput::line_out(const std::string& line, bool err) {
    size_t start = 0;
    const int r = line_label(line, ranks_, start);
    if (r < 0) {
        if (err) {
            srun_tail_ += line;
            srun_tail_ += '\n';
            keep_last(srun_tail_, kSrunTail);
        }
        return line + "\n";
    }
    const std::string text = line.substr(start);
    if (err) {
        auto t = tails_.find(r);
        if (t == tails_.end() && tails_.size() < max_ranks_) t = tails_.emplace(r, RankText{}).first;
        if (t != tails_.end()) {
            RankText& rt = t->second;
            rt.tail += text;
            rt.tail += '\n';
            keep_last(rt.tail, tail_bytes_);
            const std::string bare = without_rank_prefix(text);
            if (bare.rfind("Traceback (most recent call last):", 0) == 0) {
                rt.in_traceback = true;
            } else if (rt.in_traceback && is_exception_line(bare)) {
                rt.exception = bare.substr(0, 300);
                rt.in_traceback = false;
            }
        }
    }
    return (strip_ ? text : line) + "\n";
}

std::string RankOutput::feed(const char* data, size_t n, bool err) {
    std::string& part = partial_[err ? 1 : 0];
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        if (data[i] == '\n') {
            out += line_out(part, err);
            part.clear();
        } else {
            part += data[i];
            if (part.size() >= kMaxLine) {  // a line without end: relayed in pieces
                out += line_out(part, err);
                part.clear();
            }
        }
    }
    return out;
}

std::string RankOutput::flush(bool err) {
    std::string& part = partial_[err ? 1 : 0];
    if (part.empty()) return "";
    std::string out = line_out(part, err);
    part.clear();
    out.pop_back();  // it had no newline
    return out;
}

std::string RankOutput::rank_tail(int rank) const {
    auto t = tails_.find(rank);
    return t == tails_.end() ? std::string() : t->second.tail;
}

std::string RankOutput::rank_exception(int rank) const {
    auto t = tails_.find(rank);
    return t == tails_.end() ? std::string() : t->second.exception;
}

std::vector<int> RankOutput::ranks_seen() const {
    std::vector<int> v;
    for (const auto& kv : tails_) v.push_back(kv.first);
    return v;
}

}  // namespace gputopo::launch::job
