// Slurm-style configuration lines: "Key=Value Key=Value ...", '#' starts a
// comment, a trailing '\' continues the line, keys are case-insensitive.
// Used by the island sources (gputopo.conf, Slurm's topology.conf).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputopo {

struct ConfLine {
    std::string file;
    int number = 0;         // 1-based line number of the line's first physical line
    std::string text;       // the line as written (continuations joined), without comment
    std::vector<std::pair<std::string, std::string>> pairs;  // keys as written

    std::string origin() const { return file + ":" + std::to_string(number); }
    // Value of a key (case-insensitive), nullptr when absent.
    const std::string* get(std::string_view key) const;
    // Throws ParseError: "FILE:LINE: 'TEXT': WHY (expected EXPECTED)".
    [[noreturn]] void fail(const std::string& why, const std::string& expected) const;
};

// Splits TEXT (the content of FILE) into non-empty lines. A token without '='
// or with an empty key is an error naming the file, line and token.
std::vector<ConfLine> parse_conf_lines(std::string_view text, const std::string& file);
// Reads PATH; throws TopologyError naming the path when it cannot be read.
std::string read_text_file(const std::string& path, const char* what);

bool iequals(std::string_view a, std::string_view b);

}  // namespace gputopo
