// The NVML test double's script, parsed (nvml_double_script.c reads it; the format is in
// README.md): the GPUs, MIG devices, injected failures and XID events that nvml_double.c
// answers from. Internal to the double: none of these names is exported.
#pragma once

#include "nvml_abi.h"

#pragma GCC visibility push(hidden)

enum {
  kMaxGpus = 64,
  kMaxMigs = 64,
  kMaxMigsPerGpu = 7,  // what nvmlDeviceGetMaxMigDeviceCount answers with MIG on
  kMaxXids = 4096,
  kMaxFails = 256,
  kDriverVersionSize = 80,  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
  kNoStart = 8,             // Mig::start not given (memory slices are 0..7)
};

// The functions, by the names tests and `fail` lines use.
typedef enum {
  kFnInit,
  kFnShutdown,
  kFnErrorString,
  kFnDriverVersion,
  kFnGetCount,
  kFnGetHandleByIndex,
  kFnGetUuid,
  kFnGetName,
  kFnGetMemoryInfo,
  kFnGetPciInfo,
  kFnGetUtilization,
  kFnGetTemperature,
  kFnGetPowerUsage,
  kFnGetTotalEccErrors,
  kFnGetNvLinkState,
  kFnGetNvLinkRemotePciInfo,
  kFnGetMigMode,
  kFnGetMaxMigDeviceCount,
  kFnGetMigDeviceHandleByIndex,
  kFnEventSetCreate,
  kFnRegisterEvents,
  kFnEventSetWait,
  kFnEventSetFree,
  kFnGetRetiredPagesPendingStatus,
  kFnGetRemappedRows,
  kFnGetGpuInstanceProfileInfoV,
  kFnGetGpuInstancePossiblePlacements,
  kFnCreateGpuInstanceWithPlacement,
  kFnGetGpuInstances,
  kFnGetGpuInstanceById,
  kFnGpuInstanceGetInfo,
  kFnGpuInstanceDestroy,
  kFnGetComputeInstanceProfileInfo,
  kFnCreateComputeInstance,
  kFnGetComputeInstances,
  kFnComputeInstanceDestroy,
  kFnGetGpuInstanceId,
  kFnCount
} Fn;

// Per-device functions take `fail ... gpu=N` and are what `function=*` means; system-wide ones
// take only gpu=*; the rest cannot be made to fail (nvmlInit_v2 has its `init` line).
typedef enum { kNotFailable, kSystemWide, kPerDevice } FnKind;

typedef struct {
  const char* name;
  FnKind kind;
} FnInfo;
extern const FnInfo kFns[kFnCount];

typedef struct {
  char id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // as written: "00000000:18:00.0"
  unsigned int domain, bus, device, function;
} Pci;

typedef struct {
  int line;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned long long memory, used, ecc;  // bytes, bytes, volatile uncorrected errors
  Pci pci;
  unsigned int util, memutil, temp, power_mw;
  unsigned int pages_pending, remap_pending, remap_failed;  // 0 or 1: what a reset would clear
  int mig;
  unsigned int link_count;
  int link_gpu[NVML_NVLINK_MAX_LINKS];  // the peer GPU, or -1 where the peer is a bus id
  Pci link_peer[NVML_NVLINK_MAX_LINKS];
} Gpu;

// A MIG profile of a GPU the double knows the MIG geometry of (A100 80GB, H100 80GB), as
// `nvidia-smi mig -lgip` and `-lgipp` list it.
typedef struct {
  unsigned int index;            // NVML_GPU_INSTANCE_PROFILE_*
  unsigned int id;               // the profile ID: 19 for 1g.10gb
  const char* name;              // "1g.10gb"
  unsigned int compute;          // compute slices, of 7
  unsigned int size;             // memory slices, of 8
  unsigned int count;            // instances a GPU may have at most
  unsigned long long memory_mb;  // MiB
  unsigned int starts;           // bit i: it may start at memory slice i
} MigProfile;

// The MIG profiles of `gpu`, or NULL (and 0) where the double knows none for its name and memory.
const MigProfile* MigProfilesOf(const Gpu* gpu, unsigned int* count);
// The profile of `gpu` named `name` ("3g.40gb"), or NULL.
const MigProfile* MigProfileNamed(const Gpu* gpu, const char* name);

// A MIG device, which is also the GPU instance it is the compute instance of. Lines of the
// script are live devices; nvmlGpuInstanceDestroy makes a slot free (live = 0) and
// nvmlDeviceCreateGpuInstanceWithPlacement fills a free one, with no compute instance until
// nvmlGpuInstanceCreateComputeInstance: only then is it a MIG device.
typedef struct {
  int line;  // 0 for one the double made
  unsigned int parent;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned long long memory, used;
  int live;                   // a GPU instance is here
  int ci;                     // ... with its compute instance: a MIG device
  int busy;                   // a process runs on it: destroying it is NVML_ERROR_IN_USE
  const MigProfile* profile;  // NULL: a profile the double does not know (no instance calls)
  unsigned int gi_id;         // its GPU instance's id on its GPU, from 1
  unsigned int start;         // its first memory slice
} Mig;

typedef struct {
  int line;
  int fn;   // -1: every per-device function
  int gpu;  // -1: every GPU
  int code;
} FailRule;

typedef struct {
  int line;
  unsigned int gpu;
  unsigned long long xid;
} Xid;

typedef struct {
  char driver[kDriverVersionSize];
  int init_code;
  Gpu gpus[kMaxGpus];
  unsigned int gpu_count;
  Mig migs[kMaxMigs];
  unsigned int mig_count;
  FailRule fails[kMaxFails];
  unsigned int fail_count;
  Xid xids[kMaxXids];
  unsigned int xid_count;
} Script;

// Reads the script at `path` into `script`: 0, or -1 after saying why on stderr
// ("nvml double: script line N: ...").
int ReadScript(const char* path, Script* script);

#pragma GCC visibility pop
