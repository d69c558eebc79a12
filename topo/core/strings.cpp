#include "topo/core/strings.hpp"

namespace gputopo {

std::vector<std::string_view> split_field_views(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
        const size_t at = s.find(sep, start);
        out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
        if (at == std::string_view::npos) return out;
        start = at + 1;
    }
}

std::vector<std::string> split_fields(std::string_view s, char sep) {
    std::vector<std::string> out;
    for (std::string_view f : split_field_views(s, sep)) out.emplace_back(f);
    return out;
}

std::vector<std::string> split_nonempty(std::string_view s, char sep) {
    std::vector<std::string> out;
    for (auto& f : split_fields(s, sep))
        if (!f.empty()) out.push_back(std::move(f));
    return out;
}

std::string join_ints(const std::vector<int>& v, const char* sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += sep;
        out += std::to_string(v[i]);
    }
    return out;
}

std::string join_strings(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += sep;
        out += v[i];
    }
    return out;
}

std::string printable(std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
        else out += ch;
    }
    return out;
}

}  // namespace gputopo
