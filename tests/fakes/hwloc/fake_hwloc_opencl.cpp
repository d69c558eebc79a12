// A stand-in for libhwloc-plugins' hwloc_opencl.so (issue 20, H10): an hwloc
// discovery component named "opencl" whose discovery only appends one line to
// the file $GPUTOPO_FAKE_HWLOC_PLUGIN_MARKER. Loaded by libhwloc from
// HWLOC_PLUGINS_PATH; the tests check that gputopo's discovery never runs it,
// while hwloc's own tools (hwloc-info) do.
#include <hwloc.h>
extern "C" {  // hwloc/plugins.h has no C++ guard
#include <hwloc/plugins.h>
}

#include <cstdio>
#include <cstdlib>

namespace {

int fake_discover(struct hwloc_backend*, struct hwloc_disc_status*) {
    if (const char* m = std::getenv("GPUTOPO_FAKE_HWLOC_PLUGIN_MARKER")) {
        if (FILE* f = std::fopen(m, "a")) {
            std::fputs("opencl discovery ran\n", f);
            std::fclose(f);
        }
    }
    return 0;
}

struct hwloc_backend* fake_instantiate(struct hwloc_topology* topology, struct hwloc_disc_component* component,
                                       unsigned, const void*, const void*, const void*) {
    struct hwloc_backend* backend = hwloc_backend_alloc(topology, component);
    if (backend) backend->discover = fake_discover;
    return backend;
}

struct hwloc_disc_component fake_opencl_disc = {"opencl", HWLOC_DISC_PHASE_IO, 0, fake_instantiate, 10, 1, nullptr};

}  // namespace

extern "C" {
HWLOC_DECLSPEC extern const struct hwloc_component hwloc_opencl_component;
const struct hwloc_component hwloc_opencl_component = {HWLOC_COMPONENT_ABI, nullptr, nullptr,
                                                       HWLOC_COMPONENT_TYPE_DISC, 0, &fake_opencl_disc};
}
