#include "sched/failed_shapes.h"

#include "core/quantity.h"

namespace baton::sched {
namespace {

std::string Gpus(int64_t milli) { return FormatMilli(milli) + (milli == 1000 ? " GPU" : " GPUs"); }

}  // namespace

std::string NoFitWords(const Placer& placer, const PendingJob& job, const PlaceRules& rules,
                       bool never, bool refusing_root, bool shortfall) {
  const Resources& r = *job.resources;
  if (never) return "no node in pool " + *job.pool + " can ever hold " + DescribeRequest(r);
  if (rules.limits.root && refusing_root) {
    // Root's job: only the GPUs of nodes that run root's jobs count, and the others are said.
    int64_t free = 0;
    int refusing = 0;
    for (const NodeSlots& n : placer.view().nodes) {
      if (!n.schedulable || n.pool != *job.pool) continue;
      if (!rules.limits.Allows(n)) {
        refusing += n.refuses_root_jobs ? 1 : 0;
        continue;
      }
      for (const GpuSlot& g : n.gpus) free += g.usable ? g.free_milli : 0;
    }
    return "waiting for " + DescribeRequest(r) + "; " + Gpus(free) + " free in pool " + *job.pool +
           " on nodes that run root's jobs (" + std::to_string(refusing) +
           (refusing == 1 ? " node refuses" : " nodes refuse") +
           " them: `baton agent --allow-root-jobs` allows them)";
  }
  std::string words = "waiting for " + DescribeRequest(r) + "; " +
                      Gpus(placer.free_milli(*job.pool)) + " free in pool " + *job.pool;
  // What is short, for the head of the queue (a walk over the pool's nodes each).
  if (shortfall) {
    if (std::string short_of = Shortfall(placer.view(), r, *job.pool); !short_of.empty())
      words += "; short of " + short_of;
  }
  return words;
}

}  // namespace baton::sched
