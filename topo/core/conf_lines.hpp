// Slurm-style configuration lines: "Key=Value Key=Value ...", '#' starts a
// comment, a trailing '\' continues the line, keys are case-insensitive.
// Used by the island sources (gputopo.conf, Slurm's topology.conf).
#pragma once

#include <optional>
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

// Splits TEXT (the content of FILE) into non-empty lines, each into its pairs by
// slurm_key_values. A token without '=' or with an empty key is an error naming
// the file, line and token.
std::vector<ConfLine> parse_conf_lines(std::string_view text, const std::string& file);
// Reads PATH; throws TopologyError naming the path when it cannot be read.
std::string read_text_file(const std::string& path, const char* what);

// A line's pairs as Slurm reads them (src/common/parse_config.c): "Key=Value",
// spaces allowed around '=' ("Key = Value", "Key= Value"), a value in double
// quotes may hold spaces ("Key=\"a b\"" -> a b), else it ends at a space.
// Throws ParseError (ConfLine::fail) for a word that is not Key=Value.
std::vector<std::pair<std::string, std::string>> slurm_key_values(const ConfLine& line);

// Slurm's boolean values (src/common/parse_value.c s_p_handle_boolean): yes, up,
// true, 1 -> true; no, down, false, 0 -> false (case-insensitive); nullopt otherwise.
std::optional<bool> slurm_bool(std::string_view value);

bool iequals(std::string_view a, std::string_view b);

}  // namespace gputopo
