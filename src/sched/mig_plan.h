// MIG layouts and their re-planning (issue 42): what instances a GPU in MIG mode can have, and
// which instances to destroy and create so that the queue's MIG requests can run. Pure: the
// controller gives the GPUs as they are and the requests the queue could not place, and gets
// the changes to order; nothing here reads a clock or a device.
//
// The geometry is the hardware's, as `nvidia-smi mig -lgipp` lists it on A100, H100 and H200
// (and NVML's nvmlDeviceGetGpuInstancePossiblePlacements): 8 memory slices and 7 compute
// slices; a profile "Cg.Mgb" takes C compute slices and a run of memory slices that starts
// only where the hardware allows:
//
//   1g, 1/8 of the memory   {0,1,2,3,4,5,6}:1      2g   {0,2,4}:2     4g  {0}:4
//   1g, 2/8 of the memory   {0,2,4,6}:2            3g   {0,4}:4       7g  {0}:8
//
// so an A100-80GB's 1g.10gb is {0..6}:1, its 1g.20gb {0,2,4,6}:2 and its 3g.40gb {0,4}:4, an
// A100-40GB's 1g.5gb, 1g.10gb and 3g.20gb likewise, an H200's 1g.18gb, 1g.35gb and 3g.71gb
// likewise. A "+me" profile (media extensions) is its base's geometry, at most one a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace baton::sched {

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

// One MIG instance a GPU has, or is to have.
struct MigInstance {
  std::string profile;
  int start = 0;                      // its first memory slice
  bool busy = false;                  // a job holds it
  TimePoint ends = TimePoint::max();  // busy: when its job ends at the latest; max: no end known
  bool operator==(const MigInstance&) const = default;
};

// Whether a GPU of `memory_bytes` can have `layout`: known profiles at allowed starts, no
// memory slice taken twice, at most 7 compute slices, at most one "+me".
Status CheckMigLayout(const std::vector<MigInstance>& layout, int64_t memory_bytes);

// The first start at which `profile` fits beside `layout`, or none.
std::optional<int> FitMig(const std::vector<MigInstance>& layout, std::string_view profile,
                          int64_t memory_bytes);

// A GPU in MIG mode, as the controller sees it.
struct MigGpu {
  std::string node;
  int gpu = 0;  // the physical GPU's index on its node
  int64_t memory_bytes = 0;
  std::vector<MigInstance> instances;
  bool reconfiguring = false;  // a change ordered earlier is not done: left alone
};

// What to do to one GPU: destroy these instances, then create these. `drain`: those of
// `destroy` that are busy now; `after`, the latest of their jobs' ends. Until they are idle
// they take no new job, and the change is ordered once they are (an instance whose job has no
// end is never waited for).
struct MigChange {
  std::string node;
  int gpu = 0;
  std::vector<MigInstance> destroy;
  std::vector<MigInstance> create;
  std::optional<TimePoint> after;  // none: now, no busy instance is in the way
  std::vector<MigInstance> drain;  // of `destroy`, the busy ones it waits for
};

struct MigPlan {
  std::vector<MigChange> changes;
  std::vector<std::string> unmet;  // requests no GPU can take, even emptied
  int reused = 0;                  // requests an idle instance of their profile meets as it is
};

// The changes that give `wanted` (the profiles of the queue's MIG requests it could not place,
// in queue order) instances: idle instances of the profile first; then each GPU's free memory
// slices, largest profiles first, destroying idle instances only where the new ones need their
// slices (and keeping those that still fit); then, for what is left, the GPUs whose busy
// instances in the way end soonest. GPUs in `gpus` order break ties, so the same input gives
// the same plan.
MigPlan PlanMig(const std::vector<MigGpu>& gpus, const std::vector<std::string>& wanted);

// How fragmented a layout's free memory slices are: 1 − (the longest run of them) / (all of
// them); 0 when they are one run or none is free, 0.67 for three free slices none adjacent.
double MigFragmentation(const std::vector<MigInstance>& layout, int64_t memory_bytes);

}  // namespace baton::sched
