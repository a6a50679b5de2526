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

struct nvmlGpuInstance_st {
  char unused;
};
struct nvmlComputeInstance_st {
  char unused;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlDevice_st g_gpu_handles[kMaxGpus];
static struct nvmlDevice_st g_mig_handles[kMaxMigs];
// A MIG slot's GPU instance and its (one) compute instance.
static struct nvmlGpuInstance_st g_gi_handles[kMaxMigs];
static struct nvmlComputeInstance_st g_ci_handles[kMaxMigs];
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
    if (mig < 0 || !s->migs[mig].live || !s->migs[mig].ci) return NVML_ERROR_INVALID_ARGUMENT;
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
    if (!s->migs[i].live || !s->migs[i].ci) continue;
    if (s->migs[i].parent == parent && seen++ == index) {
      *mig = &g_mig_handles[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

// ---- MIG GPU and compute instances ----

// Compute slices of each compute instance profile (NVML_COMPUTE_INSTANCE_PROFILE_*, by index).
static const unsigned int kCiSlices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4, 7, 8, 6, 1};

// A GPU in MIG mode whose geometry the double knows (MigProfilesOf), for `fn`.
static nvmlReturn_t MigGpu(Fn fn, nvmlDevice_t device, Target* t, const MigProfile** profiles,
                           unsigned int* count) {
  nvmlReturn_t r = Resolve(fn, device, 0, t);
  if (r != NVML_SUCCESS) return r;
  if (!t->gpu->mig) return NVML_ERROR_NOT_SUPPORTED;
  *profiles = MigProfilesOf(t->gpu, count);
  return *profiles == NULL ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

static const MigProfile* ProfileById(const MigProfile* profiles, unsigned int count,
                                     unsigned int id) {
  for (unsigned int i = 0; i < count; ++i) {
    if (profiles[i].id == id) return &profiles[i];
  }
  return NULL;
}

static unsigned int GpuIndex(const Gpu* gpu) { return (unsigned int)(gpu - g.current->gpus); }

// The live GPU instance a handle names, for `fn`, with its `fail` lines (its GPU's).
static nvmlReturn_t ResolveGi(Fn fn, const void* handle, const void* base, size_t size,
                              Mig** out) {
  nvmlReturn_t r = Ready();
  if (r != NVML_SUCCESS) return r;
  Script* s = g.current;
  int i = IndexOf(handle, base, size, kMaxMigs);
  if (i < 0 || (unsigned int)i >= s->mig_count || !s->migs[i].live || s->migs[i].profile == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  *out = &s->migs[i];
  return Injected(fn, (int)s->migs[i].parent);
}

static nvmlReturn_t ProfileInfo(nvmlDevice_t device, unsigned int profile,
                                nvmlGpuInstanceProfileInfo_v2_t* info) {
  Target t;
  const MigProfile* profiles;
  unsigned int count;
  nvmlReturn_t r = MigGpu(kFnGetGpuInstanceProfileInfoV, device, &t, &profiles, &count);
  if (r != NVML_SUCCESS) return r;
  if (info == NULL || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  for (unsigned int i = 0; i < count; ++i) {
    const MigProfile* p = &profiles[i];
    if (p->index != profile) continue;
    memset(info, 0, sizeof *info);
    info->version = nvmlGpuInstanceProfileInfo_v2;
    info->id = p->id;
    info->sliceCount = p->compute;
    info->instanceCount = p->count;
    info->multiprocessorCount = p->compute * 16;
    info->memorySizeMB = p->memory_mb;
    snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t Placements(nvmlDevice_t device, unsigned int profile_id,
                               nvmlGpuInstancePlacement_t* placements, unsigned int* count) {
  Target t;
  const MigProfile* profiles;
  unsigned int n;
  nvmlReturn_t r = MigGpu(kFnGetGpuInstancePossiblePlacements, device, &t, &profiles, &n);
  if (r != NVML_SUCCESS) return r;
  const MigProfile* p = ProfileById(profiles, n, profile_id);
  if (p == NULL || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int have = 0;
  for (unsigned int st = 0; st < 8; ++st) have += p->starts >> st & 1u;
  if (placements == NULL) {  // asking how many
    *count = have;
    return NVML_SUCCESS;
  }
  if (*count < have) {
    *count = have;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  unsigned int k = 0;
  for (unsigned int st = 0; st < 8; ++st) {
    if (p->starts >> st & 1u) placements[k++] = (nvmlGpuInstancePlacement_t){st, p->size};
  }
  *count = have;
  return NVML_SUCCESS;
}

static nvmlReturn_t CreateGi(nvmlDevice_t device, unsigned int profile_id,
                             const nvmlGpuInstancePlacement_t* placement, nvmlGpuInstance_t* out) {
  Target t;
  const MigProfile* profiles;
  unsigned int n;
  nvmlReturn_t r = MigGpu(kFnCreateGpuInstanceWithPlacement, device, &t, &profiles, &n);
  if (r != NVML_SUCCESS) return r;
  const MigProfile* p = ProfileById(profiles, n, profile_id);
  if (p == NULL || placement == NULL || out == NULL || placement->start >= 8 ||
      !(p->starts >> placement->start & 1u) || placement->size != p->size)
    return NVML_ERROR_INVALID_ARGUMENT;
  Script* s = g.current;
  const unsigned int gpu = GpuIndex(t.gpu);
  unsigned int used = 0, compute = 0, same = 0, ids = 0, instances = 0;
  int free_slot = -1;
  for (unsigned int i = 0; i < kMaxMigs; ++i) {
    const Mig* m = &s->migs[i];
    if (i >= s->mig_count || !m->live) {
      if (free_slot < 0) free_slot = (int)i;
      continue;
    }
    if (m->parent != gpu) continue;
    ++instances;
    if (m->profile == NULL) continue;
    used |= ((1u << m->profile->size) - 1) << m->start;
    compute += m->profile->compute;
    same += m->profile == p ? 1 : 0;
    ids |= 1u << m->gi_id;
  }
  const unsigned int run = ((1u << p->size) - 1) << placement->start;
  if ((run & used) != 0 || compute + p->compute > 7 || same >= p->count || free_slot < 0 ||
      instances >= kMaxMigsPerGpu)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  Mig* m = &s->migs[free_slot];
  memset(m, 0, sizeof *m);
  m->parent = gpu;
  m->live = 1;
  m->profile = p;
  m->start = placement->start;
  m->gi_id = 1;
  while (ids >> m->gi_id & 1u) ++m->gi_id;
  m->memory = p->memory_mb << 20;
  const char* uuid = strncmp(t.gpu->uuid, "GPU-", 4) == 0 ? t.gpu->uuid + 4 : t.gpu->uuid;
  snprintf(m->uuid, sizeof m->uuid, "MIG-%.60s-%u", uuid, m->gi_id);
  snprintf(m->name, sizeof m->name, "%.60s MIG %s", t.gpu->name, p->name);
  if ((unsigned int)free_slot >= s->mig_count) s->mig_count = (unsigned int)free_slot + 1;
  *out = &g_gi_handles[free_slot];
  return NVML_SUCCESS;
}

static nvmlReturn_t GetGis(nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstance_t* gis,
                           unsigned int* count) {
  Target t;
  const MigProfile* profiles;
  unsigned int n;
  nvmlReturn_t r = MigGpu(kFnGetGpuInstances, device, &t, &profiles, &n);
  if (r != NVML_SUCCESS) return r;
  const MigProfile* p = ProfileById(profiles, n, profile_id);
  if (p == NULL || gis == NULL || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const Script* s = g.current;
  unsigned int k = 0;
  for (unsigned int i = 0; i < s->mig_count; ++i) {
    const Mig* m = &s->migs[i];
    if (!m->live || m->parent != GpuIndex(t.gpu) || m->profile != p) continue;
    if (k == *count) return NVML_ERROR_INSUFFICIENT_SIZE;
    gis[k++] = &g_gi_handles[i];
  }
  *count = k;
  return NVML_SUCCESS;
}

static nvmlReturn_t GiById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gi) {
  Target t;
  const MigProfile* profiles;
  unsigned int n;
  nvmlReturn_t r = MigGpu(kFnGetGpuInstanceById, device, &t, &profiles, &n);
  if (r != NVML_SUCCESS) return r;
  if (gi == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const Script* s = g.current;
  for (unsigned int i = 0; i < s->mig_count; ++i) {
    const Mig* m = &s->migs[i];
    if (m->live && m->profile != NULL && m->parent == GpuIndex(t.gpu) && m->gi_id == id) {
      *gi = &g_gi_handles[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t GiInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t* info) {
  Mig* m;
  nvmlReturn_t r = ResolveGi(kFnGpuInstanceGetInfo, gi, g_gi_handles, sizeof g_gi_handles[0], &m);
  if (r != NVML_SUCCESS) return r;
  if (info == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = &g_gpu_handles[m->parent];
  info->id = m->gi_id;
  info->profileId = m->profile->id;
  info->placement = (nvmlGpuInstancePlacement_t){m->start, m->profile->size};
  return NVML_SUCCESS;
}

static nvmlReturn_t DestroyGi(nvmlGpuInstance_t gi) {
  Mig* m;
  nvmlReturn_t r = ResolveGi(kFnGpuInstanceDestroy, gi, g_gi_handles, sizeof g_gi_handles[0], &m);
  if (r != NVML_SUCCESS) return r;
  if (m->ci || m->busy) return NVML_ERROR_IN_USE;  // compute instances or processes on it
  m->live = 0;
  return NVML_SUCCESS;
}

// The compute instance profile `profile` (an NVML_COMPUTE_INSTANCE_PROFILE_* index) of a GPU
// instance: its id is the index, and it has as many slices as the index says, at most the GPU
// instance's.
static nvmlReturn_t CiProfileInfo(nvmlGpuInstance_t gi, unsigned int profile,
                                  unsigned int eng_profile,
                                  nvmlComputeInstanceProfileInfo_t* info) {
  Mig* m;
  nvmlReturn_t r = ResolveGi(kFnGetComputeInstanceProfileInfo, gi, g_gi_handles,
                             sizeof g_gi_handles[0], &m);
  if (r != NVML_SUCCESS) return r;
  if (info == NULL || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
      eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (kCiSlices[profile] > m->profile->compute || profile == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1)
    return NVML_ERROR_NOT_SUPPORTED;
  memset(info, 0, sizeof *info);
  info->id = profile;
  info->sliceCount = kCiSlices[profile];
  info->instanceCount = m->profile->compute / kCiSlices[profile];
  info->multiprocessorCount = kCiSlices[profile] * 16;
  return NVML_SUCCESS;
}

static nvmlReturn_t CreateCi(nvmlGpuInstance_t gi, unsigned int profile_id,
                             nvmlComputeInstance_t* ci) {
  nvmlComputeInstanceProfileInfo_t info;
  nvmlReturn_t r = CiProfileInfo(gi, profile_id, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
  if (r == NVML_ERROR_NOT_SUPPORTED) r = NVML_ERROR_INVALID_ARGUMENT;
  if (r != NVML_SUCCESS) return r;
  Mig* m;
  r = ResolveGi(kFnCreateComputeInstance, gi, g_gi_handles, sizeof g_gi_handles[0], &m);
  if (r != NVML_SUCCESS) return r;
  if (ci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  // The double makes only the whole GPU instance's compute instance, one at a time.
  if (info.sliceCount != m->profile->compute) return NVML_ERROR_NOT_SUPPORTED;
  if (m->ci) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  m->ci = 1;
  *ci = &g_ci_handles[m - g.current->migs];
  return NVML_SUCCESS;
}

static nvmlReturn_t GetCis(nvmlGpuInstance_t gi, unsigned int profile_id,
                           nvmlComputeInstance_t* cis, unsigned int* count) {
  Mig* m;
  nvmlReturn_t r =
      ResolveGi(kFnGetComputeInstances, gi, g_gi_handles, sizeof g_gi_handles[0], &m);
  if (r != NVML_SUCCESS) return r;
  if (cis == NULL || count == NULL || profile_id >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  // Its one compute instance is of the profile whose slices are the GPU instance's.
  unsigned int k = 0;
  if (m->ci && kCiSlices[profile_id] == m->profile->compute &&
      profile_id != NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1) {
    if (*count < 1) return NVML_ERROR_INSUFFICIENT_SIZE;
    cis[k++] = &g_ci_handles[m - g.current->migs];
  }
  *count = k;
  return NVML_SUCCESS;
}

static nvmlReturn_t DestroyCi(nvmlComputeInstance_t ci) {
  Mig* m;
  nvmlReturn_t r =
      ResolveGi(kFnComputeInstanceDestroy, ci, g_ci_handles, sizeof g_ci_handles[0], &m);
  if (r != NVML_SUCCESS) return r;
  if (!m->ci) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->busy) return NVML_ERROR_IN_USE;
  m->ci = 0;
  return NVML_SUCCESS;
}

static nvmlReturn_t GiIdOf(nvmlDevice_t device, unsigned int* id) {
  Target t;
  nvmlReturn_t r = Resolve(kFnGetGpuInstanceId, device, 1, &t);
  if (r != NVML_SUCCESS) return r;
  if (id == NULL || t.mig == NULL || t.mig->profile == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *id = t.mig->gi_id;
  return NVML_SUCCESS;
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

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  Enter(kFnGetGpuInstanceProfileInfoV);
  return Leave(ProfileInfo(device, profile, info));
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count) {
  Enter(kFnGetGpuInstancePossiblePlacements);
  return Leave(Placements(device, profileId, placements, count));
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance) {
  Enter(kFnCreateGpuInstanceWithPlacement);
  return Leave(CreateGi(device, profileId, placement, gpuInstance));
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  Enter(kFnGetGpuInstances);
  return Leave(GetGis(device, profileId, gpuInstances, count));
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpuInstance) {
  Enter(kFnGetGpuInstanceById);
  return Leave(GiById(device, id, gpuInstance));
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  Enter(kFnGpuInstanceGetInfo);
  return Leave(GiInfo(gpuInstance, info));
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  Enter(kFnGpuInstanceDestroy);
  return Leave(DestroyGi(gpuInstance));
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  Enter(kFnGetComputeInstanceProfileInfo);
  return Leave(CiProfileInfo(gpuInstance, profile, engProfile, info));
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance) {
  Enter(kFnCreateComputeInstance);
  return Leave(CreateCi(gpuInstance, profileId, computeInstance));
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count) {
  Enter(kFnGetComputeInstances);
  return Leave(GetCis(gpuInstance, profileId, computeInstances, count));
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  Enter(kFnComputeInstanceDestroy);
  return Leave(DestroyCi(computeInstance));
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  Enter(kFnGetGpuInstanceId);
  return Leave(GiIdOf(device, id));
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
