// The few NVML types and functions gputopo uses, declared here because no
// NVML header ships on build machines. Layouts and values follow NVIDIA's
// nvml.h (NVML API version 12/13, drivers r535 and later): every struct size
// and field offset we rely on is pinned by a static_assert below, so a change
// here that would corrupt memory at run time fails the build instead.
//
// Only this file, topo/sources/nvml_source.cpp and the fake library under
// tests/fakes/nvml/ include it. The functions are looked up with dlsym; their
// pointer types are the *_fn aliases.
#pragma once

#include <cstddef>

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;

// nvmlReturn_t: an enum in nvml.h, int-sized.
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlIntNvLinkDeviceType_enum {
    NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
    NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
    NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
    NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

typedef enum nvmlNvLinkErrorCounter_enum {
    NVML_NVLINK_ERROR_DL_REPLAY = 0,
    NVML_NVLINK_ERROR_DL_RECOVERY = 1,
    NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
    NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
    NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
    NVML_NVLINK_ERROR_COUNT
} nvmlNvLinkErrorCounter_t;

typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
    NVML_VOLATILE_ECC = 0,
    NVML_AGGREGATE_ECC = 1
} nvmlEccCounterType_t;

typedef enum nvmlPageRetirementCause_enum {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
} nvmlPageRetirementCause_t;

#define GPUTOPO_NVML_PCI_BUS_ID_BUFFER_SIZE 32     // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
#define GPUTOPO_NVML_PCI_BUS_ID_LEGACY_SIZE 16     // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
#define GPUTOPO_NVML_DEVICE_NAME_BUFFER_SIZE 96    // NVML_DEVICE_NAME_V2_BUFFER_SIZE
#define GPUTOPO_NVML_DEVICE_UUID_BUFFER_SIZE 96    // NVML_DEVICE_UUID_V2_BUFFER_SIZE
#define GPUTOPO_NVML_DRIVER_VERSION_BUFFER_SIZE 80 // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
#define GPUTOPO_NVML_NVLINK_MAX_LINKS 36           // NVML_NVLINK_MAX_LINKS (API 13; 18 before)
#define GPUTOPO_NVML_GPU_FABRIC_UUID_LEN 16        // NVML_GPU_FABRIC_UUID_LEN

// nvmlPciInfo_t as used by nvmlDeviceGetPciInfo_v3 and
// nvmlDeviceGetNvLinkRemotePciInfo_v2.
typedef struct nvmlPciInfo_st {
    char busIdLegacy[GPUTOPO_NVML_PCI_BUS_ID_LEGACY_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;     // (device id << 16) | vendor id
    unsigned int pciSubSystemId;
    char busId[GPUTOPO_NVML_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

// Fabric probe states (nvmlGpuFabricState_t).
#define GPUTOPO_NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define GPUTOPO_NVML_GPU_FABRIC_STATE_NOT_STARTED 1
#define GPUTOPO_NVML_GPU_FABRIC_STATE_IN_PROGRESS 2
#define GPUTOPO_NVML_GPU_FABRIC_STATE_COMPLETED 3
typedef unsigned char nvmlGpuFabricState_t;

// nvmlDeviceGetGpuFabricInfo (r535+, deprecated in API 13 but still exported).
typedef struct {
    unsigned char clusterUuid[GPUTOPO_NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

// nvmlDeviceGetGpuFabricInfoV with version nvmlGpuFabricInfo_v2 (r550+).
typedef struct {
    unsigned int version;
    unsigned char clusterUuid[GPUTOPO_NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
    unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;

// NVML_STRUCT_VERSION(GpuFabricInfo, 2)
#define GPUTOPO_NVML_GPU_FABRIC_INFO_V2 ((unsigned int)(sizeof(nvmlGpuFabricInfo_v2_t) | (2U << 24U)))

// nvmlGpuFabricInfo_v3 (r560+; nvmlGpuFabricInfoV_t): v2 plus a health summary.
typedef struct {
    unsigned int version;
    unsigned char clusterUuid[GPUTOPO_NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status;
    unsigned int cliqueId;
    nvmlGpuFabricState_t state;
    unsigned int healthMask;
    unsigned char healthSummary;
} nvmlGpuFabricInfo_v3_t;
#define GPUTOPO_NVML_GPU_FABRIC_INFO_V3 ((unsigned int)(sizeof(nvmlGpuFabricInfo_v3_t) | (3U << 24U)))

// healthMask: 2-bit fields, each NOT_SUPPORTED 0, TRUE 1 (the condition holds), FALSE 2.
#define GPUTOPO_NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW 0
#define GPUTOPO_NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY 2
#define GPUTOPO_NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY 4
#define GPUTOPO_NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY 6
// healthSummary (v3): NOT_SUPPORTED 0, HEALTHY 1, UNHEALTHY 2, LIMITED_CAPACITY 3.
#define GPUTOPO_NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY 1

// nvmlDeviceGetGpuFabricInfo_v4 (NVML v615+: "Changes between NVML v610 and v615" in
// NVIDIA's NVML change log): v3 with the single cliqueId replaced by (type, id) clique
// entries, sorted by type then id; Hopper reports the unicast and multicast pointer
// cliques, Blackwell and Rubin the logical-endpoint ones too. No version field: the
// call itself is versioned. Layout as NVIDIA's NVML API reference gives it
// (docs.nvidia.com/deploy/nvml-api/api/structnvmlGpuFabricInfo__v4__t.html and
// structnvmlGpuFabricClique__v1__t.html: clusterUuid[16], status, cliques[64],
// numCliques, state, healthMask, healthSummary; a clique is {unsigned char type;
// unsigned int id;}). The NVML_GPU_FABRIC_CLIQUE_TYPE_* values are not relied on: the
// clique that keys islands stays the legacy cliqueId (v3/v2/v1), which per that page is
// the id of the first unicast-pointer entry.
#define GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX 64      // NVML_GPU_FABRIC_CLIQUE_MAX
typedef struct {
    unsigned char type;
    unsigned int id;
} nvmlGpuFabricClique_v1_t;
typedef struct {
    unsigned char clusterUuid[GPUTOPO_NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status;
    nvmlGpuFabricClique_v1_t cliques[GPUTOPO_NVML_GPU_FABRIC_CLIQUE_MAX];
    unsigned int numCliques;
    nvmlGpuFabricState_t state;
    unsigned int healthMask;
    unsigned char healthSummary;
} nvmlGpuFabricInfo_v4_t;

// Function pointer types, one per symbol looked up.
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char* version, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t device, nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetMinorNumber_fn)(nvmlDevice_t device, unsigned int* minor);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char* name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char* uuid, unsigned int length);
// MIG (R470+): the number of MIG device slots of a GPU and the instance in a slot.
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t device, unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t device, unsigned int index,
                                                                nvmlDevice_t* migDevice);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t device, nvmlMemory_t* memory);
// cpuSetSize counts unsigned longs; bit i of cpuSet[w] is CPU w*64+i.
typedef nvmlReturn_t (*nvmlDeviceGetCpuAffinity_fn)(nvmlDevice_t device, unsigned int cpuSetSize,
                                                     unsigned long* cpuSet);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link,
                                                     nvmlEnableState_t* isActive);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(nvmlDevice_t device, unsigned int link,
                                                                nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemoteDeviceType_fn)(nvmlDevice_t device, unsigned int link,
                                                                nvmlIntNvLinkDeviceType_t* type);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkErrorCounter_fn)(nvmlDevice_t device, unsigned int link,
                                                            nvmlNvLinkErrorCounter_t counter,
                                                            unsigned long long* value);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t device, nvmlGpuFabricInfo_t* info);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV_fn)(nvmlDevice_t device, void* info);  // v2 or v3, by its version
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_v4_fn)(nvmlDevice_t device, nvmlGpuFabricInfo_v4_t* info);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                        nvmlEccCounterType_t counterType,
                                                        unsigned long long* eccCounts);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                      unsigned int* pageCount, unsigned long long* addresses);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus_fn)(nvmlDevice_t device,
                                                                   nvmlEnableState_t* isPending);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t device, unsigned int* corrRows,
                                                      unsigned int* uncRows, unsigned int* isPending,
                                                      unsigned int* failureOccurred);

}  // extern "C"

// The ABI as nvml.h defines it (x86_64 and aarch64 LP64).
static_assert(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t is an int-sized enum");
static_assert(sizeof(nvmlEnableState_t) == 4, "nvmlEnableState_t is an int-sized enum");
static_assert(sizeof(nvmlIntNvLinkDeviceType_t) == 4, "nvmlIntNvLinkDeviceType_t is an int-sized enum");
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t: 16 + 5*4 + 32 bytes");
static_assert(offsetof(nvmlPciInfo_t, domain) == 16, "nvmlPciInfo_t.domain");
static_assert(offsetof(nvmlPciInfo_t, pciDeviceId) == 28, "nvmlPciInfo_t.pciDeviceId");
static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t: three unsigned long long");
static_assert(sizeof(nvmlGpuFabricInfo_t) == 28, "nvmlGpuFabricInfo_t: 16 + 4 + 4 + 1 (+3 padding)");
static_assert(offsetof(nvmlGpuFabricInfo_t, cliqueId) == 20, "nvmlGpuFabricInfo_t.cliqueId");
static_assert(offsetof(nvmlGpuFabricInfo_t, state) == 24, "nvmlGpuFabricInfo_t.state");
static_assert(sizeof(nvmlGpuFabricInfo_v2_t) == 36, "nvmlGpuFabricInfo_v2_t: 4 + 16 + 4 + 4 + 1 (+3) + 4");
static_assert(offsetof(nvmlGpuFabricInfo_v2_t, cliqueId) == 24, "nvmlGpuFabricInfo_v2_t.cliqueId");
static_assert(offsetof(nvmlGpuFabricInfo_v2_t, healthMask) == 32, "nvmlGpuFabricInfo_v2_t.healthMask");
static_assert(sizeof(nvmlGpuFabricInfo_v3_t) == 40, "nvmlGpuFabricInfo_v3_t: v2 + 1 (+3)");
static_assert(GPUTOPO_NVML_GPU_FABRIC_INFO_V3 == 0x3000028U, "nvmlGpuFabricInfo_v3");
static_assert(sizeof(nvmlGpuFabricClique_v1_t) == 8, "nvmlGpuFabricClique_v1_t: 1 (+3) + 4");
static_assert(offsetof(nvmlGpuFabricInfo_v4_t, cliques) == 20, "nvmlGpuFabricInfo_v4_t.cliques");
static_assert(offsetof(nvmlGpuFabricInfo_v4_t, numCliques) == 532, "nvmlGpuFabricInfo_v4_t.numCliques: 20 + 64*8");
static_assert(offsetof(nvmlGpuFabricInfo_v4_t, state) == 536, "nvmlGpuFabricInfo_v4_t.state");
static_assert(offsetof(nvmlGpuFabricInfo_v4_t, healthMask) == 540, "nvmlGpuFabricInfo_v4_t.healthMask");
static_assert(offsetof(nvmlGpuFabricInfo_v4_t, healthSummary) == 544, "nvmlGpuFabricInfo_v4_t.healthSummary");
static_assert(sizeof(nvmlGpuFabricInfo_v4_t) == 548, "nvmlGpuFabricInfo_v4_t: 545 (+3)");
