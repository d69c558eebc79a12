// Left-aligned text columns for the human-readable output of the CLI, the
// plugin's verbose mode and the launcher's --dry-run.
#pragma once

#include <string>
#include <vector>

namespace gputopo {

// Each row a line; each column padded to its widest cell plus `gap` spaces.
// The last cell of a line is not padded (no trailing blanks). Empty cells
// print as "-".
std::string text_columns(const std::vector<std::vector<std::string>>& rows, int gap = 2);

}  // namespace gputopo
