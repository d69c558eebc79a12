#include "topo/core/host.hpp"

#include <unistd.h>

namespace gputopo {

std::string host_name() {
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) != 0) return "";
    return host;
}

}  // namespace gputopo
