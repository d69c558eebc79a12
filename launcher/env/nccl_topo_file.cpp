#include "launcher/env/nccl_topo_file.hpp"

#include <exception>

#include "topo/core/env_names.hpp"
#include "topo/output/nccl_topo_writer.hpp"

namespace gputopo::launch {

NcclTopoFileOutcome nccl_topo_file_env(const std::string& path, const Node& node, const Getenv& get) {
    NcclTopoFileOutcome out;
    if (auto user = get(env::kNcclTopoFile); user && !user->empty()) {
        out.note = std::string(env::kNcclTopoFile) + "=" + *user + " kept (set by the user); " + path + " not written";
        return out;
    }
    try {
        write_nccl_topology_file(node, path);
        out.var = EnvVar{env::kNcclTopoFile, path, true};
        out.note = "wrote NCCL topology file " + path;
    } catch (const std::exception& e) {
        out.note = std::string("warning: ") + e.what() + "; NCCL_TOPO_FILE not set";
    }
    return out;
}

}  // namespace gputopo::launch
