// NIC port state from sysfs (/sys/class/infiniband/<dev>/ports/<n>/...):
// state, physical state, link layer, rate, and for RoCE ports the RoCE v2
// GID index NCCL needs (NCCL_IB_GID_INDEX). A root prefix lets tests read a
// fake sysfs tree. Choosing among the NICs (nearest, fallbacks, the node's GID
// index) is planning: topo/plan/nic_selection.hpp.
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

}  // namespace gputopo
