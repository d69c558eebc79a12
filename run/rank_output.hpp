// What the step's ranks print, told apart by rank. `gputopo run` starts srun
// with --label, so every line a task prints comes as "  R: text" (R its global
// rank, padded by srun); srun's own lines ("srun: error: ...") have no label.
// RankOutput takes srun's stdout and stderr as they come, gives back each line
// without its label (what the user sees is what the program printed), and
// keeps, bounded, the last bytes each rank wrote to stderr and srun's own lines:
// the evidence the step's root cause is read from (step_end.hpp). Pure.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gputopo::launch::job {

class RankOutput {
public:
    // `ranks`: the step's task count (a label >= ranks is not a label).
    // Memory: at most `max_ranks` tails of `tail_bytes` each, plus srun's tail
    // and one partial line per stream (each at most kMaxLine).
    explicit RankOutput(int ranks, bool strip_labels = true, size_t max_ranks = 4096, size_t tail_bytes = 4096);

    // Feeds bytes read from srun's stdout (`err` false) or stderr (`err` true);
    // returns the complete lines among them, labels removed, to relay.
    std::string feed(const char* data, size_t n, bool err);
    // The last, unterminated line of a stream (at srun's end), relayed as it is.
    std::string flush(bool err);

    // The last bytes rank `rank` wrote to stderr; "" none.
    std::string rank_tail(int rank) const;
    // The exception line of the last Python traceback rank `rank` printed, kept
    // however much it printed after it (a framework's teardown warnings); "" none.
    std::string rank_exception(int rank) const;
    // srun's own lines (no label), the last kSrunTail bytes.
    const std::string& srun_tail() const { return srun_tail_; }
    // Every rank that wrote to stderr (those tracked: the first max_ranks).
    std::vector<int> ranks_seen() const;

    static constexpr size_t kMaxLine = 64 * 1024;
    static constexpr size_t kSrunTail = 64 * 1024;

private:
    std::string line_out(const std::string& line, bool err);

    int ranks_;
    bool strip_;
    size_t max_ranks_, tail_bytes_;
    std::string partial_[2];
    struct RankText {
        std::string tail;
        std::string exception;
        bool in_traceback = false;
    };
    std::map<int, RankText> tails_;
    std::string srun_tail_;
};

// "  12: text" -> rank 12 and where the text starts; -1 when the line has no
// label below `ranks`.
int line_label(const std::string& line, int ranks, size_t& text_start);

}  // namespace gputopo::launch::job
