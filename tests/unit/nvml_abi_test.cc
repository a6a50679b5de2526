// The agent's NVML declarations (src/agent/nvml_api.h) against NVML's x86-64 ABI as NVIDIA's
// nvml.h lays it out: the same numbers the NVML test double pins its own, separately written
// declarations to (tests/nvml_double/nvml_abi.h). A wrong field, type or value here would send
// a real driver's answers to the wrong places; the double could not tell, had it shared this
// header.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "agent/nvml_api.h"

namespace {

TEST(NvmlAbi, TheAgentsDeclarationsHaveNvmlsLayoutAndValues) {
  static_assert(sizeof(nvmlReturn_t) == 4);
  static_assert(sizeof(nvmlMemory_t) == 24);
  static_assert(offsetof(nvmlMemory_t, free) == 8 && offsetof(nvmlMemory_t, used) == 16);
  static_assert(sizeof(nvmlUtilization_t) == 8 && offsetof(nvmlUtilization_t, memory) == 4);
  static_assert(offsetof(nvmlPciInfo_t, domain) == 16);
  static_assert(offsetof(nvmlPciInfo_t, bus) == 20);
  static_assert(offsetof(nvmlPciInfo_t, device) == 24);
  static_assert(offsetof(nvmlPciInfo_t, pciDeviceId) == 28);
  static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32);
  static_assert(offsetof(nvmlPciInfo_t, busId) == 36);
  static_assert(sizeof(nvmlPciInfo_t) == 68);
  static_assert(offsetof(nvmlEventData_t, eventType) == 8);
  static_assert(offsetof(nvmlEventData_t, eventData) == 16);
  static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24);
  static_assert(offsetof(nvmlEventData_t, computeInstanceId) == 28);
  static_assert(sizeof(nvmlEventData_t) == 32);
  static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);
  static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, sliceCount) == 12);
  static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48);
  static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, name) == 56);
  static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
  static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098u);
  static_assert(offsetof(nvmlGpuInstanceInfo_t, profileId) == 12);
  static_assert(offsetof(nvmlGpuInstanceInfo_t, placement) == 16);
  static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
  static_assert(offsetof(nvmlComputeInstanceProfileInfo_t, sliceCount) == 4);
  static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);
  // Values: nvmlReturn_t, the buffer sizes and the enums NVML documents.
  EXPECT_EQ(NVML_SUCCESS, 0);
  EXPECT_EQ(NVML_ERROR_UNINITIALIZED, 1);
  EXPECT_EQ(NVML_ERROR_INVALID_ARGUMENT, 2);
  EXPECT_EQ(NVML_ERROR_NOT_SUPPORTED, 3);
  EXPECT_EQ(NVML_ERROR_NO_PERMISSION, 4);
  EXPECT_EQ(NVML_ERROR_NOT_FOUND, 6);
  EXPECT_EQ(NVML_ERROR_INSUFFICIENT_SIZE, 7);
  EXPECT_EQ(NVML_ERROR_DRIVER_NOT_LOADED, 9);
  EXPECT_EQ(NVML_ERROR_TIMEOUT, 10);
  EXPECT_EQ(NVML_ERROR_GPU_IS_LOST, 15);
  EXPECT_EQ(NVML_ERROR_IN_USE, 19);
  EXPECT_EQ(NVML_ERROR_INSUFFICIENT_RESOURCES, 23);
  EXPECT_EQ(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, 0);
  EXPECT_EQ(NVML_ERROR_UNKNOWN, 999);
  EXPECT_EQ(NVML_DEVICE_UUID_V2_BUFFER_SIZE, 96);
  EXPECT_EQ(NVML_DEVICE_NAME_V2_BUFFER_SIZE, 96);
  EXPECT_EQ(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, 32);
  EXPECT_EQ(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, 16);
  EXPECT_EQ(NVML_NVLINK_MAX_LINKS, 18);
  EXPECT_EQ(NVML_TEMPERATURE_GPU, 0);
  EXPECT_EQ(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, 1);
  EXPECT_EQ(NVML_VOLATILE_ECC, 0);
  EXPECT_EQ(NVML_FEATURE_ENABLED, 1);
  EXPECT_EQ(NVML_DEVICE_MIG_ENABLE, 1);
  EXPECT_EQ(nvmlEventTypeXidCriticalError, 0x8LL);
}

}  // namespace
