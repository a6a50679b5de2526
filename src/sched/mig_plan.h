// MIG layouts and their re-planning (issue 42): what instances a GPU in MIG mode can have, and
// which instances to destroy and create so that the queue's MIG requests can run. Pure: the
// controller gives the GPUs as they are and the requests the queue could not place, and gets
// the changes to order; nothing here reads a clock or a device.
//
// The geometry is the hardware's (core/mig.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mig.h"
#include "core/status.h"
#include "core/time.h"

namespace baton::sched {

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
