#include "topo/output/text_table.hpp"

#include <algorithm>

namespace gputopo {

std::string text_columns(const std::vector<std::vector<std::string>>& rows, int gap) {
    std::vector<size_t> width;
    for (const auto& row : rows)
        for (size_t c = 0; c < row.size(); ++c) {
            size_t w = row[c].empty() ? 1 : row[c].size();
            if (width.size() <= c) width.push_back(0);
            width[c] = std::max(width[c], w);
        }
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c) {
            const std::string cell = row[c].empty() ? "-" : row[c];
            line += cell;
            if (c + 1 < row.size()) line.append(width[c] - cell.size() + static_cast<size_t>(gap), ' ');
        }
        out += line;
        out += '\n';
    }
    return out;
}

}  // namespace gputopo
