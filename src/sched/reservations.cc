#include "sched/reservations.h"

#include <algorithm>

#include "core/node.h"
#include "sched/job_queue.h"

namespace baton::sched {

// The earliest time and GPUs at which `r` fits as the releases happen, with the GPUs other
// reservations hold taken out. Bounded: gives up after a number of placement attempts. Works
// on the pass's own placer and puts everything back before it returns: a copy of the cluster
// per search cost more than the search.
std::optional<Reservation> Shadow(Placer& placer, const std::vector<Release>& releases,
                                  const Resources& r, const std::string& pool, TimePoint now,
                                  NodeLimits limits) {
  // Releases come sorted: when none has a time (no time limits), nothing can be promised; nor
  // when all that frees by a known time, with what is free now, is short of the request.
  if (releases.empty() || releases.front().at == kNever) return std::nullopt;
  int64_t freeing = placer.free_milli(pool);
  for (const Release& rel : releases) {
    if (rel.at == kNever || freeing >= r.milli_gpus) break;
    freeing += rel.resources->milli_gpus;
  }
  if (freeing < r.milli_gpus) return std::nullopt;
  // Reserved GPUs (and hosts, for a job that asks for CPUs or memory) are out of the picture.
  std::vector<Placer::Slot> hidden;
  const auto& nodes = placer.view().nodes;
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    const NodeSlots& n = nodes[ni];
    if (n.pool != pool) continue;
    for (size_t gi = 0; gi < n.gpus.size(); ++gi) {
      if (n.gpus[gi].reserved_from != kNever && n.gpus[gi].usable) {
        hidden.push_back(Placer::Slot{static_cast<int>(ni), static_cast<int>(gi)});
      }
    }
    if (n.host_reserved_from != kNever && n.schedulable && (r.cpus > 0 || r.memory_bytes > 0)) {
      hidden.push_back(Placer::Slot{static_cast<int>(ni), -1});
    }
  }
  placer.Hide(hidden);
  PlaceRules rules{.pool = pool, .limits = limits, .until = kNever};
  std::optional<Reservation> found;
  int attempts = 0;
  size_t applied = 0;
  while (applied < releases.size() && !found) {
    TimePoint at = releases[applied].at;
    if (at == kNever) break;
    for (; applied < releases.size() && releases[applied].at == at; ++applied) {
      placer.Apply(*releases[applied].allocation, *releases[applied].resources, -1,
                   releases[applied].User());
    }
    if (placer.free_milli(pool) < r.milli_gpus) continue;
    if (++attempts > 256) break;
    if (auto a = placer.Find(r, rules)) {
      found = Reservation{.from = std::max(at, now), .allocation = std::move(*a), .resources = r};
    }
  }
  while (applied > 0) {
    --applied;
    placer.Apply(*releases[applied].allocation, *releases[applied].resources, +1,
                 releases[applied].User());
  }
  placer.Unhide();
  return found;
}

// Nodes to hold for `r` when no release time says when it could start (running jobs without
// time limits): the nodes of `pool` holding the most free GPUs it could use, and on each the
// GPUs it would take: free ones first, then busy ones, none held for another job. Held from
// now, they go to no other job as they free, so the node empties for this one. One node, two
// or more whole GPUs; nothing when no node could ever hold it.
bool MayHoldUntimed(const Resources& r) {
  // Nodes it must have, or nodes to itself: the GPUs held here would not be enough.
  if (!r.nodelist.empty() || r.exclusive) return false;
  if (r.milli_gpus < 1000 || r.milli_gpus % (1000 * r.nodes) != 0) return false;
  // A job of one GPU a node fits in any GPU that frees: gaps cannot starve it. A gang over
  // several nodes would hold them all for an unknown time: on the Philly trace that idled more
  // than it gave (docs/scheduling-quality.md).
  return r.milli_gpus / 1000 / r.nodes >= 2 && r.nodes == 1;
}

std::optional<Reservation> Untimed(Placer& placer, const Resources& r, const std::string& pool,
                                   TimePoint now, NodeLimits limits) {
  if (!MayHoldUntimed(r)) return std::nullopt;
  const int per_node = static_cast<int>(r.milli_gpus / 1000 / r.nodes);
  const bool by_type = !r.gpu_type.empty() || placer.AnyMig();
  auto could_take = [&](const GpuSlot& g) {
    return g.usable && g.reserved_from == kNever && g.memory_bytes >= r.gpu_memory_bytes &&
           (!by_type || GpuTypeMatches(g.model, g.mig_profile, r.gpu_type));
  };
  // How many of node `n`'s GPUs it could take are free (up to per_node), and whether there are
  // enough of them.
  auto count = [&](const NodeSlots& n) {
    int free = 0, usable = 0;
    for (const GpuSlot& g : n.gpus) {
      if (!could_take(g)) continue;
      ++usable;
      free += g.free_milli == 1000 ? 1 : 0;
    }
    return std::make_pair(std::min(free, per_node), usable >= per_node);
  };
  // The GPUs of node `n` it would take, free ones first.
  auto take = [&](const NodeSlots& n, std::vector<int>& gpus) {
    for (int pass = 0; pass < 2; ++pass) {
      for (const GpuSlot& g : n.gpus) {
        if (static_cast<int>(gpus.size()) == per_node) return;
        if ((g.free_milli == 1000) == (pass == 0) && could_take(g)) gpus.push_back(g.index);
      }
    }
  };
  // The node with the most free (up to per_node), the first in the view among equals. A node
  // can have no more whole GPUs free than the placer's index says it has free: one that could
  // not beat the best so far is not walked (at heavy load, most of them).
  int best = -1;
  int best_free = 0;
  const auto& nodes = placer.view().nodes;
  for (size_t ni = 0; ni < nodes.size() && !(best >= 0 && best_free == per_node); ++ni) {
    const auto most = static_cast<int>(
        std::min<int64_t>(per_node, placer.node_free_milli(static_cast<int>(ni)) / 1000));
    if (best >= 0 && most <= best_free) continue;
    const NodeSlots& n = nodes[ni];
    if (!n.schedulable || n.pool != pool || !limits.Allows(n)) continue;
    if (std::find(r.exclude.begin(), r.exclude.end(), n.name) != r.exclude.end()) continue;
    if ((r.cpus > 0 && n.total_cpus < r.cpus) ||
        (r.memory_bytes > 0 && n.total_memory_bytes < r.memory_bytes))
      continue;
    auto [free, enough] = count(n);
    if (!enough || (best >= 0 && free <= best_free)) continue;
    best = static_cast<int>(ni);
    best_free = free;
  }
  if (best < 0) return std::nullopt;
  Reservation res{.from = now, .resources = r};
  NodeAllocation part{.node = nodes[best].name};
  take(nodes[best], part.gpus);
  res.allocation.push_back(std::move(part));
  return res;
}

void MarkReservation(ClusterView& view, const Reservation& r) {
  for (const auto& part : r.allocation) {
    const int i = view.IndexOf(part.node);
    if (i < 0) continue;
    NodeSlots* n = &view.nodes[i];
    n->reserved = true;
    n->stamp = NewStamp();
    auto hold = [&](GpuSlot& slot) {
      if (r.from < slot.reserved_from) {
        slot.reserved_from = r.from;
        slot.reserved_for = r.id;
      }
    };
    if (r.resources.exclusive) {
      // The node to itself: every GPU of it, and its CPUs and memory, from then.
      for (GpuSlot& slot : n->gpus) hold(slot);
    } else {
      for (int g : part.gpus) {
        if (g >= 0 && static_cast<size_t>(g) < n->gpus.size()) hold(n->gpus[g]);
      }
    }
    if ((r.resources.cpus > 0 || r.resources.memory_bytes > 0 || r.resources.exclusive) &&
        r.from < n->host_reserved_from) {
      n->host_reserved_from = r.from;
      n->host_reserved_for = r.id;
    }
  }
}

std::unordered_map<int64_t, const Reservation*> StandingClaims(PassInput& in) {
  std::unordered_map<int64_t, const Reservation*> standing;
  if (!in.full || in.claims.empty()) return standing;
  std::unordered_map<int64_t, bool> waiting;
  if (in.queue == nullptr) {
    for (const auto& p : in.pending) waiting[p.id.value] = true;
  } else {
    for (const auto& c : in.claims) {
      if (in.queue->Find(c.id) != nullptr) waiting[c.id.value] = true;
    }
  }
  for (const auto& c : in.claims) {
    if (!c.claim || !waiting.count(c.id.value)) continue;
    if (in.now > c.from + kClaimSlack) continue;  // its victims never stopped: search again
    standing[c.id.value] = &c;
    MarkReservation(in.view, c);
  }
  return standing;
}

}  // namespace baton::sched
