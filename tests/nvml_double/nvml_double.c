// The NVML test double: NVML's C functions (nvml_abi.h, written from NVIDIA's nvml.h, apart
// from the agent's agent/nvml_api.h) with answers read from a script
// file, so that the agent's NVML backend is tested through its own dlopen path on machines
// without NVIDIA hardware. The script's format is in README.md beside this file.
//
// Thread-safety: every exported function holds one mutex; nvmlEventSetWait_v2 lets go of it
// while it waits.

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

// Exported whatever -fvisibility the build passes: these are the library's whole point.
#pragma GCC visibility push(default)
#include "nvml_abi.h"
#include "nvml_double.h"
#pragma GCC visibility pop

#include "nvml_double_script.h"

enum {
  kMaxEventSets = 8,
  kPollMs = 10,
};

static const unsigned long long kXidEvent = (unsigned long long)nvmlEventTypeXidCriticalError;

// ---------------------------------------------------------------------------------------------
// State. A device handle is an address in g_gpu_handles or g_mig_handles, never read through;
// an event set is one of a small pool.

struct nvmlDevice_st {
  char unused;
};
struct nvmlEventSet_st {
  int in_use;
  unsigned long long types[kMaxGpus];  // event types registered, by GPU
};

// Of the script last read: none read yet, one with errors, or one in force.
typedef enum { kScriptNone, kScriptBad, kScriptOk } ScriptStatus;

typedef struct {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} Stamp;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlDevice_st g_gpu_handles[kMaxGpus];
static struct nvmlDevice_st g_mig_handles[kMaxMigs];
static Script g_scripts[2];  // the one in force and the one being read (~160 KiB each)

static struct {
  char path[4096];  // the script last looked for
  int present;      // whether it was there at the last look
  ScriptStatus status;
  int have_stamp;
  Stamp stamp;
  Script* current;
  unsigned int init_count;
  unsigned char delivered[kMaxXids];  // by ordinal among xid lines; survives re-reads
  unsigned int calls[kFnCount];
  struct nvmlEventSet_st sets[kMaxEventSets];
} g = {.current = &g_scripts[0]};

// ---------------------------------------------------------------------------------------------
// Reading the script when it changed.

static int SameStamp(const Stamp* a, const Stamp* b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
         a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

// Reads the script again where its path, size or times changed. A script that goes away (the
// variable unset, the file removed) leaves the last one read in force; only nvmlInit_v2 needs
// it there. REQUIRES: g_mu held.
static void Refresh(void) {
  const char* path = getenv(NVML_DOUBLE_SCRIPT_ENV);
  if (path == NULL || *path == '\0' || strlen(path) >= sizeof g.path) {
    g.present = 0;
    return;
  }
  int new_path = strcmp(path, g.path) != 0;
  if (new_path) {  // another machine, whose XIDs are all new
    snprintf(g.path, sizeof g.path, "%s", path);
    memset(g.delivered, 0, sizeof g.delivered);
    g.have_stamp = 0;
  }
  struct stat st;
  if (stat(path, &st) != 0) {
    if (g.present || new_path) {
      fprintf(stderr, "nvml double: no script at %s: %s\n", path, strerror(errno));
    }
    g.present = 0;
    g.have_stamp = 0;
    return;
  }
  g.present = 1;
  Stamp now = {.dev = st.st_dev,
               .ino = st.st_ino,
               .size = st.st_size,
               .mtime = st.st_mtim,
               .ctime = st.st_ctim};
  if (g.have_stamp && SameStamp(&now, &g.stamp)) return;
  g.stamp = now;
  g.have_stamp = 1;
  Script* next = g.current == &g_scripts[0] ? &g_scripts[1] : &g_scripts[0];
  if (ReadScript(path, next) == 0) {
    g.current = next;
    g.status = kScriptOk;
  } else {
    g.status = kScriptBad;
  }
}

// ---------------------------------------------------------------------------------------------
// The answers. Each helper runs with g_mu held.

static void Enter(Fn fn) {
  pthread_mutex_lock(&g_mu);
  ++g.calls[fn];
  Refresh();
}

static nvmlReturn_t Leave(nvmlReturn_t result) {
  pthread_mutex_unlock(&g_mu);
  return result;
}

static nvmlReturn_t Ready(void) {
  if (g.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (g.status != kScriptOk) return NVML_ERROR_UNKNOWN;  // the script was changed into a bad one
  return NVML_SUCCESS;
}

// The first `fail` line for `fn` on `gpu` (-1 for system-wide functions), or NVML_SUCCESS.
static nvmlReturn_t Injected(Fn fn, int gpu) {
  const Script* s = g.current;
  for (unsigned int i = 0; i < s->fail_count; ++i) {
    const FailRule* f = &s->fails[i];
    int fn_matches = f->fn == (int)fn || (f->fn == -1 && kFns[fn].kind == kPerDevice);
    if (fn_matches && (f->gpu == -1 || f->gpu == gpu)) return f->code;
  }
  return NVML_SUCCESS;
}

static nvmlReturn_t SystemCall(Fn fn) {
  nvmlReturn_t r = Ready();
  return r != NVML_SUCCESS ? r : Injected(fn, -1);
}

// The index of `p` in the array `base[n]`, or -1. Compared as integers: a foreign pointer may
// not be compared with < against our arrays in C.
static int IndexOf(const void* p, const void* base, size_t size, size_t n) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
  if (a < b || (a - b) % size != 0 || (a - b) / size >= n) return -1;
  return (int)((a - b) / size);
}

typedef struct {
  const Gpu* gpu;  // the GPU, or the MIG device's parent
  const Mig* mig;  // NULL for a GPU
} Target;

// Resolves `device` for `fn` and applies the `fail` lines; a MIG device's fail lines are its
// parent GPU's. MIG handles answer only where `mig_answers`.
static nvmlReturn_t Resolve(Fn fn, nvmlDevice_t device, int mig_answers, Target* t) {
  t->gpu = NULL;
  t->mig = NULL;
  nvmlReturn_t r = Ready();
  if (r != NVML_SUCCESS) return r;
  const Script* s = g.current;
  int gpu = IndexOf(device, g_gpu_handles, sizeof g_gpu_handles[0], s->gpu_count);
  if (gpu < 0) {
    int mig = IndexOf(device, g_mig_handles, sizeof g_mig_handles[0], s->mig_count);
    if (mig < 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_answers) return NVML_ERROR_NOT_SUPPORTED;
    t->mig = &s->migs[mig];
    gpu = (int)t->mig->parent;
  }
  t->gpu = &s->gpus[gpu];
  return Injected(fn, gpu);
}

static nvmlReturn_t CopyOut(char* out, unsigned int length, const char* text) {
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  snprintf(out, length, "%s", text);
  return NVML_SUCCESS;
}

static void FillPci(const Pci* in, nvmlPciInfo_t* out) {
  memset(out, 0, sizeof *out);
  snprintf(out->busIdLegacy, sizeof out->busIdLegacy, "%04X:%02X:%02X.%X", in->domain & 0xFFFFu,
           in->bus & 0xFFu, in->device & 0xFFu, in->function & 0xFu);
  out->domain = in->domain;
  out->bus = in->bus;
  out->device = in->device;
  snprintf(out->busId, sizeof out->busId, "%s", in->id);
}

static nvmlReturn_t Init(void) {
  if (!g.present) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (g.status != kScriptOk) return NVML_ERROR_UNKNOWN;  // why: on stderr
  if (g.current->init_code != NVML_SUCCESS) return g.current->init_code;
  ++g.init_count;
  return NVML_SUCCESS;
}

static nvmlReturn_t Shutdown(void) {
  if (g.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g.init_count == 0) memset(g.sets, 0, sizeof g.sets);  // NVML frees them with itself
  return NVML_SUCCESS;
}

static nvmlReturn_t HandleByIndex(unsigned int index, nvmlDevice_t* device) {
  nvmlReturn_t r = Ready();
  if (r != NVML_SUCCESS) return r;
  if (device == NULL || index >= g.current->gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
  r = Injected(kFnGetHandleByIndex, (int)index);
  if (r == NVML_SUCCESS) *device = &g_gpu_handles[index];
  return r;
}

static nvmlReturn_t MigHandle(nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig) {
  Target t;
  nvmlReturn_t r = Resolve(kFnGetMigDeviceHandleByIndex, device, 0, &t);
  if (r != NVML_SUCCESS) return r;
  if (mig == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const Script* s = g.current;
  unsigned int parent = (unsigned int)(t.gpu - s->gpus), seen = 0;
  for (unsigned int i = 0; i < s->mig_count; ++i) {
    if (s->migs[i].parent == parent && seen++ == index) {
      *mig = &g_mig_handles[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

static int SetIndex(nvmlEventSet_t set) {
  int i = IndexOf(set, g.sets, sizeof g.sets[0], kMaxEventSets);
  return i >= 0 && g.sets[i].in_use ? i : -1;
}

static nvmlReturn_t SetCreate(nvmlEventSet_t* set) {
  nvmlReturn_t r = SystemCall(kFnEventSetCreate);
  if (r != NVML_SUCCESS) return r;
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < kMaxEventSets; ++i) {
    if (!g.sets[i].in_use) {
      memset(&g.sets[i], 0, sizeof g.sets[i]);
      g.sets[i].in_use = 1;
      *set = &g.sets[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_UNKNOWN;  // NVML would run out of memory much later
}

static nvmlReturn_t Register(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set) {
  Target t;
  nvmlReturn_t r = Resolve(kFnRegisterEvents, device, 0, &t);
  if (r != NVML_SUCCESS) return r;
  int i = SetIndex(set);
  if (i < 0 || types == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if ((types & ~kXidEvent) != 0) return NVML_ERROR_NOT_SUPPORTED;  // the only type modelled
  g.sets[i].types[t.gpu - g.current->gpus] |= types;
  return NVML_SUCCESS;
}

// The first undelivered XID of a GPU registered on `set`, or NVML_ERROR_TIMEOUT.
static nvmlReturn_t NextEvent(nvmlEventSet_t set, nvmlEventData_t* data) {
  nvmlReturn_t r = SystemCall(kFnEventSetWait);
  if (r != NVML_SUCCESS) return r;
  int i = SetIndex(set);
  if (i < 0 || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const Script* s = g.current;
  for (unsigned int x = 0; x < s->xid_count; ++x) {
    const Xid* e = &s->xids[x];
    if (g.delivered[x] || (g.sets[i].types[e->gpu] & kXidEvent) == 0) continue;
    g.delivered[x] = 1;
    memset(data, 0, sizeof *data);
    data->device = &g_gpu_handles[e->gpu];
    data->eventType = kXidEvent;
    data->eventData = e->xid;
    data->gpuInstanceId = 0xFFFFFFFFu;
    data->computeInstanceId = 0xFFFFFFFFu;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_TIMEOUT;
}

static long long NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// ---------------------------------------------------------------------------------------------
// The exported functions.

nvmlReturn_t nvmlInit_v2(void) {
  Enter(kFnInit);
  return Leave(Init());
}

nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&g_mu);
  ++g.calls[kFnShutdown];
  return Leave(Shutdown());
}

const char* nvmlErrorString(nvmlReturn_t result) {
  // NVML's own texts, for every code up to 21.
  static const char* const kTexts[] = {
      "Success",
      "Uninitialized",
      "Invalid Argument",
      "Not Supported",
      "Insufficient Permissions",
      "Already Initialized",
      "Not Found",
      "Insufficient Size",
      "Insufficient External Power",
      "Driver Not Loaded",
      "Timeout",
      "Interrupt request issue",
      "NVML Shared Library Not Found",
      "Function Not Found",
      "Corrupted infoROM",
      "GPU is lost",
      "GPU requires restart",
      "The operating system has blocked the request.",
      "RM has detected an NVML/RM version mismatch.",
      "In use by another client",
      "Insufficient Memory",
      "No data",
  };
  pthread_mutex_lock(&g_mu);
  ++g.calls[kFnErrorString];
  pthread_mutex_unlock(&g_mu);
  int known = result >= 0 && (size_t)result < sizeof kTexts / sizeof kTexts[0];
  return known ? kTexts[result] : "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Enter(kFnDriverVersion);
  nvmlReturn_t r = SystemCall(kFnDriverVersion);
  return Leave(r != NVML_SUCCESS ? r : CopyOut(version, length, g.current->driver));
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  Enter(kFnGetCount);
  nvmlReturn_t r = SystemCall(kFnGetCount);
  if (r == NVML_SUCCESS && count == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) *count = g.current->gpu_count;
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  Enter(kFnGetHandleByIndex);
  return Leave(HandleByIndex(index, device));
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  Enter(kFnGetUuid);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetUuid, device, 1, &t);
  if (r == NVML_SUCCESS) r = CopyOut(uuid, length, t.mig != NULL ? t.mig->uuid : t.gpu->uuid);
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  Enter(kFnGetName);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetName, device, 1, &t);
  if (r == NVML_SUCCESS) r = CopyOut(name, length, t.mig != NULL ? t.mig->name : t.gpu->name);
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  Enter(kFnGetMemoryInfo);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetMemoryInfo, device, 1, &t);
  if (r == NVML_SUCCESS && memory == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) {
    memory->total = t.mig != NULL ? t.mig->memory : t.gpu->memory;
    memory->used = t.mig != NULL ? t.mig->used : t.gpu->used;
    memory->free = memory->total - memory->used;
  }
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  Enter(kFnGetPciInfo);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetPciInfo, device, 0, &t);
  if (r == NVML_SUCCESS && pci == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) FillPci(&t.gpu->pci, pci);
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  Enter(kFnGetUtilization);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetUtilization, device, 0, &t);
  if (r == NVML_SUCCESS && utilization == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) {
    utilization->gpu = t.gpu->util;
    utilization->memory = t.gpu->memutil;
  }
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int* temp) {
  Enter(kFnGetTemperature);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetTemperature, device, 0, &t);
  if (r == NVML_SUCCESS && (temp == NULL || sensor != NVML_TEMPERATURE_GPU)) {
    r = NVML_ERROR_INVALID_ARGUMENT;
  }
  if (r == NVML_SUCCESS) *temp = t.gpu->temp;
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  Enter(kFnGetPowerUsage);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetPowerUsage, device, 0, &t);
  if (r == NVML_SUCCESS && milliwatts == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) *milliwatts = t.gpu->power_mw;
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t error_type,
                                         nvmlEccCounterType_t counter_type,
                                         unsigned long long* count) {
  Enter(kFnGetTotalEccErrors);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetTotalEccErrors, device, 0, &t);
  int known = (error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ||
               error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) &&
              (counter_type == NVML_VOLATILE_ECC || counter_type == NVML_AGGREGATE_ECC);
  if (r == NVML_SUCCESS && (count == NULL || !known)) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) {
    int scripted =
        error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED && counter_type == NVML_VOLATILE_ECC;
    *count = scripted ? t.gpu->ecc : 0;
  }
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                    nvmlEnableState_t* is_pending) {
  Enter(kFnGetRetiredPagesPendingStatus);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetRetiredPagesPendingStatus, device, 0, &t);
  if (r == NVML_SUCCESS && is_pending == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS)
    *is_pending = t.gpu->pages_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr_rows, unsigned int* unc_rows,
                                       unsigned int* is_pending, unsigned int* failure_occurred) {
  Enter(kFnGetRemappedRows);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetRemappedRows, device, 0, &t);
  if (r == NVML_SUCCESS && (corr_rows == NULL || unc_rows == NULL || is_pending == NULL || failure_occurred == NULL)) {
    r = NVML_ERROR_INVALID_ARGUMENT;
  }
  if (r == NVML_SUCCESS) {
    *corr_rows = 0;
    *unc_rows = t.gpu->remap_pending || t.gpu->remap_failed ? 1 : 0;
    *is_pending = t.gpu->remap_pending;
    *failure_occurred = t.gpu->remap_failed;
  }
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* is_active) {
  Enter(kFnGetNvLinkState);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetNvLinkState, device, 0, &t);
  if (r == NVML_SUCCESS && (is_active == NULL || link >= NVML_NVLINK_MAX_LINKS)) {
    r = NVML_ERROR_INVALID_ARGUMENT;
  }
  if (r == NVML_SUCCESS) {
    *is_active = link < t.gpu->link_count ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  }
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  Enter(kFnGetNvLinkRemotePciInfo);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetNvLinkRemotePciInfo, device, 0, &t);
  if (r == NVML_SUCCESS && (pci == NULL || link >= NVML_NVLINK_MAX_LINKS)) {
    r = NVML_ERROR_INVALID_ARGUMENT;
  }
  if (r == NVML_SUCCESS && link >= t.gpu->link_count) r = NVML_ERROR_NOT_SUPPORTED;  // inactive
  if (r == NVML_SUCCESS) FillPci(&t.gpu->link_peer[link], pci);
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current_mode,
                                  unsigned int* pending_mode) {
  Enter(kFnGetMigMode);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetMigMode, device, 0, &t);
  if (r == NVML_SUCCESS && (current_mode == NULL || pending_mode == NULL)) {
    r = NVML_ERROR_INVALID_ARGUMENT;
  }
  if (r == NVML_SUCCESS) {
    *current_mode = t.gpu->mig ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending_mode = *current_mode;
  }
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  Enter(kFnGetMaxMigDeviceCount);
  Target t;
  nvmlReturn_t r = Resolve(kFnGetMaxMigDeviceCount, device, 0, &t);
  if (r == NVML_SUCCESS && count == NULL) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS && !t.gpu->mig) r = NVML_ERROR_NOT_SUPPORTED;
  if (r == NVML_SUCCESS) *count = kMaxMigsPerGpu;
  return Leave(r);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* mig) {
  Enter(kFnGetMigDeviceHandleByIndex);
  return Leave(MigHandle(device, index, mig));
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  Enter(kFnEventSetCreate);
  return Leave(SetCreate(set));
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long event_types,
                                      nvmlEventSet_t set) {
  Enter(kFnRegisterEvents);
  return Leave(Register(device, event_types, set));
}

// Waits as NVML does, up to timeout_ms, looking at the script every few milliseconds: a test
// that appends an xid line sees it delivered, and a caller looping on a timeout does not spin.
// timeout_ms = 0 answers at once.
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeout_ms) {
  Enter(kFnEventSetWait);
  long long deadline = NowMs() + timeout_ms;
  for (;;) {
    nvmlReturn_t r = NextEvent(set, data);
    long long left = deadline - NowMs();
    if (r != NVML_ERROR_TIMEOUT || left <= 0) return Leave(r);
    pthread_mutex_unlock(&g_mu);
    long long ms = left < kPollMs ? left : kPollMs;
    struct timespec pause = {.tv_sec = 0, .tv_nsec = (long)(ms * 1000000)};
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&g_mu);
    Refresh();
  }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  Enter(kFnEventSetFree);
  nvmlReturn_t r = SystemCall(kFnEventSetFree);
  int i = SetIndex(set);
  if (r == NVML_SUCCESS && i < 0) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r == NVML_SUCCESS) memset(&g.sets[i], 0, sizeof g.sets[i]);
  return Leave(r);
}

// ---------------------------------------------------------------------------------------------
// For tests (nvml_double.h).

unsigned int nvml_double_calls(const char* function) {
  int all = function == NULL || strcmp(function, "*") == 0;
  unsigned int n = 0;
  pthread_mutex_lock(&g_mu);
  for (int fn = 0; fn < kFnCount; ++fn) {
    if (all || strcmp(kFns[fn].name, function) == 0) n += g.calls[fn];
  }
  pthread_mutex_unlock(&g_mu);
  return n;
}

void nvml_double_reset(void) {
  pthread_mutex_lock(&g_mu);
  g.path[0] = '\0';
  g.present = 0;
  g.status = kScriptNone;
  g.have_stamp = 0;
  g.init_count = 0;
  memset(g.delivered, 0, sizeof g.delivered);
  memset(g.calls, 0, sizeof g.calls);
  memset(g.sets, 0, sizeof g.sets);
  pthread_mutex_unlock(&g_mu);
}
