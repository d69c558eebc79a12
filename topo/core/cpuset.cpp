#include "topo/core/cpuset.hpp"

#include <cctype>

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

constexpr int kMaxCpu = 1 << 20;  // far above any real machine; bounds bad input

[[noreturn]] void bad_list(const std::string& text, const std::string& why) {
    throw ParseError("bad cpu list '" + text + "': " + why +
                     " (expected e.g. '0-3,8,10-11')");
}

int parse_uint(const std::string& text, size_t& pos, const std::string& whole) {
    if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos])))
        bad_list(whole, "expected a number at position " + std::to_string(pos + 1));
    long v = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        v = v * 10 + (text[pos] - '0');
        if (v >= kMaxCpu) bad_list(whole, "cpu number too large");
        ++pos;
    }
    return static_cast<int>(v);
}

}  // namespace

CpuSet CpuSet::range(int first, int last) {
    CpuSet s;
    for (int i = first; i <= last; ++i) s.set(i);
    return s;
}

CpuSet CpuSet::parse_list(const std::string& text) {
    CpuSet s;
    std::string t;
    for (char c : text)
        if (!std::isspace(static_cast<unsigned char>(c))) t += c;
    if (t.empty()) return s;
    size_t pos = 0;
    while (pos < t.size()) {
        int a = parse_uint(t, pos, text);
        int b = a;
        if (pos < t.size() && t[pos] == '-') {
            ++pos;
            b = parse_uint(t, pos, text);
            if (b < a) bad_list(text, "range " + std::to_string(a) + "-" + std::to_string(b) + " runs backwards");
        }
        for (int i = a; i <= b; ++i) s.set(i);
        if (pos < t.size()) {
            if (t[pos] != ',') bad_list(text, std::string("unexpected '") + t[pos] + "'");
            ++pos;
            if (pos == t.size()) bad_list(text, "trailing comma");
        }
    }
    return s;
}

CpuSet CpuSet::parse_hex_mask(const std::string& text) {
    // hwloc and NCCL write 32-bit words, comma separated, most significant
    // first ("000000ff,ffffffff"), sometimes with "0x" prefixes; a single
    // long hex string is accepted too.
    std::vector<std::string> parts(1);
    for (char c : text) {
        if (std::isspace(static_cast<unsigned char>(c))) continue;
        if (c == ',') parts.emplace_back();
        else parts.back() += c;
    }
    std::string digits;  // most significant first
    for (auto& part : parts) {
        std::string w = part;
        if (w.size() >= 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) w = w.substr(2);
        if (w.empty())
            throw ParseError("bad cpu mask '" + text + "': empty word (expected hex words like 'ffffffff,000000ff')");
        for (char c : w)
            if (!std::isxdigit(static_cast<unsigned char>(c)))
                throw ParseError("bad cpu mask '" + text + "': '" + std::string(1, c) +
                                 "' is not a hex digit (expected hex words like 'ffffffff,000000ff')");
        if (parts.size() > 1) {
            if (w.size() > 8)
                throw ParseError("bad cpu mask '" + text + "': word '" + part + "' has more than 8 hex digits");
            w = std::string(8 - w.size(), '0') + w;
        }
        digits += w;
    }
    if (digits.size() * 4 > static_cast<size_t>(kMaxCpu))
        throw ParseError("bad cpu mask '" + text + "': too long");
    CpuSet s;
    int bit = 0;
    for (size_t i = digits.size(); i-- > 0; bit += 4) {
        char c = digits[i];
        int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
        for (int b = 0; b < 4; ++b)
            if (v & (1 << b)) s.set(bit + b);
    }
    return s;
}

void CpuSet::set(int cpu) {
    if (cpu < 0) return;
    size_t w = static_cast<size_t>(cpu) / 64;
    if (words_.size() <= w) words_.resize(w + 1, 0);
    words_[w] |= (uint64_t{1} << (cpu % 64));
}

void CpuSet::clear(int cpu) {
    if (cpu < 0) return;
    size_t w = static_cast<size_t>(cpu) / 64;
    if (w < words_.size()) words_[w] &= ~(uint64_t{1} << (cpu % 64));
    trim();
}

bool CpuSet::test(int cpu) const {
    if (cpu < 0) return false;
    size_t w = static_cast<size_t>(cpu) / 64;
    return w < words_.size() && (words_[w] >> (cpu % 64)) & 1;
}

bool CpuSet::empty() const {
    for (auto w : words_)
        if (w) return false;
    return true;
}

int CpuSet::count() const {
    int n = 0;
    for (auto w : words_) n += __builtin_popcountll(w);
    return n;
}

int CpuSet::first() const {
    for (size_t i = 0; i < words_.size(); ++i)
        if (words_[i]) return static_cast<int>(i * 64) + __builtin_ctzll(words_[i]);
    return -1;
}

int CpuSet::last() const {
    for (size_t i = words_.size(); i-- > 0;)
        if (words_[i]) return static_cast<int>(i * 64) + 63 - __builtin_clzll(words_[i]);
    return -1;
}

std::vector<int> CpuSet::to_vector() const {
    std::vector<int> v;
    for (size_t i = 0; i < words_.size(); ++i) {
        uint64_t w = words_[i];
        while (w) {
            int b = __builtin_ctzll(w);
            v.push_back(static_cast<int>(i * 64) + b);
            w &= w - 1;
        }
    }
    return v;
}

std::string CpuSet::to_list() const {
    std::string out;
    auto v = to_vector();
    for (size_t i = 0; i < v.size();) {
        size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(v[i]);
        if (j > i) out += '-' + std::to_string(v[j]);
        i = j + 1;
    }
    return out;
}

CpuSet CpuSet::operator|(const CpuSet& o) const {
    CpuSet r = *this;
    r |= o;
    return r;
}

CpuSet CpuSet::operator&(const CpuSet& o) const {
    CpuSet r = *this;
    r &= o;
    return r;
}

CpuSet CpuSet::operator-(const CpuSet& o) const {
    CpuSet r = *this;
    for (size_t i = 0; i < r.words_.size() && i < o.words_.size(); ++i) r.words_[i] &= ~o.words_[i];
    r.trim();
    return r;
}

CpuSet& CpuSet::operator|=(const CpuSet& o) {
    if (words_.size() < o.words_.size()) words_.resize(o.words_.size(), 0);
    for (size_t i = 0; i < o.words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
}

CpuSet& CpuSet::operator&=(const CpuSet& o) {
    if (words_.size() > o.words_.size()) words_.resize(o.words_.size());
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= o.words_[i];
    trim();
    return *this;
}

bool CpuSet::operator==(const CpuSet& o) const {
    size_t n = words_.size() > o.words_.size() ? words_.size() : o.words_.size();
    for (size_t i = 0; i < n; ++i) {
        uint64_t a = i < words_.size() ? words_[i] : 0;
        uint64_t b = i < o.words_.size() ? o.words_[i] : 0;
        if (a != b) return false;
    }
    return true;
}

bool CpuSet::intersects(const CpuSet& o) const {
    for (size_t i = 0; i < words_.size() && i < o.words_.size(); ++i)
        if (words_[i] & o.words_[i]) return true;
    return false;
}

bool CpuSet::contains(const CpuSet& o) const { return (o - *this).empty(); }

void CpuSet::trim() {
    while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace gputopo
