// "Did you mean ...?" for a word that is not one of a known list (an option,
// a key, a command). Pure.
#pragma once

#include <string>
#include <vector>

namespace gputopo {

// The candidate nearest to `word`: one it abbreviates (a unique prefix), else
// the one at the smallest edit distance when that distance is at most a third
// of the word's length (at least 1, at most 3). "" when no candidate is close.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace gputopo
