// Reads the NVML test double's script (format: README.md): one directive a line, key=value
// pairs, checked whole before the double answers from it.

#include "nvml_double_script.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum {
  kMaxLine = 1024,
  kMaxPairs = 16,
};

const FnInfo kFns[kFnCount] = {
    [kFnInit] = {"nvmlInit_v2", kNotFailable},
    [kFnShutdown] = {"nvmlShutdown", kNotFailable},
    [kFnErrorString] = {"nvmlErrorString", kNotFailable},
    [kFnDriverVersion] = {"nvmlSystemGetDriverVersion", kSystemWide},
    [kFnGetCount] = {"nvmlDeviceGetCount_v2", kSystemWide},
    [kFnGetHandleByIndex] = {"nvmlDeviceGetHandleByIndex_v2", kPerDevice},
    [kFnGetUuid] = {"nvmlDeviceGetUUID", kPerDevice},
    [kFnGetName] = {"nvmlDeviceGetName", kPerDevice},
    [kFnGetMemoryInfo] = {"nvmlDeviceGetMemoryInfo", kPerDevice},
    [kFnGetPciInfo] = {"nvmlDeviceGetPciInfo_v3", kPerDevice},
    [kFnGetUtilization] = {"nvmlDeviceGetUtilizationRates", kPerDevice},
    [kFnGetTemperature] = {"nvmlDeviceGetTemperature", kPerDevice},
    [kFnGetPowerUsage] = {"nvmlDeviceGetPowerUsage", kPerDevice},
    [kFnGetTotalEccErrors] = {"nvmlDeviceGetTotalEccErrors", kPerDevice},
    [kFnGetRetiredPagesPendingStatus] = {"nvmlDeviceGetRetiredPagesPendingStatus", kPerDevice},
    [kFnGetRemappedRows] = {"nvmlDeviceGetRemappedRows", kPerDevice},
    [kFnGetNvLinkState] = {"nvmlDeviceGetNvLinkState", kPerDevice},
    [kFnGetNvLinkRemotePciInfo] = {"nvmlDeviceGetNvLinkRemotePciInfo_v2", kPerDevice},
    [kFnGetMigMode] = {"nvmlDeviceGetMigMode", kPerDevice},
    [kFnGetMaxMigDeviceCount] = {"nvmlDeviceGetMaxMigDeviceCount", kPerDevice},
    [kFnGetMigDeviceHandleByIndex] = {"nvmlDeviceGetMigDeviceHandleByIndex", kPerDevice},
    [kFnEventSetCreate] = {"nvmlEventSetCreate", kSystemWide},
    [kFnRegisterEvents] = {"nvmlDeviceRegisterEvents", kPerDevice},
    [kFnEventSetWait] = {"nvmlEventSetWait_v2", kSystemWide},
    [kFnEventSetFree] = {"nvmlEventSetFree", kSystemWide},
    [kFnGetGpuInstanceProfileInfoV] = {"nvmlDeviceGetGpuInstanceProfileInfoV", kPerDevice},
    [kFnGetGpuInstancePossiblePlacements] = {"nvmlDeviceGetGpuInstancePossiblePlacements_v2",
                                             kPerDevice},
    [kFnCreateGpuInstanceWithPlacement] = {"nvmlDeviceCreateGpuInstanceWithPlacement",
                                           kPerDevice},
    [kFnGetGpuInstances] = {"nvmlDeviceGetGpuInstances", kPerDevice},
    [kFnGetGpuInstanceById] = {"nvmlDeviceGetGpuInstanceById", kPerDevice},
    [kFnGpuInstanceGetInfo] = {"nvmlGpuInstanceGetInfo", kPerDevice},
    [kFnGpuInstanceDestroy] = {"nvmlGpuInstanceDestroy", kPerDevice},
    [kFnGetComputeInstanceProfileInfo] = {"nvmlGpuInstanceGetComputeInstanceProfileInfo",
                                          kPerDevice},
    [kFnCreateComputeInstance] = {"nvmlGpuInstanceCreateComputeInstance", kPerDevice},
    [kFnGetComputeInstances] = {"nvmlGpuInstanceGetComputeInstances", kPerDevice},
    [kFnComputeInstanceDestroy] = {"nvmlComputeInstanceDestroy", kPerDevice},
    [kFnGetGpuInstanceId] = {"nvmlDeviceGetGpuInstanceId", kPerDevice},
};

// MIG geometry, as `nvidia-smi mig -lgip` and `-lgipp` list it: an A100 80GB (driver 515) and
// an H100 80GB. Memory slices run 0..7; the starts are the placements' first slices
// ({0,1,2,3,4,5,6}:1 is 0x7F).
static const MigProfile kA100_80[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 1, 7, 9728, 0x7F},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 1, 9728, 0x7F},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.20gb", 2, 2, 3, 19968, 0x15},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.40gb", 3, 4, 2, 40192, 0x11},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.40gb", 4, 4, 1, 40192, 0x01},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.80gb", 7, 8, 1, 80896, 0x01},
};
static const MigProfile kH100_80[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 1, 7, 9984, 0x7F},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 1, 9984, 0x7F},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.20gb", 1, 2, 4, 20096, 0x55},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.20gb", 2, 2, 3, 20096, 0x15},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.40gb", 3, 4, 2, 40448, 0x11},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.40gb", 4, 4, 1, 40448, 0x01},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.80gb", 7, 8, 1, 81152, 0x01},
};

const MigProfile* MigProfilesOf(const Gpu* gpu, unsigned int* count) {
  const unsigned long long gib = 1ULL << 30;
  *count = 0;
  if (gpu->memory < 70 * gib || gpu->memory > 90 * gib) return NULL;
  if (strstr(gpu->name, "H100") != NULL) {
    *count = sizeof kH100_80 / sizeof kH100_80[0];
    return kH100_80;
  }
  if (strstr(gpu->name, "A100") != NULL) {
    *count = sizeof kA100_80 / sizeof kA100_80[0];
    return kA100_80;
  }
  return NULL;
}

const MigProfile* MigProfileNamed(const Gpu* gpu, const char* name) {
  unsigned int n;
  const MigProfile* p = MigProfilesOf(gpu, &n);
  for (unsigned int i = 0; i < n; ++i) {
    if (strcmp(p[i].name, name) == 0) return &p[i];
  }
  return NULL;
}

// The peer an `nvlink=switch` entry names: no GPU's bus id, as an NVSwitch's is not.
static const char kSwitchBus[] = "00000000:FF:00.0";

__attribute__((format(printf, 2, 3))) static int ScriptError(int line, const char* format, ...) {
  va_list args;
  fprintf(stderr, "nvml double: script line %d: ", line);
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
  return -1;
}

typedef struct {
  char* directive;  // NULL for a blank or comment line
  int n;
  char* key[kMaxPairs];
  char* value[kMaxPairs];
} Tokens;

static int IsSpace(char c) { return c == ' ' || c == '\t'; }

// Splits `line` in place: a directive, then key=value pairs; a value may be "quoted" to hold
// spaces (no escapes); `#` outside quotes starts a comment.
static int Tokenize(char* line, int number, Tokens* t) {
  char* p = line;
  t->directive = NULL;
  t->n = 0;
  while (IsSpace(*p)) ++p;
  if (*p == '\0' || *p == '#') return 0;
  t->directive = p;
  while (*p != '\0' && !IsSpace(*p)) {
    if (*p == '=' || *p == '"') return ScriptError(number, "expected a directive first");
    ++p;
  }
  for (;;) {
    if (*p != '\0') *p++ = '\0';
    while (IsSpace(*p)) ++p;
    if (*p == '\0' || *p == '#') return 0;
    if (t->n == kMaxPairs) return ScriptError(number, "more than %d keys", kMaxPairs);
    char* key = p;
    while (*p != '\0' && !IsSpace(*p) && *p != '=' && *p != '"') ++p;
    if (*p != '=' || p == key) return ScriptError(number, "expected key=value at '%s'", key);
    *p++ = '\0';
    char* value = p;
    if (*p == '"') {
      value = ++p;
      while (*p != '\0' && *p != '"') ++p;
      if (*p != '"') return ScriptError(number, "%s=: no closing quote", key);
      *p++ = '\0';
      if (*p != '\0' && !IsSpace(*p)) return ScriptError(number, "%s=: text after the quote", key);
    } else {
      while (*p != '\0' && !IsSpace(*p)) {
        if (*p == '"') return ScriptError(number, "%s=: a quote inside a value", key);
        ++p;
      }
    }
    t->key[t->n] = key;
    t->value[t->n] = value;
    ++t->n;
  }
}

// values[i] gets the value of keys[i] (NULL-terminated list), or NULL; a key given twice
// keeps its last value, so that tests can append to a line to override.
static int CollectKeys(const Tokens* t, const char* const* keys, const char** values, int line) {
  for (int k = 0; keys[k] != NULL; ++k) values[k] = NULL;
  for (int i = 0; i < t->n; ++i) {
    int k = 0;
    while (keys[k] != NULL && strcmp(keys[k], t->key[i]) != 0) ++k;
    if (keys[k] == NULL) {
      return ScriptError(line, "unknown key '%s' for '%s'", t->key[i], t->directive);
    }
    values[k] = t->value[i];
  }
  return 0;
}

static int ParseU64(const char* s, unsigned long long max, unsigned long long* out) {
  unsigned long long v = 0;
  if (*s == '\0') return -1;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return -1;
    unsigned int d = (unsigned int)(*s - '0');
    if (d > max || v > (max - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

// Leaves *out alone where the key was not given.
static int Number(const char* key, const char* value, unsigned long long max,
                  unsigned long long* out, int line) {
  if (value == NULL) return 0;
  if (ParseU64(value, max, out) != 0) {
    return ScriptError(line, "%s=%s: expected a whole number up to %llu", key, value, max);
  }
  return 0;
}

static int NumberU(const char* key, const char* value, unsigned int max, unsigned int* out,
                   int line) {
  unsigned long long v = *out;
  if (Number(key, value, max, &v, line) != 0) return -1;
  *out = (unsigned int)v;
  return 0;
}

static int Text(const char* key, const char* value, char* out, size_t size, int line) {
  if (value == NULL) return 0;
  if (strlen(value) >= size) {
    return ScriptError(line, "%s=: longer than %zu characters", key, size - 1);
  }
  snprintf(out, size, "%s", value);
  return 0;
}

static int HexField(const char* s, int digits, unsigned int* out) {
  unsigned int v = 0;
  for (int i = 0; i < digits; ++i) {
    char c = s[i];
    unsigned int d;
    if (c >= '0' && c <= '9') {
      d = (unsigned int)(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = (unsigned int)(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = (unsigned int)(c - 'A' + 10);
    } else {
      return -1;
    }
    v = v * 16 + d;
  }
  *out = v;
  return 0;
}

// NVML's form only, "DDDDDDDD:BB:DD.F", kept as written.
static int ParseBus(const char* s, Pci* out) {
  if (strlen(s) != 16 || s[8] != ':' || s[11] != ':' || s[14] != '.' ||
      HexField(s, 8, &out->domain) != 0 || HexField(s + 9, 2, &out->bus) != 0 ||
      HexField(s + 12, 2, &out->device) != 0 || HexField(s + 15, 1, &out->function) != 0) {
    return -1;
  }
  snprintf(out->id, sizeof out->id, "%s", s);
  return 0;
}

// `nvlink=1,2,switch,00000000:05:00.0`: a GPU's index, an NVSwitch, or any bus id.
static int ParseLinks(const char* value, Gpu* gpu, int line) {
  gpu->link_count = 0;
  if (value == NULL || *value == '\0') return 0;
  for (const char* p = value;;) {
    const char* end = strchr(p, ',');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    char item[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    if (len == 0 || len >= sizeof item) return ScriptError(line, "nvlink=%s: a bad entry", value);
    if (gpu->link_count == NVML_NVLINK_MAX_LINKS) {
      return ScriptError(line, "nvlink=: more than %d links", NVML_NVLINK_MAX_LINKS);
    }
    memcpy(item, p, len);
    item[len] = '\0';
    unsigned int k = gpu->link_count++;
    unsigned long long peer = 0;
    gpu->link_gpu[k] = -1;
    if (strcmp(item, "switch") == 0) {
      ParseBus(kSwitchBus, &gpu->link_peer[k]);
    } else if (strchr(item, ':') != NULL) {
      if (ParseBus(item, &gpu->link_peer[k]) != 0) {
        return ScriptError(line, "nvlink=: '%s' is no bus id like 00000000:18:00.0", item);
      }
    } else if (ParseU64(item, kMaxGpus - 1, &peer) == 0) {
      gpu->link_gpu[k] = (int)peer;  // its bus id once every GPU is read
    } else {
      return ScriptError(line, "nvlink=: '%s' is no GPU index, 'switch' or bus id", item);
    }
    if (end == NULL) return 0;
    p = end + 1;
  }
}

static int ParseGpu(const Tokens* t, int line, Script* s) {
  enum {
    kUuid, kName, kMemory, kUsed, kBus, kUtil, kMemUtil, kTemp, kPower, kEcc, kNvlink, kMig,
    kPagesPending, kRemapPending, kRemapFailed
  };
  static const char* const kKeys[] = {"uuid",   "name",          "memory",        "used",     "bus",
                                      "util",   "memutil",       "temp",          "power_mw", "ecc",
                                      "nvlink", "mig",           "pages_pending", "remap_pending",
                                      "remap_failed", NULL};
  const char* v[sizeof kKeys / sizeof kKeys[0]];
  if (CollectKeys(t, kKeys, v, line) != 0) return -1;
  if (s->gpu_count == kMaxGpus) return ScriptError(line, "more than %d gpu lines", kMaxGpus);
  if (v[kUuid] == NULL || *v[kUuid] == '\0') return ScriptError(line, "gpu needs uuid=");
  Gpu* gpu = &s->gpus[s->gpu_count];
  memset(gpu, 0, sizeof *gpu);
  gpu->line = line;
  snprintf(gpu->name, sizeof gpu->name, "NVIDIA H100 80GB HBM3");
  gpu->memory = 85899345920ULL;
  gpu->temp = 40;
  gpu->power_mw = 100000;
  char bus[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
  snprintf(bus, sizeof bus, "00000000:%02X:00.0", (s->gpu_count + 1) & 0xFFu);
  unsigned int mig = 0;
  if (Text("uuid", v[kUuid], gpu->uuid, sizeof gpu->uuid, line) != 0 ||
      Text("name", v[kName], gpu->name, sizeof gpu->name, line) != 0 ||
      Number("memory", v[kMemory], ULLONG_MAX, &gpu->memory, line) != 0 ||
      Number("used", v[kUsed], ULLONG_MAX, &gpu->used, line) != 0 ||
      NumberU("util", v[kUtil], 100, &gpu->util, line) != 0 ||
      NumberU("memutil", v[kMemUtil], 100, &gpu->memutil, line) != 0 ||
      NumberU("temp", v[kTemp], UINT_MAX, &gpu->temp, line) != 0 ||
      NumberU("power_mw", v[kPower], UINT_MAX, &gpu->power_mw, line) != 0 ||
      Number("ecc", v[kEcc], ULLONG_MAX, &gpu->ecc, line) != 0 ||
      NumberU("mig", v[kMig], 1, &mig, line) != 0 ||
      NumberU("pages_pending", v[kPagesPending], 1, &gpu->pages_pending, line) != 0 ||
      NumberU("remap_pending", v[kRemapPending], 1, &gpu->remap_pending, line) != 0 ||
      NumberU("remap_failed", v[kRemapFailed], 1, &gpu->remap_failed, line) != 0 ||
      ParseLinks(v[kNvlink], gpu, line) != 0) {
    return -1;
  }
  gpu->mig = (int)mig;
  if (gpu->used > gpu->memory) return ScriptError(line, "used= is more than memory=");
  const char* bus_id = v[kBus] != NULL ? v[kBus] : bus;
  if (ParseBus(bus_id, &gpu->pci) != 0) {
    return ScriptError(line, "bus=%s: expected NVML's form, 00000000:18:00.0", bus_id);
  }
  ++s->gpu_count;
  return 0;
}

static int ParseMig(const Tokens* t, int line, Script* s) {
  enum { kParent, kUuid, kName, kMemory, kUsed, kStart, kBusy };
  static const char* const kKeys[] = {"parent", "uuid", "name", "memory",
                                      "used",   "start", "busy", NULL};
  const char* v[sizeof kKeys / sizeof kKeys[0]];
  if (CollectKeys(t, kKeys, v, line) != 0) return -1;
  if (s->mig_count == kMaxMigs) return ScriptError(line, "more than %d mig lines", kMaxMigs);
  if (v[kParent] == NULL || v[kUuid] == NULL || *v[kUuid] == '\0') {
    return ScriptError(line, "mig needs parent= and uuid=");
  }
  Mig* m = &s->migs[s->mig_count];
  memset(m, 0, sizeof *m);
  m->line = line;
  snprintf(m->name, sizeof m->name, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
  m->memory = 10737418240ULL;
  if (NumberU("parent", v[kParent], kMaxGpus - 1, &m->parent, line) != 0 ||
      Text("uuid", v[kUuid], m->uuid, sizeof m->uuid, line) != 0 ||
      Text("name", v[kName], m->name, sizeof m->name, line) != 0 ||
      Number("memory", v[kMemory], ULLONG_MAX, &m->memory, line) != 0 ||
      Number("used", v[kUsed], ULLONG_MAX, &m->used, line) != 0 ||
      NumberU("busy", v[kBusy], 1, (unsigned int*)&m->busy, line) != 0) {
    return -1;
  }
  m->start = kNoStart;
  if (v[kStart] != NULL && NumberU("start", v[kStart], 7, &m->start, line) != 0) return -1;
  if (m->used > m->memory) return ScriptError(line, "used= is more than memory=");
  m->live = 1;
  m->ci = 1;
  ++s->mig_count;
  return 0;
}

static int ParseFail(const Tokens* t, int line, Script* s) {
  enum { kFunction, kGpu, kCode };
  static const char* const kKeys[] = {"function", "gpu", "code", NULL};
  const char* v[sizeof kKeys / sizeof kKeys[0]];
  if (CollectKeys(t, kKeys, v, line) != 0) return -1;
  if (s->fail_count == kMaxFails) return ScriptError(line, "more than %d fail lines", kMaxFails);
  if (v[kFunction] == NULL || v[kCode] == NULL) {
    return ScriptError(line, "fail needs function= and code=");
  }
  FailRule* f = &s->fails[s->fail_count];
  f->line = line;
  f->fn = -1;
  if (strcmp(v[kFunction], "*") != 0) {
    f->fn = 0;
    while (f->fn < kFnCount && strcmp(kFns[f->fn].name, v[kFunction]) != 0) ++f->fn;
    if (f->fn == kFnCount || kFns[f->fn].kind == kNotFailable) {
      return ScriptError(line, "function=%s: not a function that can be made to fail",
                         v[kFunction]);
    }
  }
  f->gpu = -1;
  if (v[kGpu] != NULL && strcmp(v[kGpu], "*") != 0) {
    unsigned int gpu = 0;
    if (NumberU("gpu", v[kGpu], kMaxGpus - 1, &gpu, line) != 0) return -1;
    if (f->fn != -1 && kFns[f->fn].kind != kPerDevice) {
      return ScriptError(line, "%s is not per device: gpu=* only", v[kFunction]);
    }
    f->gpu = (int)gpu;
  }
  unsigned int code = 0;
  if (NumberU("code", v[kCode], INT_MAX, &code, line) != 0) return -1;
  if (code == NVML_SUCCESS) return ScriptError(line, "code=0 is no failure");
  f->code = (int)code;
  ++s->fail_count;
  return 0;
}

static int ParseXid(const Tokens* t, int line, Script* s) {
  enum { kGpu, kXid };
  static const char* const kKeys[] = {"gpu", "xid", NULL};
  const char* v[sizeof kKeys / sizeof kKeys[0]];
  if (CollectKeys(t, kKeys, v, line) != 0) return -1;
  if (s->xid_count == kMaxXids) return ScriptError(line, "more than %d xid lines", kMaxXids);
  if (v[kGpu] == NULL || v[kXid] == NULL) return ScriptError(line, "xid needs gpu= and xid=");
  Xid* x = &s->xids[s->xid_count];
  x->line = line;
  if (NumberU("gpu", v[kGpu], kMaxGpus - 1, &x->gpu, line) != 0 ||
      Number("xid", v[kXid], ULLONG_MAX, &x->xid, line) != 0) {
    return -1;
  }
  ++s->xid_count;
  return 0;
}

static int ParseDriver(const Tokens* t, int line, Script* s) {
  static const char* const kKeys[] = {"version", NULL};
  const char* v[1];
  if (CollectKeys(t, kKeys, v, line) != 0) return -1;
  if (v[0] == NULL) return ScriptError(line, "driver needs version=");
  return Text("version", v[0], s->driver, sizeof s->driver, line);
}

static int ParseInit(const Tokens* t, int line, Script* s) {
  static const char* const kKeys[] = {"code", NULL};
  const char* v[1];
  if (CollectKeys(t, kKeys, v, line) != 0) return -1;
  if (v[0] == NULL) return ScriptError(line, "init needs code=");
  unsigned int code = 0;
  if (NumberU("code", v[0], INT_MAX, &code, line) != 0) return -1;
  s->init_code = (int)code;
  return 0;
}

// Gives each MIG line of a GPU whose geometry the double knows its profile (from its name,
// "... MIG 3g.40gb"), its placement (start=, else the first free start the profile allows) and
// its GPU instance id, and checks that they fit together as the hardware's would.
static int PlaceMigs(Script* s) {
  for (unsigned int i = 0; i < s->mig_count; ++i) {
    Mig* m = &s->migs[i];
    const Gpu* gpu = &s->gpus[m->parent];
    const char* at = strstr(m->name, " MIG ");
    m->profile = at != NULL ? MigProfileNamed(gpu, at + 5) : NULL;
    if (m->profile == NULL) {
      if (m->start != kNoStart) {
        return ScriptError(m->line, "start=: the double knows no MIG profile named in name=");
      }
      continue;
    }
    unsigned int used = 0, compute = 0, id = 0;  // of the GPU's instances placed before it
    for (unsigned int j = 0; j < i; ++j) {
      const Mig* o = &s->migs[j];
      if (o->parent != m->parent || o->profile == NULL) continue;
      used |= ((1u << o->profile->size) - 1) << o->start;
      compute += o->profile->compute;
      if (o->gi_id > id) id = o->gi_id;
    }
    const unsigned int run = (1u << m->profile->size) - 1;
    if (m->start == kNoStart) {
      for (unsigned int st = 0; st < 8 && m->start == kNoStart; ++st) {
        if ((m->profile->starts >> st & 1u) && ((run << st) & used) == 0) m->start = st;
      }
      if (m->start == kNoStart) {
        return ScriptError(m->line, "no free placement for %s on GPU %u", m->profile->name,
                           m->parent);
      }
    } else if (!(m->profile->starts >> m->start & 1u)) {
      return ScriptError(m->line, "start=%u: %s may not start there", m->start,
                         m->profile->name);
    } else if ((run << m->start) & used) {
      return ScriptError(m->line, "start=%u: memory slices another instance holds", m->start);
    }
    if (compute + m->profile->compute > 7) {
      return ScriptError(m->line, "more than 7 compute slices on GPU %u", m->parent);
    }
    m->gi_id = id + 1;
  }
  return 0;
}

// What can be checked only once every line is read: references between lines.
static int Check(Script* s) {
  for (unsigned int i = 0; i < s->gpu_count; ++i) {
    Gpu* gpu = &s->gpus[i];
    for (unsigned int k = 0; k < gpu->link_count; ++k) {
      int peer = gpu->link_gpu[k];
      if (peer < 0) continue;
      if ((unsigned int)peer >= s->gpu_count || (unsigned int)peer == i) {
        return ScriptError(gpu->line, "nvlink=: no GPU %d to link to", peer);
      }
      gpu->link_peer[k] = s->gpus[peer].pci;
    }
    if (strcmp(gpu->pci.id, kSwitchBus) == 0) {
      return ScriptError(gpu->line, "bus=%s is the bus id of nvlink=switch", kSwitchBus);
    }
  }
  unsigned int per_gpu[kMaxGpus] = {0};
  for (unsigned int i = 0; i < s->mig_count; ++i) {
    const Mig* m = &s->migs[i];
    if (m->parent >= s->gpu_count || !s->gpus[m->parent].mig) {
      return ScriptError(m->line, "parent=%u: no gpu line with mig=1 there", m->parent);
    }
    if (++per_gpu[m->parent] > kMaxMigsPerGpu) {
      return ScriptError(m->line, "more than %d MIG devices on GPU %u", kMaxMigsPerGpu, m->parent);
    }
  }
  if (PlaceMigs(s) != 0) return -1;
  for (unsigned int i = 0; i < s->fail_count; ++i) {
    const FailRule* f = &s->fails[i];
    if (f->gpu >= 0 && (unsigned int)f->gpu >= s->gpu_count) {
      return ScriptError(f->line, "gpu=%d: no such GPU", f->gpu);
    }
  }
  for (unsigned int i = 0; i < s->xid_count; ++i) {
    if (s->xids[i].gpu >= s->gpu_count) {
      return ScriptError(s->xids[i].line, "gpu=%u: no such GPU", s->xids[i].gpu);
    }
  }
  // Unique UUIDs: the backend keys devices by them, and a copied line is an easy mistake.
  for (unsigned int i = 0; i < s->gpu_count + s->mig_count; ++i) {
    for (unsigned int j = 0; j < i; ++j) {
      const char* a = i < s->gpu_count ? s->gpus[i].uuid : s->migs[i - s->gpu_count].uuid;
      const char* b = j < s->gpu_count ? s->gpus[j].uuid : s->migs[j - s->gpu_count].uuid;
      int line = i < s->gpu_count ? s->gpus[i].line : s->migs[i - s->gpu_count].line;
      if (strcmp(a, b) == 0) return ScriptError(line, "uuid=%s given twice", a);
    }
  }
  return 0;
}

static int ParseLine(char* text, int line, Script* s) {
  Tokens t;
  if (Tokenize(text, line, &t) != 0) return -1;
  if (t.directive == NULL) return 0;
  if (strcmp(t.directive, "gpu") == 0) return ParseGpu(&t, line, s);
  if (strcmp(t.directive, "mig") == 0) return ParseMig(&t, line, s);
  if (strcmp(t.directive, "fail") == 0) return ParseFail(&t, line, s);
  if (strcmp(t.directive, "xid") == 0) return ParseXid(&t, line, s);
  if (strcmp(t.directive, "driver") == 0) return ParseDriver(&t, line, s);
  if (strcmp(t.directive, "init") == 0) return ParseInit(&t, line, s);
  return ScriptError(line, "unknown directive '%s'", t.directive);
}

int ReadScript(const char* path, Script* s) {
  memset(s, 0, sizeof *s);
  snprintf(s->driver, sizeof s->driver, "550.54.15");
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "nvml double: cannot open the script %s: %s\n", path, strerror(errno));
    return -1;
  }
  char text[kMaxLine + 2];  // the line, its newline, the terminator
  int line = 0, result = 0;
  while (result == 0 && fgets(text, sizeof text, f) != NULL) {
    ++line;
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] == '\n') {
      text[--len] = '\0';
    } else if (!feof(f)) {
      result = ScriptError(line, "longer than %d bytes", kMaxLine);
      break;
    }
    if (len > 0 && text[len - 1] == '\r') text[--len] = '\0';
    result = ParseLine(text, line, s);
  }
  if (result == 0 && ferror(f)) {
    fprintf(stderr, "nvml double: cannot read the script %s\n", path);
    result = -1;
  }
  fclose(f);
  return result == 0 ? Check(s) : -1;
}
