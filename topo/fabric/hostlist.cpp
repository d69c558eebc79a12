#include "topo/fabric/hostlist.hpp"

#include <algorithm>
#include <stdexcept>

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

constexpr int kMaxDigits = 18;  // fits uint64_t with room for arithmetic

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t'; }

[[noreturn]] void bad(std::string_view expression, const std::string& why) {
    throw ParseError("bad hostlist '" + std::string(expression) + "': " + why +
                     " (expected names and ranges like 'gpu[001-128,200],login1')");
}

void append_padded(std::string& out, uint64_t v, int width) {
    char buf[24];
    int n = 0;
    do {
        buf[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = n; i < width; ++i) out += '0';
    while (n) out += buf[--n];
}

struct Range {
    uint64_t lo, hi;
    int width;
};

// "LO" or "LO-HI" list inside one bracket group.
std::vector<Range> parse_range_list(std::string_view expression, std::string_view list) {
    std::vector<Range> out;
    size_t pos = 0;
    while (true) {
        size_t comma = list.find(',', pos);
        std::string_view item = list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        size_t dash = item.find('-');
        std::string_view a = item.substr(0, dash);
        std::string_view b = dash == std::string_view::npos ? a : item.substr(dash + 1);
        auto number = [&](std::string_view s) {
            if (s.empty()) bad(expression, "empty number in range '" + std::string(item) + "'");
            if (s.size() > kMaxDigits) bad(expression, "number '" + std::string(s) + "' has more than 18 digits");
            uint64_t v = 0;
            for (char c : s) {
                if (!is_digit(c))
                    bad(expression, "'" + std::string(item) + "' is not a number or LO-HI range");
                v = v * 10 + static_cast<uint64_t>(c - '0');
            }
            return v;
        };
        Range r{number(a), number(b), static_cast<int>(a.size())};
        if (r.lo > r.hi) bad(expression, "range '" + std::string(item) + "' runs backwards");
        if (r.hi - r.lo + 1 > Hostlist::kMaxRangeHosts)
            bad(expression, "range '" + std::string(item) + "' has more than " +
                                std::to_string(Hostlist::kMaxRangeHosts) + " hosts");
        out.push_back(r);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return out;
}

}  // namespace

int decimal_digits(uint64_t v) {
    int n = 1;
    while (v >= 10) {
        v /= 10;
        ++n;
    }
    return n;
}

std::string HostRange::host(uint64_t number) const {
    if (single) return prefix;
    std::string s = prefix;
    append_padded(s, number, width);
    return s;
}

HostName split_host_name(std::string_view name) {
    size_t end = name.size();
    size_t start = end;
    while (start > 0 && is_digit(name[start - 1])) --start;
    HostName hn;
    if (start == end || end - start > kMaxDigits) {
        hn.prefix = name;
        return hn;
    }
    hn.prefix = name.substr(0, start);
    hn.digits = static_cast<int>(end - start);
    for (size_t i = start; i < end; ++i) hn.number = hn.number * 10 + static_cast<uint64_t>(name[i] - '0');
    return hn;
}

void Hostlist::push_range(const HostRange& range) {
    if (!ranges_.empty() && !range.single) {
        HostRange& tail = ranges_.back();
        // Slurm's join rule: same prefix, contiguous numbers, and a width that
        // prints both runs the same way.
        if (!tail.single && tail.prefix == range.prefix && tail.hi + 1 == range.lo) {
            int wt = tail.width, wr = range.width;
            auto pad = [](uint64_t v, int w) { return std::max(0, w - decimal_digits(v)); };
            bool ok = true;
            if (wt != wr) {
                bool t_changes = pad(tail.lo, wt) != pad(tail.lo, wr);
                bool r_changes = pad(range.lo, wr) != pad(range.lo, wt);
                if (t_changes && r_changes) ok = false;
                else if (!t_changes) wt = wr;  // tail prints the same with the new width
            }
            // Also every host of the new run must print the same with wt.
            if (ok && pad(range.lo, wt) != pad(range.lo, range.width)) ok = false;
            if (ok) {
                tail.width = wt;
                tail.hi = range.hi;
                total_ += range.count();
                return;
            }
        }
    }
    starts_.push_back(total_);
    ranges_.push_back(range);
    total_ += range.count();
}

void Hostlist::push_host(std::string_view name) {
    HostName hn = split_host_name(name);
    HostRange r;
    if (hn.digits == 0) {
        r.prefix = std::string(name);
        r.single = true;
    } else {
        r.prefix = std::string(hn.prefix);
        r.lo = r.hi = hn.number;
        r.width = hn.digits;
    }
    push_range(r);
}

void Hostlist::push(const Hostlist& other) {
    for (const HostRange& r : other.ranges_) push_range(r);
}

Hostlist Hostlist::from_names(const std::vector<std::string>& names) {
    Hostlist hl;
    for (const std::string& n : names) hl.push_host(n);
    return hl;
}

// Memory one more range costs: the range, its start and its prefix text.
void Hostlist::check_budget(std::string_view expression, uint64_t ranges, uint64_t prefix_bytes) {
    const uint64_t per_range = sizeof(HostRange) + sizeof(uint64_t) + prefix_bytes;
    if (ranges > kMaxBytes / per_range || bytes_ + ranges * per_range > kMaxBytes)
        bad(expression, "it needs more than " + std::to_string(kMaxBytes >> 20) +
                            " MiB as ranges (earlier bracket groups multiply the ranges of the last one)");
    bytes_ += ranges * per_range;
}

Hostlist Hostlist::parse(std::string_view expression) {
    Hostlist hl;
    size_t pos = 0;
    const size_t n = expression.size();
    while (pos < n) {
        while (pos < n && is_separator(expression[pos])) ++pos;
        if (pos >= n) break;
        // One item: up to a separator outside brackets.
        size_t start = pos;
        int depth = 0;
        while (pos < n && (depth > 0 || !is_separator(expression[pos]))) {
            char c = expression[pos];
            if (c == '[') {
                if (depth) bad(expression, "'[' inside brackets in '" + std::string(expression.substr(start, pos - start + 1)) + "'");
                ++depth;
            } else if (c == ']') {
                if (!depth) bad(expression, "']' without '[' in '" + std::string(expression.substr(start, pos - start + 1)) + "'");
                --depth;
            }
            ++pos;
        }
        std::string_view item = expression.substr(start, pos - start);
        if (depth) bad(expression, "unclosed '[' in '" + std::string(item) + "'");

        size_t open = item.rfind('[');
        if (open == std::string_view::npos) {
            hl.check_budget(expression, 1, item.size());
            hl.push_host(item);
            continue;
        }
        size_t close = item.find(']', open);
        if (close + 1 != item.size())
            bad(expression, "text after the last ']' in '" + std::string(item) +
                                "' (only the last bracket group may end a name)");
        std::vector<Range> last = parse_range_list(expression, item.substr(open + 1, close - open - 1));

        // Expand the earlier bracket groups of the prefix, in order.
        std::vector<std::string> prefixes{""};
        std::string_view head = item.substr(0, open);
        size_t p = 0;
        while (p < head.size()) {
            size_t o = head.find('[', p);
            std::string_view text = head.substr(p, o == std::string_view::npos ? std::string_view::npos : o - p);
            for (std::string& s : prefixes) s += text;
            if (o == std::string_view::npos) break;
            size_t c = head.find(']', o);
            std::vector<Range> group = parse_range_list(expression, head.substr(o + 1, c - o - 1));
            uint64_t total = 0;
            for (const Range& r : group) total += r.hi - r.lo + 1;
            if (total * prefixes.size() > kMaxPrefixHosts)
                bad(expression, "'" + std::string(item) + "' expands to more than " +
                                    std::to_string(kMaxPrefixHosts) + " prefixes");
            hl.check_budget(expression, total * prefixes.size(), prefixes.back().size() + 2 * kMaxDigits);
            std::vector<std::string> next;
            next.reserve(prefixes.size() * total);
            for (const std::string& s : prefixes)
                for (const Range& r : group)
                    for (uint64_t v = r.lo;; ++v) {
                        std::string t = s;
                        append_padded(t, v, r.width);
                        next.push_back(std::move(t));
                        if (v == r.hi) break;
                    }
            prefixes.swap(next);
            p = c + 1;
        }
        hl.check_budget(expression, prefixes.size() * last.size(), prefixes.back().size());
        HostRange hr;
        for (const std::string& pre : prefixes) {
            hr.prefix = pre;
            for (const Range& r : last) {
                hr.lo = r.lo;
                hr.hi = r.hi;
                hr.width = r.width;
                hl.push_range(hr);
            }
        }
    }
    return hl;
}

std::pair<size_t, uint64_t> Hostlist::locate(uint64_t i) const {
    if (i >= total_) throw std::out_of_range("host index " + std::to_string(i) + " past the end of a hostlist of " + std::to_string(total_));
    size_t r = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) - 1;
    const HostRange& hr = ranges_[r];
    return {r, hr.single ? 0 : hr.lo + (i - starts_[r])};
}

std::string Hostlist::nth(uint64_t i) const {
    auto [r, v] = locate(i);
    return ranges_[r].host(v);
}

std::optional<uint64_t> Hostlist::index_of(std::string_view name) const {
    for (size_t r = 0; r < ranges_.size(); ++r) {
        const HostRange& hr = ranges_[r];
        if (hr.single) {
            if (hr.prefix == name) return starts_[r];
            continue;
        }
        // The name is the range's prefix and a number. Slurm: a range prefix
        // may end in digits ("nid0000[2-7]" holds "nid00003"), so the number is
        // whatever follows the prefix, however long the name's digit run is.
        if (name.size() <= hr.prefix.size() || name.compare(0, hr.prefix.size(), hr.prefix) != 0) continue;
        std::string_view digits = name.substr(hr.prefix.size());
        if (digits.size() > static_cast<size_t>(kMaxDigits) ||
            !std::all_of(digits.begin(), digits.end(), is_digit))
            continue;
        uint64_t v = 0;
        for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
        if (v < hr.lo || v > hr.hi) continue;
        if (static_cast<int>(digits.size()) != std::max(hr.width, decimal_digits(v))) continue;
        return starts_[r] + (v - hr.lo);
    }
    return std::nullopt;
}

std::string Hostlist::ranged() const {
    std::string out;
    auto within = [](const HostRange& a, const HostRange& b) {
        return !a.single && !b.single && a.prefix == b.prefix;
    };
    size_t i = 0;
    while (i < ranges_.size()) {
        if (!out.empty()) out += ',';
        const HostRange& first = ranges_[i];
        bool bracket = first.count() > 1 || (i + 1 < ranges_.size() && within(first, ranges_[i + 1]));
        out += first.prefix;
        if (first.single) {
            ++i;
            continue;
        }
        if (bracket) out += '[';
        size_t j = i;
        do {
            if (j > i) out += ',';
            const HostRange& r = ranges_[j];
            append_padded(out, r.lo, r.width);
            if (r.hi > r.lo) {
                out += '-';
                append_padded(out, r.hi, r.width);
            }
            ++j;
        } while (j < ranges_.size() && within(ranges_[j], ranges_[j - 1]));
        if (bracket) out += ']';
        i = j;
    }
    return out;
}

std::vector<std::string> Hostlist::expand() const {
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(total_));
    for_each_host([&](size_t, const HostRange& r, uint64_t v) { out.push_back(r.host(v)); });
    return out;
}

}  // namespace gputopo
