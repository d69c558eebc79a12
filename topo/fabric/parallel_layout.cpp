#include "topo/fabric/parallel_layout.hpp"

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

constexpr const char* kExpected =
    " (expected e.g. 'tp=8,pp=4' or 'tp=2,cp=2,ep=8,pp=2,order=tp-cp-ep-dp-pp': sizes tp, cp, ep, dp, pp; "
    "dp inferred when absent)";

[[noreturn]] void bad(std::string_view text, const std::string& why) {
    throw ParseError("bad parallel layout '" + std::string(text) + "': " + why + kExpected);
}

bool dim_of(std::string_view name, ParDim* out) {
    static const char* const names[kParDims] = {"tp", "cp", "ep", "dp", "pp"};
    for (int i = 0; i < kParDims; ++i)
        if (name == names[i]) {
            *out = static_cast<ParDim>(i);
            return true;
        }
    return false;
}

}  // namespace

const char* par_dim_name(ParDim d) {
    switch (d) {
        case ParDim::TP: return "tp";
        case ParDim::CP: return "cp";
        case ParDim::EP: return "ep";
        case ParDim::DP: return "dp";
        case ParDim::PP: return "pp";
    }
    return "?";
}

ParallelLayout ParallelLayout::parse(std::string_view text) {
    ParallelLayout l;
    if (text.empty()) bad(text, "empty");
    if (text.size() > 256) bad(text.substr(0, 64), "longer than 256 characters");
    bool seen[kParDims] = {};
    bool order_seen = false;
    std::string_view order_text;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t comma = text.find(',', pos);
        std::string_view item = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        size_t eq = item.find('=');
        if (eq == std::string_view::npos) bad(text, "'" + std::string(item) + "' is not KEY=VALUE");
        std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
        ParDim d{};
        if (key == "order") {
            if (order_seen) bad(text, "order given twice");
            order_seen = true;
            order_text = value;
        } else if (dim_of(key, &d)) {
            int i = static_cast<int>(d);
            if (seen[i]) bad(text, std::string(key) + " given twice");
            seen[i] = true;
            if (value.empty() || value.size() > 7) bad(text, std::string(key) + "='" + std::string(value) + "' is not a size from 1 to " + std::to_string(kMaxLayoutDimSize));
            uint64_t v = 0;
            for (char c : value) {
                if (c < '0' || c > '9') bad(text, std::string(key) + "='" + std::string(value) + "' is not a number");
                v = v * 10 + static_cast<uint64_t>(c - '0');
            }
            if (v == 0 || v > kMaxLayoutDimSize)
                bad(text, std::string(key) + "=" + std::string(value) + " is not a size from 1 to " +
                              std::to_string(kMaxLayoutDimSize));
            l.size_[i] = v;
            if (d == ParDim::DP) l.dp_given_ = true;
        } else {
            bad(text, "unknown key '" + std::string(key) + "' (known: tp, cp, ep, dp, pp, order)");
        }
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    if (order_seen) {
        bool in[kParDims] = {};
        int n = 0;
        size_t p = 0;
        while (p <= order_text.size()) {
            size_t dash = order_text.find('-', p);
            std::string_view name =
                order_text.substr(p, dash == std::string_view::npos ? std::string_view::npos : dash - p);
            ParDim d{};
            if (!dim_of(name, &d))
                bad(text, "order '" + std::string(order_text) + "': '" + std::string(name) +
                              "' is not tp, cp, ep, dp or pp (dimensions innermost first, joined by '-')");
            if (in[static_cast<int>(d)]) bad(text, "order '" + std::string(order_text) + "' names " + std::string(name) + " twice");
            in[static_cast<int>(d)] = true;
            l.order_[static_cast<size_t>(n++)] = d;
            if (dash == std::string_view::npos) break;
            p = dash + 1;
        }
        for (int i = 0; i < kParDims; ++i) {
            if (in[i]) continue;
            ParDim d = static_cast<ParDim>(i);
            if (l.size_[static_cast<size_t>(i)] > 1 || (d == ParDim::DP && !l.dp_given_))
                bad(text, "order '" + std::string(order_text) + "' leaves out " + par_dim_name(d) +
                              (d == ParDim::DP && !l.dp_given_ ? " (dp is inferred, so it may be larger than 1)"
                                                               : " (its size is larger than 1)"));
            l.order_[static_cast<size_t>(n++)] = d;
        }
    }
    return l;
}

void ParallelLayout::resolve(uint64_t world) {
    uint64_t inner = 1;
    for (int i = 0; i < kParDims; ++i)
        if (i != static_cast<int>(ParDim::DP)) {
            inner *= size_[static_cast<size_t>(i)];
            if (inner > kMaxLayoutWorld)
                throw PlanError("parallel layout '" + str() + "': tp*cp*ep*pp is larger than " +
                                std::to_string(kMaxLayoutWorld) + " ranks");
        }
    if (world == 0) throw PlanError("parallel layout '" + str() + "': the step has no tasks");
    if (world > kMaxLayoutWorld)
        throw PlanError("parallel layout '" + str() + "': the step's " + std::to_string(world) +
                        " tasks are more than the " + std::to_string(kMaxLayoutWorld) + " a layout is placed for");
    if (!dp_given_) {
        if (world % inner != 0)
            throw PlanError("parallel layout '" + str() + "': the step's " + std::to_string(world) +
                            " tasks are not a multiple of tp*cp*ep*pp = " + std::to_string(inner) +
                            " (expected world = tp*cp*ep*dp*pp)");
        size_[static_cast<size_t>(ParDim::DP)] = world / inner;
    } else if (inner * size_[static_cast<size_t>(ParDim::DP)] != world) {
        throw PlanError("parallel layout '" + str() + "': tp*cp*ep*dp*pp = " +
                        std::to_string(inner * size_[static_cast<size_t>(ParDim::DP)]) + " but the step has " +
                        std::to_string(world) + " tasks (expected one task per rank)");
    }
    resolved_ = true;
}

uint64_t ParallelLayout::world() const {
    uint64_t w = 1;
    for (uint64_t s : size_) w *= s;
    return w;
}

uint64_t ParallelLayout::stride(ParDim d) const {
    uint64_t s = 1;
    for (ParDim o : order_) {
        if (o == d) return s;
        s *= size_[static_cast<size_t>(o)];
    }
    return s;
}

ParCoords ParallelLayout::coords_of(uint64_t rank) const {
    ParCoords c{};
    for (ParDim o : order_) {
        uint64_t n = size_[static_cast<size_t>(o)];
        c[static_cast<size_t>(o)] = rank % n;
        rank /= n;
    }
    return c;
}

uint64_t ParallelLayout::rank_of(const ParCoords& c) const {
    uint64_t r = 0;
    for (int i = kParDims - 1; i >= 0; --i) {
        ParDim o = order_[static_cast<size_t>(i)];
        r = r * size_[static_cast<size_t>(o)] + c[static_cast<size_t>(o)];
    }
    return r;
}

std::string ParallelLayout::order_str() const {
    std::string s;
    for (ParDim o : order_) {
        if (!s.empty()) s += '-';
        s += par_dim_name(o);
    }
    return s;
}

std::string ParallelLayout::str() const {
    std::string s;
    for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) {
        if (!s.empty()) s += ',';
        s += par_dim_name(d);
        s += '=';
        s += (d == ParDim::DP && !dp_given_ && !resolved_) ? std::string("?") : std::to_string(size(d));
    }
    return s + ",order=" + order_str();
}

}  // namespace gputopo
