#include "topo/core/suggest.hpp"

#include <algorithm>

namespace gputopo {

namespace {

// Edit distance counting a swap of two neighbouring characters as one edit
// (optimal string alignment), stopping early once it exceeds `limit`.
size_t edit_distance(const std::string& a, const std::string& b, size_t limit) {
    if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
    std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        size_t row_min = cur[0];
        for (size_t j = 1; j <= b.size(); ++j) {
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
            row_min = std::min(row_min, cur[j]);
        }
        if (row_min > limit) return limit + 1;
        before.swap(prev);
        prev.swap(cur);
    }
    return prev[b.size()];
}

std::string lower(std::string s) {
    for (char& ch : s)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return s;
}

}  // namespace

std::string nearest_word(const std::string& typed, const std::vector<std::string>& candidates) {
    if (typed.empty() || typed.size() > 200) return "";
    // Case does not count ("ISLAND" -> island, "isand" -> Island).
    const std::string word = lower(typed);
    std::string prefixed;
    int prefix_matches = 0;
    for (const auto& c : candidates)
        if (c.size() > word.size() && lower(c).compare(0, word.size(), word) == 0) {
            prefixed = c;
            ++prefix_matches;
        }
    if (prefix_matches == 1 && word.size() >= 3) return prefixed;
    const size_t limit = std::min<size_t>(3, std::max<size_t>(1, word.size() / 3));
    std::string best;
    size_t best_distance = limit + 1;
    for (const auto& c : candidates) {
        const size_t d = edit_distance(word, lower(c), limit);
        if (d < best_distance) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

}  // namespace gputopo
