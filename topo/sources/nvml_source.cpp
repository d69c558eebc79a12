#include "topo/sources/nvml_source.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "topo/core/env_names.hpp"
#include "topo/sources/nvml_api.hpp"

namespace gputopo {

const NvmlGpuInfo* NvmlSnapshot::find(const PciAddress& pci) const {
    for (const auto& g : gpus)
        if (g.pci == pci) return &g;
    return nullptr;
}

namespace {

// The loaded library and the symbols found in it; optional symbols may be null.
// It stays loaded for the life of the process (RTLD_NODELETE): the driver's
// library may leave threads or exit handlers behind after nvmlShutdown, and
// unmapping it under them would crash the process at exit.
class NvmlLibrary {
public:
    explicit NvmlLibrary(const std::string& name) {
        handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!handle_) {
            const char* e = dlerror();
            error_ = e ? e : "dlopen failed";
        }
    }
    ~NvmlLibrary() {
        if (handle_) dlclose(handle_);
    }
    NvmlLibrary(const NvmlLibrary&) = delete;
    NvmlLibrary& operator=(const NvmlLibrary&) = delete;

    bool loaded() const { return handle_ != nullptr; }
    const std::string& error() const { return error_; }

    template <typename Fn>
    Fn get(const char* symbol) const {
        if (!handle_) return nullptr;
        void* p = dlsym(handle_, symbol);
        Fn fn = nullptr;
        static_assert(sizeof(fn) == sizeof(p), "function and data pointers differ in size");
        std::memcpy(&fn, &p, sizeof(fn));
        return fn;
    }

private:
    void* handle_ = nullptr;
    std::string error_;
};

struct Api {
    nvmlInit_v2_fn init = nullptr;
    nvmlShutdown_fn shutdown = nullptr;
    nvmlErrorString_fn error_string = nullptr;
    nvmlSystemGetDriverVersion_fn driver_version = nullptr;
    nvmlDeviceGetCount_v2_fn count = nullptr;
    nvmlDeviceGetHandleByIndex_v2_fn handle = nullptr;
    nvmlDeviceGetPciInfo_v3_fn pci = nullptr;
    nvmlDeviceGetMinorNumber_fn minor = nullptr;
    nvmlDeviceGetName_fn name = nullptr;
    nvmlDeviceGetUUID_fn uuid = nullptr;
    nvmlDeviceGetMemoryInfo_fn memory = nullptr;
    nvmlDeviceGetMaxMigDeviceCount_fn mig_count = nullptr;
    nvmlDeviceGetMigDeviceHandleByIndex_fn mig_handle = nullptr;
    nvmlDeviceGetCpuAffinity_fn cpu_affinity = nullptr;
    nvmlDeviceGetNvLinkState_fn link_state = nullptr;
    nvmlDeviceGetNvLinkRemotePciInfo_v2_fn link_remote_pci = nullptr;
    nvmlDeviceGetNvLinkRemoteDeviceType_fn link_remote_type = nullptr;
    nvmlDeviceGetNvLinkErrorCounter_fn link_errors = nullptr;
    nvmlDeviceGetGpuFabricInfo_fn fabric = nullptr;
    nvmlDeviceGetGpuFabricInfoV_fn fabric_v = nullptr;
    nvmlDeviceGetGpuFabricInfo_v4_fn fabric_v4 = nullptr;
    nvmlDeviceGetTotalEccErrors_fn ecc = nullptr;
    nvmlDeviceGetRetiredPages_fn retired = nullptr;
    nvmlDeviceGetRetiredPagesPendingStatus_fn retired_pending = nullptr;
    nvmlDeviceGetRemappedRows_fn remapped = nullptr;

    explicit Api(const NvmlLibrary& lib)
        : init(lib.get<nvmlInit_v2_fn>("nvmlInit_v2")),
          shutdown(lib.get<nvmlShutdown_fn>("nvmlShutdown")),
          error_string(lib.get<nvmlErrorString_fn>("nvmlErrorString")),
          driver_version(lib.get<nvmlSystemGetDriverVersion_fn>("nvmlSystemGetDriverVersion")),
          count(lib.get<nvmlDeviceGetCount_v2_fn>("nvmlDeviceGetCount_v2")),
          handle(lib.get<nvmlDeviceGetHandleByIndex_v2_fn>("nvmlDeviceGetHandleByIndex_v2")),
          pci(lib.get<nvmlDeviceGetPciInfo_v3_fn>("nvmlDeviceGetPciInfo_v3")),
          minor(lib.get<nvmlDeviceGetMinorNumber_fn>("nvmlDeviceGetMinorNumber")),
          name(lib.get<nvmlDeviceGetName_fn>("nvmlDeviceGetName")),
          uuid(lib.get<nvmlDeviceGetUUID_fn>("nvmlDeviceGetUUID")),
          memory(lib.get<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")),
          mig_count(lib.get<nvmlDeviceGetMaxMigDeviceCount_fn>("nvmlDeviceGetMaxMigDeviceCount")),
          mig_handle(lib.get<nvmlDeviceGetMigDeviceHandleByIndex_fn>("nvmlDeviceGetMigDeviceHandleByIndex")),
          cpu_affinity(lib.get<nvmlDeviceGetCpuAffinity_fn>("nvmlDeviceGetCpuAffinity")),
          link_state(lib.get<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState")),
          link_remote_pci(lib.get<nvmlDeviceGetNvLinkRemotePciInfo_v2_fn>("nvmlDeviceGetNvLinkRemotePciInfo_v2")),
          link_remote_type(lib.get<nvmlDeviceGetNvLinkRemoteDeviceType_fn>("nvmlDeviceGetNvLinkRemoteDeviceType")),
          link_errors(lib.get<nvmlDeviceGetNvLinkErrorCounter_fn>("nvmlDeviceGetNvLinkErrorCounter")),
          fabric(lib.get<nvmlDeviceGetGpuFabricInfo_fn>("nvmlDeviceGetGpuFabricInfo")),
          fabric_v(lib.get<nvmlDeviceGetGpuFabricInfoV_fn>("nvmlDeviceGetGpuFabricInfoV")),
          fabric_v4(lib.get<nvmlDeviceGetGpuFabricInfo_v4_fn>("nvmlDeviceGetGpuFabricInfo_v4")),
          ecc(lib.get<nvmlDeviceGetTotalEccErrors_fn>("nvmlDeviceGetTotalEccErrors")),
          retired(lib.get<nvmlDeviceGetRetiredPages_fn>("nvmlDeviceGetRetiredPages")),
          retired_pending(lib.get<nvmlDeviceGetRetiredPagesPendingStatus_fn>("nvmlDeviceGetRetiredPagesPendingStatus")),
          remapped(lib.get<nvmlDeviceGetRemappedRows_fn>("nvmlDeviceGetRemappedRows")) {}

    std::string describe(nvmlReturn_t rc) const {
        std::string text;
        if (error_string)
            if (const char* s = error_string(rc)) text = s;
        if (text.empty()) text = "NVML error";
        return text + " (" + std::to_string(static_cast<int>(rc)) + ")";
    }
};

// Bus id from NVML's PCI info: the numeric fields are authoritative; the
// text form is the fallback (some fakes and old drivers leave numbers 0).
bool pci_address_of(const nvmlPciInfo_t& info, PciAddress& out) {
    char text[GPUTOPO_NVML_PCI_BUS_ID_BUFFER_SIZE + 1];
    std::memcpy(text, info.busId, GPUTOPO_NVML_PCI_BUS_ID_BUFFER_SIZE);
    text[GPUTOPO_NVML_PCI_BUS_ID_BUFFER_SIZE] = '\0';
    if (PciAddress::try_parse(text, out)) return true;
    char legacy[GPUTOPO_NVML_PCI_BUS_ID_LEGACY_SIZE + 1];
    std::memcpy(legacy, info.busIdLegacy, GPUTOPO_NVML_PCI_BUS_ID_LEGACY_SIZE);
    legacy[GPUTOPO_NVML_PCI_BUS_ID_LEGACY_SIZE] = '\0';
    return PciAddress::try_parse(legacy, out);
}

std::string format_uuid(const unsigned char* b) {
    bool zero = true;
    for (int i = 0; i < GPUTOPO_NVML_GPU_FABRIC_UUID_LEN; ++i)
        if (b[i]) zero = false;
    if (zero) return "";
    std::string s;
    char hex[3];
    for (int i = 0; i < GPUTOPO_NVML_GPU_FABRIC_UUID_LEN; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        std::snprintf(hex, sizeof hex, "%02x", b[i]);
        s += hex;
    }
    return s;
}

std::string fixed_string(const char* buf, size_t size) {
    size_t n = 0;
    while (n < size && buf[n]) ++n;
    return std::string(buf, n);
}

// Calls `query` with a counter to fill; -1 when it fails.
template <typename Query>
int64_t counter_or_unknown(Query query) {
    unsigned long long v = 0;
    return query(&v) == NVML_SUCCESS ? static_cast<int64_t>(v) : -1;
}

void read_links(const Api& api, nvmlDevice_t dev, NvmlGpuInfo& g) {
    if (!api.link_state) return;
    for (unsigned l = 0; l < GPUTOPO_NVML_NVLINK_MAX_LINKS; ++l) {
        nvmlEnableState_t st = NVML_FEATURE_DISABLED;
        nvmlReturn_t rc = api.link_state(dev, l, &st);
        if (rc != NVML_SUCCESS) continue;  // no such link on this GPU
        NvmlLinkInfo li;
        li.link = static_cast<int>(l);
        li.active = st == NVML_FEATURE_ENABLED;
        if (api.link_remote_pci) {
            nvmlPciInfo_t rp;
            std::memset(&rp, 0, sizeof rp);
            if (api.link_remote_pci(dev, l, &rp) == NVML_SUCCESS)
                li.remote_pci_known = pci_address_of(rp, li.remote_pci);
        }
        if (api.link_remote_type) {
            nvmlIntNvLinkDeviceType_t t = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
            if (api.link_remote_type(dev, l, &t) == NVML_SUCCESS) {
                switch (t) {
                    case NVML_NVLINK_DEVICE_TYPE_GPU: li.remote = NvlinkRemote::Gpu; break;
                    case NVML_NVLINK_DEVICE_TYPE_SWITCH: li.remote = NvlinkRemote::Switch; break;
                    case NVML_NVLINK_DEVICE_TYPE_IBMNPU: li.remote = NvlinkRemote::Cpu; break;
                    default: li.remote = NvlinkRemote::Unknown; break;
                }
            }
        }
        if (api.link_errors) {
            auto counter = [&](nvmlNvLinkErrorCounter_t c) {
                return counter_or_unknown([&](unsigned long long* v) { return api.link_errors(dev, l, c, v); });
            };
            li.replay_errors = counter(NVML_NVLINK_ERROR_DL_REPLAY);
            li.recovery_errors = counter(NVML_NVLINK_ERROR_DL_RECOVERY);
            li.crc_flit_errors = counter(NVML_NVLINK_ERROR_DL_CRC_FLIT);
            li.crc_data_errors = counter(NVML_NVLINK_ERROR_DL_CRC_DATA);
        }
        g.links.push_back(li);
    }
}

// The health fields each version has, into `g` (v1: none; v2: the mask; v3, v4: the
// mask and the summary).
void take_health(const nvmlGpuFabricInfo_t&, NvmlGpuInfo&) {}
void take_health(const nvmlGpuFabricInfo_v2_t& info, NvmlGpuInfo& g) { g.fabric_health_mask = info.healthMask; }
template <typename Info>
void take_health(const Info& info, NvmlGpuInfo& g) {
    g.fabric_health_mask = info.healthMask;
    g.fabric_health_summary = info.healthSummary;
}

// The fields every version has, then its health fields, into `g`.
template <typename Info>
void take_fabric(const Info& info, int version, NvmlGpuInfo& g) {
    g.fabric_version = version;
    g.fabric_state = info.state;
    g.fabric_status = static_cast<int>(info.status);
    if (info.state == GPUTOPO_NVML_GPU_FABRIC_STATE_COMPLETED && info.status == NVML_SUCCESS)
        g.fabric_cluster_uuid = format_uuid(info.clusterUuid);
    take_health(info, g);
}

// One versioned nvmlDeviceGetGpuFabricInfoV call (v2 or v3); false when the
// driver refuses that version (an older one answers ARGUMENT_VERSION_MISMATCH).
template <typename Info>
bool read_fabric_versioned(const Api& api, nvmlDevice_t dev, unsigned int version_word, int version, NvmlGpuInfo& g) {
    Info info;
    std::memset(&info, 0, sizeof info);
    info.version = version_word;
    if (api.fabric_v(dev, &info) != NVML_SUCCESS) return false;
    take_fabric(info, version, g);
    if (!g.fabric_cluster_uuid.empty()) g.fabric_clique = static_cast<int>(info.cliqueId);
    return true;
}

// The legacy clique id (what keys the island): nvmlDeviceGetGpuFabricInfoV
// with v3, else v2, else the unversioned call.
void read_fabric_legacy(const Api& api, nvmlDevice_t dev, NvmlGpuInfo& g) {
    if (api.fabric_v && (read_fabric_versioned<nvmlGpuFabricInfo_v3_t>(api, dev, GPUTOPO_NVML_GPU_FABRIC_INFO_V3, 3, g) ||
                         read_fabric_versioned<nvmlGpuFabricInfo_v2_t>(api, dev, GPUTOPO_NVML_GPU_FABRIC_INFO_V2, 2, g)))
        return;
    if (api.fabric) {
        nvmlGpuFabricInfo_t info;
        std::memset(&info, 0, sizeof info);
        if (api.fabric(dev, &info) == NVML_SUCCESS) {
            take_fabric(info, 1, g);
            if (!g.fabric_cluster_uuid.empty()) g.fabric_clique = static_cast<int>(info.cliqueId);
        }
    }
}

// v4 (NVML v615+): every clique, on top of what the legacy call gave; its
// state, status, UUID and health are the newest. numCliques is capped at the
// array's 64 entries (a driver that says more is named in the GPU's errors).
void read_fabric_v4(const Api& api, nvmlDevice_t dev, NvmlGpuInfo& g) {
    nvmlGpuFabricInfo_v4_t info;
    std::memset(&info, 0, sizeof info);
    if (api.fabric_v4(dev, &info) != NVML_SUCCESS) return;
    take_fabric(info, 4, g);
    unsigned n = info.numCliques;
    if (n > GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX) {
        g.errors.push_back("nvmlDeviceGetGpuFabricInfo_v4: numCliques " + std::to_string(n) + " (expected at most " +
                           std::to_string(GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX) + "); the first " +
                           std::to_string(GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX) + " are kept");
        n = GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX;
    }
    g.fabric_cliques.clear();
    if (g.fabric_cluster_uuid.empty()) {
        g.fabric_clique = -1;  // not registered (yet): no clique counts
        return;
    }
    for (unsigned i = 0; i < n; ++i) g.fabric_cliques.emplace_back(info.cliques[i].type, info.cliques[i].id);
}

void read_fabric(const Api& api, nvmlDevice_t dev, NvmlGpuInfo& g) {
    read_fabric_legacy(api, dev, g);
    if (api.fabric_v4) read_fabric_v4(api, dev, g);
}

void read_health(const Api& api, nvmlDevice_t dev, NvmlGpuInfo& g) {
    NvmlHealth& h = g.health;
    if (api.ecc) {
        h.ecc_uncorrected_volatile = counter_or_unknown([&](unsigned long long* v) {
            return api.ecc(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, v);
        });
        h.ecc_corrected_volatile = counter_or_unknown([&](unsigned long long* v) {
            return api.ecc(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, v);
        });
    }
    if (api.retired) {
        // A null address buffer with count 0 asks for the count only.
        unsigned int n = 0;
        nvmlReturn_t rc = api.retired(dev, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &n, nullptr);
        if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) h.retired_pages_sbe = n;
        n = 0;
        rc = api.retired(dev, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &n, nullptr);
        if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) h.retired_pages_dbe = n;
    }
    if (api.retired_pending) {
        nvmlEnableState_t p = NVML_FEATURE_DISABLED;
        if (api.retired_pending(dev, &p) == NVML_SUCCESS) h.retired_pages_pending = p == NVML_FEATURE_ENABLED ? 1 : 0;
    }
    if (api.remapped) {
        unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
        if (api.remapped(dev, &corr, &unc, &pending, &failure) == NVML_SUCCESS) {
            h.remapped_rows_correctable = corr;
            h.remapped_rows_uncorrectable = unc;
            h.remap_pending = pending ? 1 : 0;
            h.remap_failure = failure ? 1 : 0;
        }
    }
}

constexpr unsigned kAffinityWords = 128;  // 8192 CPUs

// The UUIDs of the GPU's MIG instances: slots 0..max-1 that hold one (an
// empty slot answers NVML_ERROR_NOT_FOUND). MIG off or unsupported: none.
void read_mig(const Api& api, nvmlDevice_t dev, NvmlGpuInfo& g) {
    if (!api.mig_count || !api.mig_handle || !api.uuid) return;
    unsigned max = 0;
    if (api.mig_count(dev, &max) != NVML_SUCCESS) return;
    const unsigned kMaxSlots = 64;  // A100/H100: 7; bounded whatever the driver says
    for (unsigned i = 0; i < std::min(max, kMaxSlots); ++i) {
        nvmlDevice_t mig = nullptr;
        if (api.mig_handle(dev, i, &mig) != NVML_SUCCESS) continue;
        char buf[GPUTOPO_NVML_DEVICE_UUID_BUFFER_SIZE] = {};
        if (api.uuid(mig, buf, sizeof buf) == NVML_SUCCESS) g.mig_uuids.push_back(fixed_string(buf, sizeof buf));
    }
}

void read_device(const Api& api, unsigned index, NvmlSnapshot& snap) {
    nvmlDevice_t dev = nullptr;
    nvmlReturn_t rc = api.handle(index, &dev);
    if (rc != NVML_SUCCESS) {
        snap.warnings.push_back("NVML device " + std::to_string(index) + ": no handle: " + api.describe(rc));
        return;
    }
    NvmlGpuInfo g;
    g.nvml_index = index;
    nvmlPciInfo_t pci;
    std::memset(&pci, 0, sizeof pci);
    rc = api.pci(dev, &pci);
    if (rc != NVML_SUCCESS || !pci_address_of(pci, g.pci)) {
        snap.warnings.push_back("NVML device " + std::to_string(index) + ": no PCI bus id" +
                                (rc != NVML_SUCCESS ? ": " + api.describe(rc) : std::string()));
        return;
    }
    g.pci_vendor_id = pci.pciDeviceId & 0xffffu;
    g.pci_device_id = pci.pciDeviceId >> 16;
    if (api.minor) {
        unsigned m = 0;
        if (api.minor(dev, &m) == NVML_SUCCESS) g.minor = static_cast<int>(m);
    }
    if (api.name) {
        char buf[GPUTOPO_NVML_DEVICE_NAME_BUFFER_SIZE] = {};
        if (api.name(dev, buf, sizeof buf) == NVML_SUCCESS) g.name = fixed_string(buf, sizeof buf);
    }
    if (api.uuid) {
        char buf[GPUTOPO_NVML_DEVICE_UUID_BUFFER_SIZE] = {};
        if (api.uuid(dev, buf, sizeof buf) == NVML_SUCCESS) g.uuid = fixed_string(buf, sizeof buf);
    }
    if (api.memory) {
        nvmlMemory_t mem;
        std::memset(&mem, 0, sizeof mem);
        rc = api.memory(dev, &mem);
        if (rc == NVML_SUCCESS)
            g.memory_bytes = mem.total;
        else if (rc == NVML_ERROR_GPU_IS_LOST)
            g.errors.push_back("GPU is lost: " + api.describe(rc));
    }
    if (api.cpu_affinity) {
        unsigned long words[kAffinityWords] = {};
        if (api.cpu_affinity(dev, kAffinityWords, words) == NVML_SUCCESS) {
            constexpr int bits = static_cast<int>(sizeof(unsigned long) * 8);
            for (unsigned w = 0; w < kAffinityWords; ++w)
                for (int b = 0; b < bits; ++b)
                    if (words[w] & (1UL << b)) g.cpus.set(static_cast<int>(w) * bits + b);
        }
    }
    read_mig(api, dev, g);
    read_links(api, dev, g);
    read_fabric(api, dev, g);
    read_health(api, dev, g);
    snap.gpus.push_back(std::move(g));
}

NvmlSnapshot read_nvml_impl(const std::string& requested) {
    NvmlSnapshot snap;
    const std::string lib = requested.empty() ? "libnvidia-ml.so.1" : requested;
    snap.library = lib;
    NvmlLibrary library(lib);
    if (!library.loaded()) {
        snap.reason = "cannot load " + lib + ": " + library.error();
        return snap;
    }
    Api api(library);
    if (!api.init || !api.shutdown || !api.count || !api.handle || !api.pci) {
        snap.reason = lib + " lacks the NVML functions gputopo needs (nvmlInit_v2, nvmlDeviceGetCount_v2, "
                            "nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3): driver too old?";
        return snap;
    }
    nvmlReturn_t rc = api.init();
    if (rc != NVML_SUCCESS) {
        snap.reason = "nvmlInit failed: " + api.describe(rc);
        return snap;
    }
    if (api.driver_version) {
        char buf[GPUTOPO_NVML_DRIVER_VERSION_BUFFER_SIZE] = {};
        if (api.driver_version(buf, sizeof buf) == NVML_SUCCESS) snap.driver_version = fixed_string(buf, sizeof buf);
    }
    unsigned count = 0;
    rc = api.count(&count);
    if (rc != NVML_SUCCESS) {
        snap.reason = "nvmlDeviceGetCount failed: " + api.describe(rc);
    } else if (count == 0) {
        snap.reason = "NVML sees no GPU";
    } else {
        for (unsigned i = 0; i < count; ++i) read_device(api, i, snap);
        snap.available = !snap.gpus.empty();
        if (!snap.available) snap.reason = "NVML could not read any of its " + std::to_string(count) + " GPUs";
    }
    api.shutdown();
    return snap;
}

}  // namespace

double nvml_timeout_from_environment() {
    const char* env = secure_getenv(kNvmlTimeoutEnv);
    if (!env || !*env) return kDefaultNvmlTimeoutS;
    char* end = nullptr;
    double v = std::strtod(env, &end);
    return end && *end == '\0' && v > 0 && v <= kMaxNvmlTimeoutS ? v : kDefaultNvmlTimeoutS;
}

std::string nvml_library_from_environment() {
    const char* env = secure_getenv(kNvmlLibraryEnv);
    return env ? env : "";
}

namespace {

NvmlSnapshot read_nvml_guarded(const std::string& library) {
    try {
        return read_nvml_impl(library);
    } catch (const std::exception& e) {
        NvmlSnapshot snap;
        snap.reason = std::string("NVML read failed: ") + e.what();
        return snap;
    } catch (...) {
        NvmlSnapshot snap;
        snap.reason = "NVML read failed";
        return snap;
    }
}

// One NVML read in flight, shared by the caller and the thread doing it.
struct NvmlCall {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    NvmlSnapshot snap;
};

std::mutex g_hung_mutex;
std::string g_hung;  // set once NVML did not answer: why, for every later call

}  // namespace

NvmlSnapshot read_nvml(const std::string& library, double timeout_s) {
    const std::string lib = library.empty() ? "libnvidia-ml.so.1" : library;
    {
        std::lock_guard<std::mutex> lock(g_hung_mutex);
        if (!g_hung.empty()) {
            NvmlSnapshot snap;
            snap.library = lib;
            snap.reason = g_hung;
            snap.timed_out = true;
            return snap;
        }
    }
    if (!(timeout_s > 0)) timeout_s = kDefaultNvmlTimeoutS;
    timeout_s = std::min(timeout_s, kMaxNvmlTimeoutS);
    auto call = std::make_shared<NvmlCall>();
    // The reader thread blocks every signal: a detached thread that is still
    // alive (a hung driver, or one still exiting on a loaded node) must never
    // take a process-directed signal meant for the caller (the launcher waits
    // for SIGCHLD and SIGTERM on a signalfd; slurmstepd has its own handlers).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
        std::thread([call, library] {
            NvmlSnapshot snap = read_nvml_guarded(library);
            std::lock_guard<std::mutex> lock(call->m);
            call->snap = std::move(snap);
            call->done = true;
            call->cv.notify_all();
        }).detach();
    } catch (const std::exception& e) {
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        NvmlSnapshot snap;
        snap.library = lib;
        snap.reason = std::string("cannot start the NVML reader thread: ") + e.what();
        return snap;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    std::unique_lock<std::mutex> lock(call->m);
    if (call->cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return call->done; }))
        return std::move(call->snap);
    // The thread may still return one day (a driver that recovers): the code
    // it returns into must stay mapped even if the object holding it (the
    // plugin, the readers module) is unloaded.
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&read_nvml_guarded), &self) && self.dli_fname)
        dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    NvmlSnapshot snap;
    snap.library = lib;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_s);
    snap.reason = lib + " did not answer within " + secs + " s (nvml_timeout=); NVML is not used by this process";
    snap.timed_out = true;
    std::lock_guard<std::mutex> hung(g_hung_mutex);
    g_hung = snap.reason;
    return snap;
}

}  // namespace gputopo
