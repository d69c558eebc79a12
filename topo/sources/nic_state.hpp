// NIC port state from sysfs (/sys/class/infiniband/<dev>/ports/<n>/...):
// state, physical state, link layer, rate, and for RoCE ports the RoCE v2
// GID index NCCL needs (NCCL_IB_GID_INDEX). A root prefix lets tests read a
// fake sysfs tree. Also: which GPUs lost their nearest NIC and what they fall
// back to (pure, on the model).
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"
#include "topo/core/pci_address.hpp"

namespace gputopo {

struct PortState {
    int number = 1;
    std::string state;        // "ACTIVE", "DOWN", "INIT", "ARMED", ... ("4: ACTIVE" -> "ACTIVE")
    std::string phys_state;   // "LinkUp", "Disabled", "Polling", ...
    std::string link_layer;   // "InfiniBand", "Ethernet"
    double rate_gbps = 0;     // "400 Gb/sec (4X NDR)" -> 400
    int roce_v2_gid_index = -1;  // Ethernet only: the chosen RoCE v2 GID, -1 none
    std::string roce_v2_gid;     // its GID text
    bool gid_table_read = false; // the GID table had readable, non-empty entries
};

struct NicState {
    std::string name;                  // RDMA device (mlx5_0)
    bool pci_known = false;
    PciAddress pci;
    std::vector<std::string> netdevs;  // from <dev>/device/net/
    std::vector<PortState> ports;
};

// Every RDMA device under ROOT/sys/class/infiniband, sorted by name. A
// missing directory gives an empty list; unreadable attributes stay unknown.
// Never throws. `root` "" means the real "/".
std::vector<NicState> read_nic_state(const std::string& root = "");

// The RoCE v2 GID index among a port's GID table entries (index, gid text,
// type text): an IPv4-mapped (::ffff:a.b.c.d) GID of type "RoCE v2" first,
// then any other non-link-local RoCE v2 GID; -1 none (link-local fe80:: GIDs
// are not routable: a port with only those has no IP address).
struct GidEntry {
    int index = -1;
    std::string gid;
    std::string type;
};
int choose_roce_v2_gid(const std::vector<GidEntry>& gids);

// The GID index for NCCL_IB_GID_INDEX from the node's usable NICs: the index
// shared by all their RoCE ports; -1 when there is none (InfiniBand) or they
// disagree (NCCL takes one value per process: then leave it to the user).
int node_roce_gid_index(const Node& node);

// A GPU whose nearest RDMA NIC(s) are down and that falls back to the next
// nearest usable one.
struct NicFallback {
    int gpu = -1;
    std::vector<std::string> lost;      // nearest NICs, all down
    std::vector<std::string> fallback;  // what it uses instead (may be empty: none left)
    std::string lost_path;              // distance class to the lost NICs ("PIX")
    std::string fallback_path;          // to the fallback NICs ("SYS"), "" if none
};
std::vector<NicFallback> nic_fallbacks(const Node& node);
// "GPU 3: nearest NIC mlx5_2 (PIX) is down; using mlx5_0 (NODE)"
std::string describe(const NicFallback& f);

}  // namespace gputopo
