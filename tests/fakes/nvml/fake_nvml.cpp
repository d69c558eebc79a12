// A fake libnvidia-ml.so.1 for the tests: the same exported symbols and ABI
// (topo/sources/nvml_api.hpp) as the real library, driven by a fixture file named in
// $GPUTOPO_FAKE_NVML_FIXTURE (format: tests/fixtures/nvml/README.md). It lets
// the unit tests exercise gputopo's real dlopen/dlsym path without a GPU.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/sources/nvml_api.hpp"
#include "topo/core/pci_address.hpp"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct FakeLink {
    bool up = false;
    nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    std::string remote;  // bus id, "" unknown
    unsigned long long counters[NVML_NVLINK_ERROR_COUNT] = {};
};

struct FakeGpu {
    std::string busid;  // "0000:17:00.0"
    gputopo::PciAddress pci;
    unsigned pci_id = 0x000010de;
    unsigned minor = 0;
    std::string name = "NVIDIA Fake GPU";
    std::string uuid;
    std::vector<std::string> migs;  // MIG instance UUIDs, one per slot from 0 ("mig" lines)
    unsigned long long memory = 0;
    gputopo::CpuSet cpus;
    std::map<unsigned, FakeLink> links;
    std::map<std::string, unsigned long long> values;  // ecc_unc, remap_failure, ...
    bool fabric = false;
    unsigned char cluster[GPUTOPO_NVML_GPU_FABRIC_UUID_LEN] = {};
    unsigned clique = 0;
    unsigned char fabric_state = GPUTOPO_NVML_GPU_FABRIC_STATE_COMPLETED;
    nvmlReturn_t fabric_status = NVML_SUCCESS;
    unsigned health_mask = 0;      // fabric_health_mask=
    unsigned char health_summary = 1;  // fabric_health_summary= (v3; 1 healthy)
    int fabric_version = 3;        // fabric_version=: the newest struct this driver knows (1: no V call;
                                   // 4: nvmlDeviceGetGpuFabricInfo_v4 answers too)
    std::vector<std::pair<unsigned char, unsigned>> cliques;  // fabric_cliques=TYPE:ID,... (v4)
    long num_cliques = -1;         // fabric_num_cliques=: what v4 says numCliques is (-1: the list's size)
};

struct FakeState {
    int init_count = 0;
    std::string driver = "999.99.99-fake";
    std::vector<FakeGpu> gpus;
    // function name -> (bus id or "" for every call) -> return code
    std::map<std::string, std::map<std::string, nvmlReturn_t>> errors;
    std::vector<std::string> hangs;  // functions that never return (a driver stuck in the kernel)
};

FakeState g_state;

void complain(const std::string& msg) { std::fprintf(stderr, "fake-nvml: %s\n", msg.c_str()); }

std::vector<std::string> split_words(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    bool quoted = false, any = false;
    for (char c : line) {
        if (c == '"') {
            quoted = !quoted;
            any = true;
        } else if (!quoted && (c == ' ' || c == '\t')) {
            if (any || !cur.empty()) out.push_back(cur);
            cur.clear();
            any = false;
        } else {
            cur += c;
        }
    }
    if (any || !cur.empty()) out.push_back(cur);
    return out;
}

bool parse_uuid(const std::string& text, unsigned char* out) {
    std::string hex;
    for (char c : text)
        if (c != '-') hex += c;
    if (hex.size() != 2 * GPUTOPO_NVML_GPU_FABRIC_UUID_LEN) return false;
    for (int i = 0; i < GPUTOPO_NVML_GPU_FABRIC_UUID_LEN; ++i)
        out[i] = static_cast<unsigned char>(std::stoul(hex.substr(static_cast<size_t>(2 * i), 2), nullptr, 16));
    return true;
}

nvmlIntNvLinkDeviceType_t parse_type(const std::string& t) {
    if (t == "gpu") return NVML_NVLINK_DEVICE_TYPE_GPU;
    if (t == "nvswitch" || t == "switch") return NVML_NVLINK_DEVICE_TYPE_SWITCH;
    if (t == "cpu" || t == "npu") return NVML_NVLINK_DEVICE_TYPE_IBMNPU;
    return NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
}

void apply_counters(FakeLink& l, const std::vector<std::string>& w, size_t from) {
    static const char* names[] = {"replay", "recovery", "crc_flit", "crc_data", "ecc_data"};
    for (size_t i = from; i < w.size(); ++i) {
        auto eq = w[i].find('=');
        if (eq == std::string::npos) continue;
        std::string k = w[i].substr(0, eq);
        for (int c = 0; c < NVML_NVLINK_ERROR_COUNT; ++c)
            if (k == names[c]) l.counters[c] = std::stoull(w[i].substr(eq + 1));
    }
}

bool load_fixture(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        complain("cannot read fixture " + path);
        return false;
    }
    FakeState st;
    st.init_count = g_state.init_count;
    std::string line;
    int lineno = 0;
    try {
        while (std::getline(in, line)) {
            ++lineno;
            auto hash = line.find('#');
            if (hash != std::string::npos) line.erase(hash);
            auto w = split_words(line);
            if (w.empty()) continue;
            if (w[0] == "driver" && w.size() == 2) {
                st.driver = w[1];
            } else if (w[0] == "gpu" && w.size() >= 2) {
                FakeGpu g;
                g.busid = w[1];
                g.pci = gputopo::PciAddress::parse(w[1]);
                g.minor = static_cast<unsigned>(st.gpus.size());
                char uuid[64];
                std::snprintf(uuid, sizeof uuid, "GPU-fa4e0000-0000-0000-0000-%012x", g.pci.bus);
                g.uuid = uuid;
                for (size_t i = 2; i < w.size(); ++i) {
                    auto eq = w[i].find('=');
                    if (eq == std::string::npos) throw std::runtime_error("expected key=value, got '" + w[i] + "'");
                    std::string k = w[i].substr(0, eq), v = w[i].substr(eq + 1);
                    if (k == "name") g.name = v;
                    else if (k == "uuid") g.uuid = v;
                    else if (k == "memory_gib") g.memory = std::stoull(v) << 30;
                    else if (k == "memory") g.memory = std::stoull(v);
                    else if (k == "minor") g.minor = static_cast<unsigned>(std::stoul(v));
                    else if (k == "cpus") g.cpus = gputopo::CpuSet::parse_list(v);
                    else if (k == "pci_id") g.pci_id = static_cast<unsigned>(std::stoul(v, nullptr, 16));
                    else if (k == "fabric_uuid") g.fabric = parse_uuid(v, g.cluster);
                    else if (k == "fabric_clique") g.clique = static_cast<unsigned>(std::stoul(v));
                    else if (k == "fabric_state") g.fabric_state = static_cast<unsigned char>(std::stoul(v));
                    else if (k == "fabric_status") g.fabric_status = static_cast<nvmlReturn_t>(std::stoi(v));
                    else if (k == "fabric_health_mask") g.health_mask = static_cast<unsigned>(std::stoul(v, nullptr, 0));
                    else if (k == "fabric_health_summary") g.health_summary = static_cast<unsigned char>(std::stoul(v));
                    else if (k == "fabric_version") g.fabric_version = std::stoi(v);
                    else if (k == "fabric_num_cliques") g.num_cliques = std::stol(v);
                    else if (k == "fabric_cliques") {
                        std::stringstream list(v);
                        std::string item;
                        while (std::getline(list, item, ',')) {
                            const auto colon = item.find(':');
                            if (colon == std::string::npos) throw std::runtime_error("fabric_cliques: expected TYPE:ID, got '" + item + "'");
                            g.cliques.emplace_back(static_cast<unsigned char>(std::stoul(item.substr(0, colon))),
                                                   static_cast<unsigned>(std::stoul(item.substr(colon + 1))));
                        }
                    }
                    else g.values[k] = std::stoull(v);
                }
                st.gpus.push_back(g);
            } else if ((w[0] == "link" && w.size() >= 5) || (w[0] == "links" && w.size() >= 6)) {
                // link BUS N up|down TYPE [REMOTE] [counters]
                // links BUS FIRST COUNT up|down TYPE [REMOTE] [counters]
                FakeGpu* g = nullptr;
                for (auto& x : st.gpus)
                    if (x.pci == gputopo::PciAddress::parse(w[1])) g = &x;
                if (!g) throw std::runtime_error("link for unknown gpu " + w[1]);
                bool many = w[0] == "links";
                unsigned first = static_cast<unsigned>(std::stoul(w[2]));
                unsigned count = many ? static_cast<unsigned>(std::stoul(w[3])) : 1;
                size_t k = many ? 4 : 3;
                FakeLink l;
                l.up = w[k] == "up";
                l.type = parse_type(w[k + 1]);
                size_t next = k + 2;
                if (next < w.size() && w[next].find('=') == std::string::npos) l.remote = w[next++];
                apply_counters(l, w, next);
                for (unsigned i = 0; i < count; ++i) g->links[first + i] = l;
            } else if (w[0] == "mig" && w.size() == 3) {
                // mig BUSID UUID: the next MIG slot of that GPU holds instance UUID.
                FakeGpu* g = nullptr;
                for (auto& x : st.gpus)
                    if (x.pci == gputopo::PciAddress::parse(w[1])) g = &x;
                if (!g) throw std::runtime_error("mig for unknown gpu " + w[1]);
                g->migs.push_back(w[2]);
            } else if (w[0] == "hang" && w.size() == 2) {
                st.hangs.push_back(w[1]);
            } else if (w[0] == "error" && w.size() >= 3) {
                st.errors[w[1]][w.size() >= 4 ? w[3] : ""] = static_cast<nvmlReturn_t>(std::stoi(w[2]));
            } else {
                throw std::runtime_error("unknown line");
            }
        }
    } catch (const std::exception& e) {
        complain(path + ":" + std::to_string(lineno) + ": " + e.what() + ": " + line);
        return false;
    }
    g_state = st;
    return true;
}

// A function the fixture says never returns: blocks this thread for good.
void hang_if_asked(const FakeState& st, const char* fn) {
    for (const std::string& h : st.hangs)
        if (h == fn)
            for (;;) pause();
}

// The error the fixture asks `fn` to return (for this GPU), or NVML_SUCCESS.
nvmlReturn_t injected(const char* fn, const FakeGpu* g = nullptr) {
    auto it = g_state.errors.find(fn);
    if (it == g_state.errors.end()) return NVML_SUCCESS;
    auto all = it->second.find("");
    if (all != it->second.end()) return all->second;
    if (g) {
        for (const auto& kv : it->second) {
            gputopo::PciAddress a;
            if (gputopo::PciAddress::try_parse(kv.first, a) && a == g->pci) return kv.second;
        }
    }
    return NVML_SUCCESS;
}

FakeGpu* gpu_of(nvmlDevice_t d) {
    auto* p = reinterpret_cast<FakeGpu*>(d);
    for (auto& g : g_state.gpus)
        if (&g == p) return p;
    return nullptr;
}

const FakeLink* link_of(FakeGpu* g, unsigned link) {
    auto it = g->links.find(link);
    return it == g->links.end() ? nullptr : &it->second;
}

void fill_pci(const std::string& busid, unsigned pci_id, nvmlPciInfo_t* pci) {
    std::memset(pci, 0, sizeof *pci);
    gputopo::PciAddress a;
    if (!gputopo::PciAddress::try_parse(busid, a)) {
        // Unknown remote (e.g. an NVLink switch tray): NVML's "ffffffff:ff:ff.0" style.
        std::snprintf(pci->busId, sizeof pci->busId, "%s", busid.c_str());
        return;
    }
    pci->domain = a.domain;
    pci->bus = a.bus;
    pci->device = a.device;
    pci->pciDeviceId = pci_id;
    // NVML prints the 8-digit domain form in busId, 4 digits in busIdLegacy; upper case.
    std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", a.domain, a.bus, a.device, a.function);
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", a.domain & 0xffffu, a.bus,
                  a.device, a.function);
}

nvmlReturn_t copy_string(const std::string& s, char* out, unsigned length) {
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (s.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(out, s.c_str(), s.size() + 1);
    return NVML_SUCCESS;
}

unsigned long long value(const FakeGpu* g, const char* key) {
    auto it = g->values.find(key);
    return it == g->values.end() ? 0 : it->second;
}

#define CHECK_INIT() \
    if (g_state.init_count <= 0) return NVML_ERROR_UNINITIALIZED

#define DEVICE_OR_FAIL(fn)                                  \
    CHECK_INIT();                                           \
    FakeGpu* g = gpu_of(device);                            \
    if (!g) return NVML_ERROR_INVALID_ARGUMENT;             \
    if (nvmlReturn_t e = injected(fn, g)) return e

}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    if (g_state.init_count == 0) {
        // The library may stay loaded between a caller's dlclose and dlopen:
        // every first initialisation reads the fixture named now.
        g_state = FakeState();
        const char* path = std::getenv("GPUTOPO_FAKE_NVML_FIXTURE");
        // Without the variable (a daemon's environment): LIBRARY.fixture beside this library, if there.
        std::string beside;
        if (!path || !*path) {
            Dl_info info{};
            if (dladdr(reinterpret_cast<void*>(&nvmlInit_v2), &info) && info.dli_fname) {
                beside = std::string(info.dli_fname) + ".fixture";
                if (access(beside.c_str(), R_OK) == 0) path = beside.c_str();
            }
        }
        if (!path || !*path) return NVML_ERROR_DRIVER_NOT_LOADED;
        if (!load_fixture(path)) return NVML_ERROR_UNKNOWN;
        hang_if_asked(g_state, "nvmlInit_v2");
        if (nvmlReturn_t e = injected("nvmlInit_v2")) {
            g_state = FakeState();
            return e;
        }
    }
    ++g_state.init_count;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
    CHECK_INIT();
    if (--g_state.init_count == 0) g_state = FakeState();
    return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
    switch (rc) {
        case NVML_SUCCESS: return "Success";
        case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
        case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
        case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
        case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
        case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
        case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
        case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
        default: return "Unknown Error";
    }
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
    CHECK_INIT();
    return copy_string(g_state.driver, version, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
    CHECK_INIT();
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    hang_if_asked(g_state, "nvmlDeviceGetCount_v2");
    if (nvmlReturn_t e = injected("nvmlDeviceGetCount_v2")) return e;
    *count = static_cast<unsigned>(g_state.gpus.size());
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
    CHECK_INIT();
    if (!device || index >= g_state.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t e = injected("nvmlDeviceGetHandleByIndex_v2", &g_state.gpus[index])) return e;
    *device = reinterpret_cast<nvmlDevice_t>(&g_state.gpus[index]);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
    DEVICE_OR_FAIL("nvmlDeviceGetPciInfo_v3");
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    fill_pci(g->busid, g->pci_id, pci);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
    DEVICE_OR_FAIL("nvmlDeviceGetMinorNumber");
    if (!minor) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = g->minor;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
    DEVICE_OR_FAIL("nvmlDeviceGetName");
    return copy_string(g->name, name, length);
}

// A MIG handle points at its UUID string in FakeGpu::migs.
const std::string* mig_of(nvmlDevice_t d) {
    auto* p = reinterpret_cast<const std::string*>(d);
    for (const auto& g : g_state.gpus)
        for (const auto& m : g.migs)
            if (&m == p) return p;
    return nullptr;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
    DEVICE_OR_FAIL("nvmlDeviceGetMaxMigDeviceCount");
    if (g->migs.empty()) return NVML_ERROR_NOT_SUPPORTED;
    *count = 7;  // A100/H100: up to 7 instances
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                             nvmlDevice_t* mig) {
    DEVICE_OR_FAIL("nvmlDeviceGetMigDeviceHandleByIndex");
    if (index >= g->migs.size()) return NVML_ERROR_NOT_FOUND;
    *mig = reinterpret_cast<nvmlDevice_t>(const_cast<std::string*>(&g->migs[index]));
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
    CHECK_INIT();
    if (const std::string* m = mig_of(device)) return copy_string(*m, uuid, length);
    DEVICE_OR_FAIL("nvmlDeviceGetUUID");
    return copy_string(g->uuid, uuid, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
    DEVICE_OR_FAIL("nvmlDeviceGetMemoryInfo");
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = g->memory;
    memory->free = g->memory;
    memory->used = 0;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
                                                  unsigned long* cpuSet) {
    DEVICE_OR_FAIL("nvmlDeviceGetCpuAffinity");
    if (!cpuSet || cpuSetSize == 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (g->cpus.empty()) return NVML_ERROR_NOT_SUPPORTED;
    std::memset(cpuSet, 0, cpuSetSize * sizeof(unsigned long));
    constexpr int bits = static_cast<int>(sizeof(unsigned long) * 8);
    for (int c : g->cpus.to_vector())
        if (static_cast<unsigned>(c / bits) < cpuSetSize)
            cpuSet[c / bits] |= 1UL << (c % bits);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                  nvmlEnableState_t* isActive) {
    DEVICE_OR_FAIL("nvmlDeviceGetNvLinkState");
    if (!isActive || link >= GPUTOPO_NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
    const FakeLink* l = link_of(g, link);
    if (!l) return NVML_ERROR_NOT_SUPPORTED;
    *isActive = l->up ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                             nvmlPciInfo_t* pci) {
    DEVICE_OR_FAIL("nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    const FakeLink* l = link_of(g, link);
    if (!l) return NVML_ERROR_NOT_SUPPORTED;
    if (l->remote.empty()) return NVML_ERROR_NOT_SUPPORTED;
    fill_pci(l->remote, l->type == NVML_NVLINK_DEVICE_TYPE_GPU ? g->pci_id : 0x1af110de, pci);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                             nvmlIntNvLinkDeviceType_t* type) {
    DEVICE_OR_FAIL("nvmlDeviceGetNvLinkRemoteDeviceType");
    if (!type) return NVML_ERROR_INVALID_ARGUMENT;
    const FakeLink* l = link_of(g, link);
    if (!l) return NVML_ERROR_NOT_SUPPORTED;
    *type = l->type;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                         nvmlNvLinkErrorCounter_t counter,
                                                         unsigned long long* counterValue) {
    DEVICE_OR_FAIL("nvmlDeviceGetNvLinkErrorCounter");
    if (!counterValue || static_cast<int>(counter) >= static_cast<int>(NVML_NVLINK_ERROR_COUNT)) return NVML_ERROR_INVALID_ARGUMENT;
    const FakeLink* l = link_of(g, link);
    if (!l) return NVML_ERROR_NOT_SUPPORTED;
    *counterValue = l->counters[counter];
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* info) {
    DEVICE_OR_FAIL("nvmlDeviceGetGpuFabricInfo");
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    if (!g->fabric) return NVML_ERROR_NOT_SUPPORTED;
    std::memcpy(info->clusterUuid, g->cluster, sizeof info->clusterUuid);
    info->status = g->fabric_status;
    info->cliqueId = g->clique;
    info->state = g->fabric_state;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void* arg) {
    DEVICE_OR_FAIL("nvmlDeviceGetGpuFabricInfoV");
    if (!arg) return NVML_ERROR_INVALID_ARGUMENT;
    // The real library checks the caller's struct version; so does the fake (a driver
    // that knows only v2 refuses v3: fabric_version=2).
    const unsigned version = *static_cast<unsigned*>(arg);
    if (g->fabric_version < 2) return NVML_ERROR_NOT_SUPPORTED;
    const bool v3 = version == GPUTOPO_NVML_GPU_FABRIC_INFO_V3 && g->fabric_version >= 3;
    if (!v3 && version != GPUTOPO_NVML_GPU_FABRIC_INFO_V2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!g->fabric) return NVML_ERROR_NOT_SUPPORTED;
    auto* info = static_cast<nvmlGpuFabricInfo_v2_t*>(arg);  // v3 begins as v2
    std::memcpy(info->clusterUuid, g->cluster, sizeof info->clusterUuid);
    info->status = g->fabric_status;
    info->cliqueId = g->clique;
    info->state = g->fabric_state;
    info->healthMask = g->health_mask;
    if (v3) static_cast<nvmlGpuFabricInfo_v3_t*>(arg)->healthSummary = g->health_summary;
    return NVML_SUCCESS;
}

// NVML v615+. A driver before it has no such symbol; the fake answers as if
// the call failed (FUNCTION_NOT_FOUND) unless fabric_version=4.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo_v4(nvmlDevice_t device, nvmlGpuFabricInfo_v4_t* info) {
    DEVICE_OR_FAIL("nvmlDeviceGetGpuFabricInfo_v4");
    if (!info) return NVML_ERROR_INVALID_ARGUMENT;
    if (g->fabric_version < 4) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!g->fabric) return NVML_ERROR_NOT_SUPPORTED;
    std::memcpy(info->clusterUuid, g->cluster, sizeof info->clusterUuid);
    info->status = g->fabric_status;
    size_t n = 0;
    for (const auto& [type, id] : g->cliques) {
        if (n == GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX) break;
        info->cliques[n].type = type;
        info->cliques[n].id = id;
        ++n;
    }
    info->numCliques = g->num_cliques >= 0 ? static_cast<unsigned>(g->num_cliques) : static_cast<unsigned>(n);
    info->state = g->fabric_state;
    info->healthMask = g->health_mask;
    info->healthSummary = g->health_summary;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     unsigned long long* eccCounts) {
    DEVICE_OR_FAIL("nvmlDeviceGetTotalEccErrors");
    if (!eccCounts) return NVML_ERROR_INVALID_ARGUMENT;
    if (counterType != NVML_VOLATILE_ECC) return NVML_ERROR_NOT_SUPPORTED;
    *eccCounts = value(g, errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED ? "ecc_unc" : "ecc_corr");
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                   unsigned int* pageCount, unsigned long long* addresses) {
    DEVICE_OR_FAIL("nvmlDeviceGetRetiredPages");
    if (!pageCount) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = static_cast<unsigned>(
        value(g, cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "retired_dbe" : "retired_sbe"));
    unsigned room = *pageCount;
    *pageCount = n;
    if (room < n) return NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned i = 0; i < n && addresses; ++i) addresses[i] = 0x1000ULL * (i + 1);
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t* isPending) {
    DEVICE_OR_FAIL("nvmlDeviceGetRetiredPagesPendingStatus");
    if (!isPending) return NVML_ERROR_INVALID_ARGUMENT;
    *isPending = value(g, "retired_pending") ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,
                                                   unsigned int* isPending, unsigned int* failureOccurred) {
    DEVICE_OR_FAIL("nvmlDeviceGetRemappedRows");
    if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
    *corrRows = static_cast<unsigned>(value(g, "remap_corr"));
    *uncRows = static_cast<unsigned>(value(g, "remap_unc"));
    *isPending = static_cast<unsigned>(value(g, "remap_pending"));
    *failureOccurred = static_cast<unsigned>(value(g, "remap_failure"));
    return NVML_SUCCESS;
}
