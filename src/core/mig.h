// MIG geometry: what instances a GPU in MIG mode can have (issue 42). The hardware's, as
// `nvidia-smi mig -lgipp` lists it on A100, H100 and H200 (and NVML's
// nvmlDeviceGetGpuInstancePossiblePlacements): 8 memory slices and 7 compute slices; a profile
// "Cg.Mgb" takes C compute slices and a run of memory slices that starts only where the
// hardware allows:
//
//   1g, 1/8 of the memory   {0,1,2,3,4,5,6}:1      2g   {0,2,4}:2     4g  {0}:4
//   1g, 2/8 of the memory   {0,2,4,6}:2            3g   {0,4}:4       7g  {0}:8
//
// so an A100-80GB's 1g.10gb is {0..6}:1, its 1g.20gb {0,2,4,6}:2 and its 3g.40gb {0,4}:4, an
// A100-40GB's 1g.5gb, 1g.10gb and 3g.20gb likewise, an H200's 1g.18gb, 1g.35gb and 3g.71gb
// likewise. A "+me" profile (media extensions) is its base's geometry, at most one a GPU.
// Used by the scheduler's MIG planner (sched/mig_plan.h), the simulated GPUs' layouts and the
// agents that change instances.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace baton {

inline constexpr int kMigMemorySlices = 8;
inline constexpr int kMigComputeSlices = 7;

// A profile's name taken apart: "3g.40gb" is 3 compute slices and 40 GB; "+me" media.
struct MigProfileName {
  int compute = 0;
  int memory_gb = 0;
  bool media = false;
};
std::optional<MigProfileName> ParseMigProfile(std::string_view profile);

// Where a profile may go on one GPU.
struct MigGeometry {
  int compute = 0;          // compute slices, of 7
  int size = 0;             // memory slices, of 8
  std::vector<int> starts;  // the first memory slice it may take
  bool media = false;       // "+me": at most one a GPU
};

// The geometry of `profile` ("3g.40gb", "1g.10gb+me") on a GPU of `memory_bytes`, or why there
// is none (a name not of that form, a size no MIG GPU has).
Result<MigGeometry> MigGeometryOf(std::string_view profile, int64_t memory_bytes);

// One MIG instance of a GPU: a GPU instance of `profile` whose memory slices start at `start`
// (its placement).
struct MigSlice {
  std::string profile;
  int start = 0;
  bool operator==(const MigSlice&) const = default;
};

// Where `profiles` go together on one empty GPU of `memory_bytes`: a start for each, in their
// order, none taking another's memory slices, at most 7 compute slices and one "+me" in all
// (found by a search over their allowed starts, largest first, so a layout the hardware can
// hold is always found). An error names a profile the GPU cannot have, or says that they do
// not fit together.
Result<std::vector<int>> PlaceMig(const std::vector<std::string>& profiles, int64_t memory_bytes);

// How many instances of `profile` one empty GPU of `memory_bytes` holds at most (0: none, or a
// profile it does not have).
int MigCapacity(std::string_view profile, int64_t memory_bytes);

// The MIG profile a job's gpu_type asks for: the profile itself ("1g.10gb") or an instance's
// model ("A100-80GB-MIG-1g.10gb"); "" when it names none.
std::string MigProfileWanted(std::string_view gpu_type);

}  // namespace baton
