#include "topo/fabric/island_map.hpp"

#include <algorithm>
#include <atomic>

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

constexpr int kMaxDigits = 18;
// What a name kept in the literal table costs besides its characters (hash node, string, pair).
constexpr uint64_t kLiteralOverhead = 64;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

uint64_t pow10(int n) {
    uint64_t p = 1;
    while (n-- > 0) p *= 10;
    return p;
}

// Canonical form of host `number` of a range with this prefix and width: the
// name's text before its trailing digits, the count of those digits, and their
// value. "nid0000[2-7]" host 3 and the name "nid00003" give the same form.
bool canonical(std::string_view prefix, uint64_t number, int width, std::string& key, uint64_t& value) {
    size_t p = prefix.size();
    while (p > 0 && is_digit(prefix[p - 1])) --p;
    std::string_view digits = prefix.substr(p);
    int ew = std::max(width, decimal_digits(number));
    size_t total = digits.size() + static_cast<size_t>(ew);
    if (total > static_cast<size_t>(kMaxDigits)) return false;
    uint64_t d = 0;
    for (char c : digits) d = d * 10 + static_cast<uint64_t>(c - '0');
    value = d * pow10(ew) + number;
    key.assign(prefix.substr(0, p));
    key += '\0';
    key += static_cast<char>('A' + total);
    return true;
}

std::string key_name(const std::string& key, uint64_t value) {
    size_t z = key.find('\0');
    int digits = key[z + 1] - 'A';
    std::string s = key.substr(0, z);
    std::string num = std::to_string(value);
    if (static_cast<int>(num.size()) < digits) s.append(static_cast<size_t>(digits) - num.size(), '0');
    return s + num;
}

}  // namespace

const char* island_source_name(IslandSource s) {
    switch (s) {
        case IslandSource::GputopoConf: return "gputopo.conf";
        case IslandSource::TopologyBlock: return "topology.conf block";
        case IslandSource::TopologyTree: return "topology.conf tree";
    }
    return "?";
}

size_t IslandMap::intern(const std::string& name, IslandSource source, const std::string& origin) {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    Island isl;
    isl.name = name;
    isl.source = source;
    isl.origin = origin;
    islands_.push_back(isl);
    by_name_.emplace(name, islands_.size() - 1);
    return islands_.size() - 1;
}

std::optional<size_t> IslandMap::id_of(std::string_view island_name) const {
    auto it = by_name_.find(std::string(island_name));
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
}

void IslandMap::insert(Layer& layer, uint32_t island, const HostRange& r, uint32_t origin) {
    auto literal = [&](const std::string& name) {
        auto [it, fresh] = layer.literal.emplace(name, std::make_pair(island, origin));
        if (!fresh && it->second.first != island)
            throw ParseError(origins_[origin] + ": node '" + name + "' is in island '" + islands_[island].name +
                             "' and already in island '" + islands_[it->second.first].name + "' (" +
                             origins_[it->second.second] + "); expected each node in one island per source");
    };
    if (r.single) {
        literal(r.prefix);
        return;
    }
    std::string key;
    for (int nd = decimal_digits(r.lo); nd <= decimal_digits(r.hi); ++nd) {
        uint64_t a = std::max(r.lo, nd == 1 ? 0 : pow10(nd - 1));
        uint64_t b = std::min(r.hi, pow10(nd) - 1);
        uint64_t va = 0;
        if (canonical(r.prefix, a, r.width, key, va)) {
            layer.numeric[key].push_back(Interval{va, va + (b - a), island, origin});
        } else {
            // Names too long for an interval are kept one by one: under one budget.
            const uint64_t per_name = r.prefix.size() + static_cast<uint64_t>(std::max(r.width, nd)) + kLiteralOverhead;
            const uint64_t names = b - a + 1;
            if (names > (kMaxLiteralBytes - literal_bytes_) / per_name)
                throw ParseError(origins_[origin] + ": the node range '" + r.host(r.lo) + "..." + r.host(r.hi) + "' (" +
                                 std::to_string(r.count()) + " names of more than " + std::to_string(kMaxDigits) +
                                 " digits, each kept by name) exceeds what an island map may hold (" +
                                 std::to_string(kMaxLiteralBytes >> 20) +
                                 " MiB of such names); expected node names with at most 18 digits, or shorter ranges");
            literal_bytes_ += names * per_name;
            for (uint64_t v = a;; ++v) {
                literal(r.host(v));
                if (v == b) break;
            }
        }
    }
}

void IslandMap::add(const std::string& name, const Hostlist& nodes, IslandSource source, const std::string& origin) {
    size_t id = intern(name, source, origin);
    islands_[id].nodes += nodes.count();
    origins_.push_back(origin);
    uint32_t o = static_cast<uint32_t>(origins_.size() - 1);
    Layer& layer = layers_[static_cast<int>(source)];
    for (const HostRange& r : nodes.ranges()) insert(layer, static_cast<uint32_t>(id), r, o);
    state_.sealed = false;
}

void IslandMap::seal() const {
    if (state_.sealed) return;
    for (Layer& layer : layers_) {
        for (auto& [key, list] : layer.numeric) {
            auto by_lo = [](const Interval& x, const Interval& y) { return x.lo < y.lo; };
            if (!std::is_sorted(list.begin(), list.end(), by_lo)) std::stable_sort(list.begin(), list.end(), by_lo);
            std::vector<Interval> merged;
            merged.reserve(list.size());
            for (Interval& iv : list) {
                if (!merged.empty()) {
                    Interval& last = merged.back();
                    if (iv.lo <= last.hi && iv.island != last.island)
                        throw ParseError(origins_[iv.origin] + ": node '" + key_name(key, iv.lo) + "' is in island '" +
                                         islands_[iv.island].name + "' and in island '" +
                                         islands_[last.island].name + "' (" + origins_[last.origin] +
                                         "); expected each node in one island per source");
                    if (iv.island == last.island && iv.lo <= last.hi + 1) {
                        last.hi = std::max(last.hi, iv.hi);
                        continue;
                    }
                }
                merged.push_back(iv);
            }
            merged.shrink_to_fit();
            list.swap(merged);
        }
    }
    state_.sealed = true;
    // Unique across all maps, so a cache keyed by (map, generation) never
    // mistakes a new map at a reused address for an old one.
    static std::atomic<uint64_t> counter{0};
    state_.generation = ++counter;
}

size_t IslandMap::find_key(const std::string& key, uint64_t value, bool literal, int* layer_out) const {
    seal();
    for (int l = 0; l < kIslandSourceCount; ++l) {
        const Layer& layer = layers_[l];
        if (literal) {
            auto it = layer.literal.find(key);
            if (it != layer.literal.end()) {
                if (layer_out) *layer_out = l;
                return it->second.first;
            }
            continue;
        }
        auto it = layer.numeric.find(key);
        if (it == layer.numeric.end()) continue;
        const std::vector<Interval>& list = it->second;
        auto up = std::upper_bound(list.begin(), list.end(), value,
                                   [](uint64_t v, const Interval& iv) { return v < iv.lo; });
        if (up == list.begin()) continue;
        --up;
        if (value <= up->hi) {
            if (layer_out) *layer_out = l;
            return up->island;
        }
    }
    return npos;
}

size_t IslandMap::find_range_host(const HostRange& range, uint64_t number, int* layer_out) const {
    thread_local std::string key;
    uint64_t value = 0;
    // Fast path for walking a range: the canonical key of a run of numbers
    // with the same digit count is the same, so keep it and the interval
    // lists it selects from one call to the next.
    thread_local struct {
        const IslandMap* map = nullptr;
        uint64_t generation = 0;
        std::string prefix;
        int width = -1, digits = 0;
        bool ok = false;
        uint64_t high = 0, scale = 0;  // value = high * scale + number
        const std::vector<Interval>* lists[kIslandSourceCount] = {};
    } cache;
    if (!range.single && layer_out == nullptr) {
        seal();
        int nd = decimal_digits(number);
        if (cache.map != this || cache.generation != state_.generation || cache.width != range.width ||
            cache.digits != nd || cache.prefix != range.prefix) {
            cache.map = this;
            cache.generation = state_.generation;
            cache.prefix = range.prefix;
            cache.width = range.width;
            cache.digits = nd;
            uint64_t v0 = 0;
            cache.ok = canonical(range.prefix, number, range.width, key, v0);
            if (cache.ok) {
                int ew = std::max(range.width, nd);
                cache.scale = pow10(ew);
                cache.high = (v0 - number) / cache.scale;
                for (int l = 0; l < kIslandSourceCount; ++l) {
                    auto it = layers_[l].numeric.find(key);
                    cache.lists[l] = it == layers_[l].numeric.end() ? nullptr : &it->second;
                }
            }
        }
        if (cache.ok) {
            value = cache.high * cache.scale + number;
            for (int l = 0; l < kIslandSourceCount; ++l) {
                const std::vector<Interval>* list = cache.lists[l];
                if (!list) continue;
                auto up = std::upper_bound(list->begin(), list->end(), value,
                                           [](uint64_t v, const Interval& iv) { return v < iv.lo; });
                if (up == list->begin()) continue;
                --up;
                if (value <= up->hi) return up->island;
            }
            return npos;
        }
    }
    if (range.single) {
        key = range.prefix;
        return find_key(key, 0, true, layer_out);
    }
    if (canonical(range.prefix, number, range.width, key, value)) return find_key(key, value, false, layer_out);
    key = range.host(number);
    return find_key(key, 0, true, layer_out);
}

size_t IslandMap::find(const HostRange& range, uint64_t number) const {
    return find_range_host(range, number, nullptr);
}

size_t IslandMap::find(std::string_view node) const {
    Hostlist one;
    one.push_host(node);
    const HostRange& r = one.ranges().front();
    return find_range_host(r, r.lo, nullptr);
}

std::optional<IslandSource> IslandMap::source_of(std::string_view node) const {
    Hostlist one;
    one.push_host(node);
    const HostRange& r = one.ranges().front();
    int layer = -1;
    if (find_range_host(r, r.lo, &layer) == npos) return std::nullopt;
    return static_cast<IslandSource>(layer);
}

}  // namespace gputopo
