// CpuSet: a set of OS processor (PU) indices, with the two text forms people
// meet: Linux cpulists ("0-3,8,10-11") and hwloc/NCCL hex masks
// ("000000ff,ffffffff": comma-separated 32-bit words, most significant first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputopo {

class CpuSet {
public:
    CpuSet() = default;

    static CpuSet range(int first, int last);  // inclusive
    // Throws gputopo::ParseError naming the text on malformed input.
    static CpuSet parse_list(const std::string& text);
    static CpuSet parse_hex_mask(const std::string& text);

    void set(int cpu);
    void clear(int cpu);
    bool test(int cpu) const;
    bool empty() const;
    int count() const;
    int first() const;  // -1 when empty
    int last() const;   // -1 when empty
    std::vector<int> to_vector() const;
    std::string to_list() const;  // "" when empty

    CpuSet operator|(const CpuSet& o) const;
    CpuSet operator&(const CpuSet& o) const;
    CpuSet operator-(const CpuSet& o) const;  // set difference
    CpuSet& operator|=(const CpuSet& o);
    CpuSet& operator&=(const CpuSet& o);
    bool operator==(const CpuSet& o) const;
    bool operator!=(const CpuSet& o) const { return !(*this == o); }
    bool intersects(const CpuSet& o) const;
    bool contains(const CpuSet& o) const;  // o is a subset of *this

private:
    void trim();
    std::vector<uint64_t> words_;
};

}  // namespace gputopo
