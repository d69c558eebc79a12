// Slurm hostlist expressions: "gpu[001-128,200],login1", "rack[1-2]-node[01-04]".
//
// Semantics follow Slurm's src/common/hostlist.c (one-dimensional clusters):
//  - the expression is split on ',', ' ' and TAB outside brackets; empty items
//    are skipped;
//  - an item is PREFIX[RANGES]; only the LAST bracket group may close the item
//    (text after it is an error, as in Slurm); earlier groups in the prefix are
//    expanded in order ("rack[1-2]-node[01-04]" = rack1-node01..04, rack2-...);
//  - a range is LO or LO-HI in decimal; its zero-padding width is the number of
//    digits written for LO ("[001-128]" -> 001..128, "[1-100]" -> 1..100,
//    "[01-100]" -> 01..99,100);
//  - a plain name ending in digits is a one-host range (prefix, number, width =
//    digits written), so "n1,n2,n3" compresses to "n[1-3]";
//  - consecutive hosts with the same prefix and compatible padding are merged
//    as they are added (Slurm's hostlist_push); order and duplicates are kept.
// Deliberate differences from Slurm, each an error here instead of a guess:
//  an unclosed '[' (Slurm appends ']' and takes the text as one host name),
//  a name containing ']' without '['.
// Limits: at most kMaxRangeHosts hosts in one LO-HI range, at most
// kMaxPrefixHosts expansions of the earlier bracket groups of one item, at most
// kMaxBytes of ranges for one expression, numbers of at most 18 digits (longer
// digit runs in plain names make them literal; index_of still finds them
// behind a range prefix that ends in digits).
//
// The list is kept compressed: count(), nth(i) and index_of(name) work on the
// ranges, and for_each_host() walks hosts without building strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputopo {

// One run of hosts: prefix + number (zero-padded to width) for lo..hi, or a
// single literal host (single == true, prefix is the whole name).
struct HostRange {
    std::string prefix;
    uint64_t lo = 0;
    uint64_t hi = 0;
    int width = 0;
    bool single = false;

    uint64_t count() const { return single ? 1 : hi - lo + 1; }
    std::string host(uint64_t number) const;  // prefix + padded number (ignored for single)
    std::string first() const { return single ? prefix : host(lo); }
};

class Hostlist {
public:
    static constexpr uint64_t kMaxRangeHosts = 1u << 24;   // one LO-HI range
    static constexpr uint64_t kMaxPrefixHosts = 1u << 20;  // expansions of earlier bracket groups
    // What parse() may allocate for one expression, ranges and their prefixes
    // together: a short expression cannot cost more (issue 12, finding 4).
    static constexpr uint64_t kMaxBytes = uint64_t{16} << 20;

    Hostlist() = default;

    // Throws ParseError naming the expression, the bad part and what was expected.
    static Hostlist parse(std::string_view expression);
    // A list of names in the given order, compressed as Slurm would.
    static Hostlist from_names(const std::vector<std::string>& names);

    void push_host(std::string_view name);   // one name, merged like Slurm
    void push_range(const HostRange& range);  // merged with the tail when contiguous
    void push(const Hostlist& other);

    uint64_t count() const { return total_; }
    bool empty() const { return total_ == 0; }
    const std::vector<HostRange>& ranges() const { return ranges_; }

    // The i-th host (0-based), in O(log ranges). Throws std::out_of_range.
    std::string nth(uint64_t i) const;
    // Position of the range holding host i and the number within it.
    std::pair<size_t, uint64_t> locate(uint64_t i) const;
    // First position of a name, or nothing (Slurm's hostlist_find, including
    // its rule that "nid0000[2-7]" holds "nid00003"). O(ranges).
    std::optional<uint64_t> index_of(std::string_view name) const;
    bool contains(std::string_view name) const { return index_of(name).has_value(); }

    // Compressed text as Slurm writes it: "gpu[001-128,200],login1".
    std::string ranged() const;
    // Every name, in order. Materialises count() strings: avoid at scale.
    std::vector<std::string> expand() const;

    // Calls f(range_index, range, number) for every host in order without
    // building names (number is unused for single ranges).
    template <class F>
    void for_each_host(F&& f) const {
        for (size_t r = 0; r < ranges_.size(); ++r) {
            const HostRange& hr = ranges_[r];
            if (hr.single) {
                f(r, hr, uint64_t{0});
                continue;
            }
            for (uint64_t v = hr.lo;; ++v) {
                f(r, hr, v);
                if (v == hr.hi) break;
            }
        }
    }

private:
    // parse(): counts `ranges` more ranges with `prefix_bytes` of prefix each
    // against kMaxBytes; throws ParseError naming `expression` past it.
    void check_budget(std::string_view expression, uint64_t ranges, uint64_t prefix_bytes);

    uint64_t bytes_ = 0;  // parse()'s running estimate
    std::vector<HostRange> ranges_;
    std::vector<uint64_t> starts_;  // starts_[r] = hosts before range r
    uint64_t total_ = 0;
};

// A host name split as Slurm does: prefix up to the trailing digits, their
// value and how many digits were written. digits == 0: no numeric suffix
// (or one too long to be a number); the whole name is the prefix.
struct HostName {
    std::string_view prefix;
    uint64_t number = 0;
    int digits = 0;
};
HostName split_host_name(std::string_view name);

// Number of decimal digits of v (1 for 0).
int decimal_digits(uint64_t v);

}  // namespace gputopo
