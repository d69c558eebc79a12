// A job's parallel layout as the user states it once, for the plugin
// (--gpu-topo=island,layout=...), the launcher (--layout) and the CLI
// (gputopo ranks --layout):
//
//   tp=8,pp=4[,cp=2][,ep=8][,dp=36][,order=tp-cp-ep-dp-pp]
//
// Sizes are positive; a missing size is 1, except dp, which is inferred from
// the step's world size (world / (tp*cp*ep*pp)) when not given. The order
// lists the dimensions innermost (fastest-varying rank digit) first, as
// Megatron-LM's RankGenerator does; default tp-cp-ep-dp-pp (Megatron's and
// NeMo's default). An order may leave out dimensions of size 1; every
// dimension of size > 1 must be in it.
//
// The rank formula (Megatron's): with the order d0-d1-...-d4,
//   rank = c(d0) + n(d0) * (c(d1) + n(d1) * (c(d2) + ...))
// where c(d) is the rank's coordinate along d and n(d) its size. A group of
// dimension d is the set of ranks that differ only in c(d), in c(d) order.
//
// EP note: here ep is its own dimension (world = tp*cp*ep*dp*pp). In
// Megatron-LM, --expert-model-parallel-size carves the expert group out of the
// data-parallel ranks next to cp; with the default order that is the same
// rank formula as ep=E,dp=D/E here.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gputopo {

enum class ParDim : uint8_t { TP = 0, CP = 1, EP = 2, DP = 3, PP = 4 };
inline constexpr int kParDims = 5;
const char* par_dim_name(ParDim d);  // "tp", "cp", "ep", "dp", "pp"

// Upper bounds on what a layout may describe (user input): each size, and the
// world (ranks) a placement is computed for.
inline constexpr uint64_t kMaxLayoutDimSize = 1u << 20;
inline constexpr uint64_t kMaxLayoutWorld = 1u << 22;  // 4,194,304 ranks

using ParCoords = std::array<uint64_t, kParDims>;  // indexed by ParDim

class ParallelLayout {
public:
    // Throws ParseError naming the text and what was expected.
    static ParallelLayout parse(std::string_view text);

    uint64_t size(ParDim d) const { return size_[static_cast<int>(d)]; }
    bool dp_given() const { return dp_given_; }
    bool resolved() const { return resolved_; }
    // The order, innermost first (all five dimensions; those the text left
    // out follow in Megatron's order).
    const std::array<ParDim, kParDims>& order() const { return order_; }

    // Infers dp (when not given) for a step of `world` ranks and checks that
    // the sizes multiply to it. Throws PlanError naming the layout and world.
    void resolve(uint64_t world);
    uint64_t world() const;  // product of the sizes (after resolve())

    ParCoords coords_of(uint64_t rank) const;
    uint64_t rank_of(const ParCoords& c) const;
    uint64_t stride(ParDim d) const;  // rank distance between neighbours along d

    // "tp=8,cp=1,ep=1,dp=36,pp=4,order=tp-cp-ep-dp-pp" (dp "?" before resolve()).
    std::string str() const;
    std::string order_str() const;  // "tp-cp-ep-dp-pp"

private:
    std::array<uint64_t, kParDims> size_{1, 1, 1, 1, 1};
    std::array<ParDim, kParDims> order_{ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP};
    bool dp_given_ = false;
    bool resolved_ = false;
};

}  // namespace gputopo
