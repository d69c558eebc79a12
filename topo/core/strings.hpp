// Lists written as text ("0,1,2", "a;b"): splitting and joining.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gputopo {

// Every field between separators, empty ones too: "a,,b" -> {"a", "", "b"},
// "" -> {""}. For formats where an empty field means something (or is an error
// the caller names).
std::vector<std::string> split_fields(std::string_view s, char sep);

// The same fields as views into `s` (valid while `s` is): no allocation per field.
std::vector<std::string_view> split_field_views(std::string_view s, char sep);

// The non-empty fields only: "a,,b," -> {"a", "b"}, "" -> {}.
std::vector<std::string> split_nonempty(std::string_view s, char sep);

// The items with `sep` between them: {"a", "b"} -> "a,b", {} -> "".
std::string join_strings(const std::vector<std::string>& v, const char* sep = ",");
std::string join_ints(const std::vector<int>& v, const char* sep = ",");

// `s` safe to put in a log line or a message: control characters (newline,
// carriage return, escape, DEL, ...) written as \n, \r, \t or \xNN and a
// backslash as \\, so that input cannot start a forged line or move the cursor.
std::string printable(std::string_view s);

}  // namespace gputopo
