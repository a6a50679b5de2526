#include "sched/failed_shapes.h"

#include "core/quantity.h"

namespace baton::sched {
namespace {

std::string Gpus(int64_t milli) { return FormatMilli(milli) + (milli == 1000 ? " GPU" : " GPUs"); }

}  // namespace

std::string NoFitWords(const Placer& placer, const PendingJob& job, const PlaceRules& rules,
                       bool never, Refusing refusing, bool shortfall) {
  const Resources& r = *job.resources;
  if (never) return "no node in pool " + *job.pool + " can ever hold " + DescribeRequest(r);
  const bool root = rules.limits.root && refusing.root;
  const bool spot = rules.limits.no_spot && refusing.spot;
  if (root || spot) {
    // Only the GPUs of nodes that may run the job count, and the others are said.
    int64_t free = 0;
    int refuse_root = 0, spot_nodes = 0;
    for (const NodeSlots& n : placer.view().nodes) {
      if (!n.schedulable || n.pool != *job.pool) continue;
      if (!rules.limits.Allows(n)) {
        refuse_root += root && n.refuses_root_jobs ? 1 : 0;
        spot_nodes += spot && n.spot ? 1 : 0;
        continue;
      }
      for (const GpuSlot& g : n.gpus) free += g.usable ? g.free_milli : 0;
    }
    std::string words = "waiting for " + DescribeRequest(r) + "; " + Gpus(free) + " free in pool " +
                        *job.pool + " on nodes that " +
                        (root && spot ? "run root's jobs and are not spot"
                         : root       ? "run root's jobs"
                                      : "are not spot") +
                        " (";
    if (root) {
      words += std::to_string(refuse_root) +
               (refuse_root == 1 ? " node refuses" : " nodes refuse") +
               " them: `baton agent --allow-root-jobs` allows them";
    }
    if (spot) {
      words += std::string(root ? "; " : "") + std::to_string(spot_nodes) +
               (spot_nodes == 1 ? " spot node runs" : " spot nodes run") +
               " only preemptible jobs: --preemptible lets it use them";
    }
    return words + ")";
  }
  std::string words = "waiting for " + DescribeRequest(r) + "; " +
                      Gpus(placer.free_milli(*job.pool)) + " free in pool " + *job.pool;
  if (refusing.mps && r.milli_gpus < 1000 * r.nodes) {
    // Shares of GPUs that MPS serves to another user now: not this job's.
    const uint64_t user = UserKey(rules.limits.user);
    int64_t others = 0;
    for (const NodeSlots& n : placer.view().nodes) {
      if (!n.schedulable || !n.mps || n.pool != *job.pool) continue;
      for (const GpuSlot& g : n.gpus)
        others += g.usable && g.sharer != 0 && g.sharer != user ? g.free_milli : 0;
    }
    if (others > 0) {
      words += " (" + FormatMilli(others) +
               " of it on GPUs that other users' jobs share: MPS serves one user per GPU)";
    }
  }
  // What is short, for the head of the queue (a walk over the pool's nodes each).
  if (shortfall) {
    if (std::string short_of = Shortfall(placer.view(), r, *job.pool); !short_of.empty())
      words += "; short of " + short_of;
  }
  return words;
}

}  // namespace baton::sched
