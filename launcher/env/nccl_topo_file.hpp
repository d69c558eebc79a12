// --nccl-topo-file PATH: write this node's NCCL topology XML (topo/
// nccl_topo_writer.hpp) and point NCCL_TOPO_FILE at it, for containers and
// VMs where NCCL cannot see the real PCI tree (NVIDIA/nccl#1464, #1674).
// A NCCL_TOPO_FILE the user already set is kept and nothing is written.
#pragma once

#include <optional>
#include <string>

#include "launcher/options/options.hpp"
#include "topo/core/env_var.hpp"
#include "topo/core/model.hpp"

namespace gputopo::launch {

struct NcclTopoFileOutcome {
    std::optional<EnvVar> var;  // NCCL_TOPO_FILE=path when written
    std::string note;           // what happened, for verbose / warnings
};

// `path` is the already-expanded file name. Never throws: a write failure is
// a note, and the job runs without NCCL_TOPO_FILE.
NcclTopoFileOutcome nccl_topo_file_env(const std::string& path, const Node& node, const Getenv& get);

}  // namespace gputopo::launch
