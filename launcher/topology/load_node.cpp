#include "launcher/topology/load_node.hpp"

#include <exception>

#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

extern "C" int gputopo_launch_load_node(const char* path, gputopo::Node* node, std::string* error) {
    try {
        *node = (path && *path) ? gputopo::load_topology_file(path) : gputopo::discover_live();
        return 0;
    } catch (const std::exception& e) {
        if (error) *error = e.what();
    } catch (...) {
        if (error) *error = "unknown error while reading the topology";
    }
    return 1;
}
