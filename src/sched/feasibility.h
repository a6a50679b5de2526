// Whether a request could ever run: checked at submit against every node of its pool, busy,
// drained or lost alike (they come back), never against what is free now.
//
// A request no set of the pool's nodes can ever hold is refused, and the message names what is
// missing and what the pool has: "resources.gpu_type: no GPU of type H200 in pool default; it
// has 2 nodes of 8xH100-80GB (64 CPUs, 512 GiB)". A request whose node count is left open
// (Resources::nodes == 0, the default of a submit that names none) goes on the fewest whole
// nodes that hold its GPUs split evenly, as Slurm's --gpus does: 16 GPUs on 8-GPU nodes is 2
// nodes of 8, 12 is 2 of 6, 9 is 3 of 3.
//
// A pool whose nodes are not known yet (no agent has registered, or one is still awaited after
// a restart) cannot be judged: the request is taken as it is, one node when it named none.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/node.h"

namespace baton::sched {

// What the check needs of a node: its agent's description and whether it is known at all.
struct KnownNode {
  const NodeInfo* info = nullptr;
  bool registered = true;  // false: awaited (its GPUs are not known)
};

struct Feasibility {
  // The request as it will run: `nodes` resolved when it was 0.
  Resources resources;
  // The pool's nodes were known and judged (false: taken as it was).
  bool judged = false;
};

// `pool_configured`: the configuration names the pool, so nodes may join it later; a pool
// neither configured nor holding any node is refused, naming the pools that exist. Only nodes
// that run the job count: for root's, nodes whose agents run root's jobs; for one that is not
// `preemptible`, nodes that are not spot (those left out are said).
Result<Feasibility> CheckFeasible(const std::vector<KnownNode>& nodes, const Resources& request,
                                  std::string_view pool, bool pool_configured,
                                  std::string_view user, bool preemptible = true);

// "2 nodes of 8xH100-80GB (64 CPUs, 512 GiB), 1 node of 4xA100-40GB (32 CPUs, 256 GiB)": the
// pool's nodes grouped by shape, largest first.
std::string DescribePool(const std::vector<KnownNode>& nodes, std::string_view pool);

}  // namespace baton::sched
