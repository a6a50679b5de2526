// What the NVML test double (tests/nvml_double/) offers tests beyond NVML's own functions.
// Tests do not link the double: they dlopen the same path as the backend (BATON_NVML_DOUBLE)
// and dlsym these names, which gives the very library the backend has loaded.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// The environment variable naming the script file (format: README.md beside this file).
#define NVML_DOUBLE_SCRIPT_ENV "BATON_NVML_DOUBLE_SCRIPT"

// How many times `function` (an NVML name, "nvmlDeviceGetTemperature") was called since the
// library was loaded or last reset; "*" or NULL: all NVML functions together; unknown names: 0.
unsigned int nvml_double_calls(const char* function);
typedef unsigned int (*NvmlDoubleCallsFn)(const char* function);

// Back to the state at load: no nvmlInit_v2 in force, no event sets, every XID undelivered,
// counters at 0, and the script read again at the next call.
void nvml_double_reset(void);
typedef void (*NvmlDoubleResetFn)(void);

#ifdef __cplusplus
}  // extern "C"
#endif
