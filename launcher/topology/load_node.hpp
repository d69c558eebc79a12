// The launcher's only use of the topology readers (hwloc, libxml2), kept in
// a module of its own: gputopo-launch-topology.so, loaded with dlopen only
// when a task must be bound without the plugin. The launcher itself then
// links neither hwloc nor libxml2 (nor ICU), which keeps its start cheap.
#pragma once

#include <string>

#include "topo/core/model.hpp"

extern "C" {
// Reads `path` (hwloc or NCCL XML), or discovers this machine when path is
// empty. Returns 0 and fills *node; else non-zero with the message in *error.
// Never throws.
int gputopo_launch_load_node(const char* path, gputopo::Node* node, std::string* error);
}
