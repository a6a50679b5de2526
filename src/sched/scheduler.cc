#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "sched/failed_shapes.h"
#include "sched/holdings.h"
#include "sched/job_queue.h"
#include "sched/placement.h"
#include "sched/preemption.h"
#include "sched/reservations.h"
#include "sched/running_summary.h"
#include "sched/wait_book.h"

namespace baton::sched {
namespace {

// One pass over one queue (the algorithm is stated in scheduler.h). Its steps are their own:
// the claims that stand (StandingClaims, reservations.h), the running jobs (SummarizeRunning,
// running_summary.h), what they hold against quotas (AddRunning, LimitReason: holdings.h),
// placement (Placer, placement.h), reservation (Shadow, Untimed: reservations.h) and
// preemption (SearchVictims, preemption.h), each a function of its input with a result value;
// the waits and their words (WaitBook, wait_book.h) and the shapes that failed (FailedShapes,
// failed_shapes.h) are kept for the pass. The pass walks the queue and sequences them.
class Pass {
 public:
  Pass(PassInput& in, const Policy& policy)
      : in_(in),
        policy_(policy),
        now_(in.now),
        detailed_(std::min(std::max(in.explained, 0), kDetailedWaits)),
        waits_(result_, in.pending, in.explained, in.ahead),
        held_(policy) {}

  PassResult Run();

 private:
  // Which waiting jobs may find victims (preemption_), and how many of the queue may.
  void DecidePreemption();
  bool MayHaveVictims(const PendingJob& job) const;
  // Whether a victim search may still be made this pass.
  bool SearchesLeft() const { return preemption_ && searches_ < kPreemptionSearches; }
  // A job of a shape that failed waits, with the shape's words.
  void Wait(const PendingJob& job, FailedShape& shape, std::optional<TimePoint> at = std::nullopt) {
    waits_.Wait(job, WaitReason::kResources,
                waits_.Explaining() ? waits_.TextOnce(shape.text, [&] { return shape.words; }) : 0,
                at);
  }
  // Whether every job after those walked so far would only be counted (WaitsWithoutLooking):
  // then the pass stops walking.
  bool RestIsCounted();
  // Whether what failed for others of its shape may fit this job: some node refuses it and
  // takes others' (nodes it failed on, it is root's and a node refuses root's jobs, or it is
  // not preemptible and there are spot nodes), or it is a fraction, which MPS nodes give only
  // on a whole GPU or one its own user shares.
  bool Limited(const PlaceRules& rules, const Resources& r) const {
    return (rules.limits.avoid != nullptr && !rules.limits.avoid->empty()) ||
           (rules.limits.root && refusing_.root) || (rules.limits.no_spot && refusing_.spot) ||
           (refusing_.mps && r.milli_gpus > 0 && r.milli_gpus < 1000 * r.nodes);
  }
  // Whether Shadow could find a time for a job of `milli` GPUs in `pool`: some release says
  // when, and what is free with all such releases is enough (Shadow's own first test). As the
  // pass goes on, a start moves GPUs from free to a release, and only a victim search adds
  // to them: until then, a false stays false.
  bool ShadowMayFind(int64_t milli, const std::string* pool) const {
    return !running_.releases.empty() && milli <= FreeIn(pool) + running_.timed_milli;
  }
  // What is free in `pool` (a job's: PendingJob::pool), its place in the placer's index looked
  // up once per pool string of the pass, not by name at each of its millions of questions.
  int64_t FreeIn(const std::string* pool) const {
    if (pool != last_pool_) {
      last_pool_ = pool;
      auto known = std::find_if(pool_at_.begin(), pool_at_.end(),
                                [&](const auto& p) { return p.first == pool; });
      if (known == pool_at_.end()) known = pool_at_.emplace(known, pool, placer_->PoolAt(*pool));
      last_at_ = known->second;
    }
    return placer_->free_milli_at(last_at_);
  }
  // The free GPU capacity of `pool` that some later job could still use: not held from now
  // on for a job that waits (a job ends after now, so it cannot take such a GPU); and of that,
  // what is held for no job at all, all that a job without a time limit can take.
  struct Open {
    int64_t timed = 0;
    int64_t untimed = 0;
  };
  Open OpenFree(std::string_view pool);
  // Quotas, strict order, and jobs too deep in the queue to matter: true when it waits so.
  bool WaitsWithoutLooking(const PendingJob& job);
  // Given the queue: whether every job left of group `g` (`left` of them, `next` the first)
  // would only be counted, as Consider would find for each; then they are.
  bool CountsGroup(const PendingJob& next, uint32_t g, size_t left);
  // Whether Reserve would make nothing for a job of shape `k` (that failed), now and for the
  // rest of the pass: no victim search for it, and no reservation, timed or untimed.
  bool NothingToReserve(const PendingJob& job, const FailedShape& k) const;
  void Consider(const PendingJob& job);
  void Started(const PendingJob& job, const PlaceRules& rules, std::vector<NodeAllocation> at);
  // The shape's entry in shapes_ (`found`, or `local` when none can be kept), made on its
  // first failure.
  FailedShape& ShapeOf(const PendingJob& job, const PlaceRules& rules, FailedShape* found,
                       bool skipped, FailedShape& local);
  // A job that does not fit now: a reservation, and preemption when the wait would be long.
  void Reserve(const PendingJob& job, FailedShape& shape);
  // Shadow for a job of `shape`; nothing without a look when it found nothing for the shape
  // and nothing started, was reserved or began to stop since (changes_).
  std::optional<Reservation> ShadowOf(const PendingJob& job, FailedShape& shape);
  // Stops victims for `job` when a search finds them; the claim becomes its reservation.
  bool Preempt(const PendingJob& job, std::optional<Reservation>& reservation);
  void SortReleases();

  PassInput& in_;
  const Policy& policy_;
  const TimePoint now_;
  // What the whole queue asks, where a pass looks at all of it (preemption, least asked): the
  // jobs given, or one of each group of the queue given (QueueOrder::heads).
  const std::vector<PendingJob>* whole_ = nullptr;
  const std::vector<size_t>* whole_counts_ = nullptr;  // the jobs each stands for; none: 1
  const std::vector<char>* whole_timed_ = nullptr;     // whether one of them may have a time limit
  int64_t preemptors_left_ = 0;  // jobs not walked yet that may find victims (MayHaveVictims)
  const int detailed_;           // the first waits that say what is short (Shortfall)
  PassResult result_;
  WaitBook waits_;  // the jobs that did not start, and why, into result_
  std::unordered_map<int64_t, const Reservation*> claims_;  // earlier passes', by job
  std::optional<Placer> placer_;  // indexes the view once the claims are marked in it
  Holdings held_;
  RunningSummary running_;  // releases (sorted on need), stopping, classes
  bool releases_sorted_ = false;
  bool preemption_ = false;
  FailedShapes shapes_;                              // shapes that failed this pass
  std::deque<std::vector<NodeAllocation>> started_;  // stable addresses for releases
  int reserved_ = 0;
  int searches_ = 0;
  std::vector<std::vector<uint32_t>> running_on_node_;  // built at the first preemption search
  std::optional<JobId> strict_blocker_;  // FIFO without backfill: the first job that waits
  int strict_text_ = -1;                 // "behind job N ..." in PassResult::texts
  size_t walked_ = 0;                    // jobs of the order walked so far
  size_t claims_front_ = 0;              // the first jobs of the order: those holding claims
  // The fewest GPUs a waiting job of each pool asks for, among those with a time limit and
  // those without: while a pool has less free (OpenFree), none of them can start.
  struct Least {
    const std::string* pool;
    int64_t timed = std::numeric_limits<int64_t>::max();
    int64_t untimed = std::numeric_limits<int64_t>::max();
  };
  std::vector<Least> least_asked_;  // made on first need
  // FreeIn's: the pools asked about and their places, and the last asked.
  mutable std::vector<std::pair<const std::string*, int>> pool_at_;
  mutable const std::string* last_pool_ = nullptr;
  mutable int last_at_ = -1;
  bool least_known_ = false;
  Refusing refusing_;  // nodes of the view refuse root's jobs, or all but preemptible ones
  int changes_ = 0;    // starts and reservations so far: OpenFree's answers hold until the next
  std::vector<std::tuple<std::string_view, Open, int>> open_free_;  // pool, free, changes_
  // Pools where a job holds nodes without a time: a few at most, asked for millions of times
  // (RestIsCounted), each by a job's pool string, which is most often the same string.
  std::vector<const std::string*> untimed_pools_;
  bool HoldsUntimed(const std::string* pool) const {
    return std::any_of(untimed_pools_.begin(), untimed_pools_.end(),
                       [&](const std::string* p) { return SamePool(p, pool); });
  }
};

bool Pass::MayHaveVictims(const PendingJob& job) const {
  // A job that names its nodes does not preempt: a search picks the nodes its victims free.
  if (!job.resources->nodelist.empty()) return false;
  return static_cast<int>(job.priority) > running_.lowest_class ||
         (held_.guarantees && policy_.Project(*job.project).guaranteed_milli > 0) ||
         (policy_.las_preemption && LasLevel(policy_, job.service) < running_.highest_level);
}

void Pass::DecidePreemption() {
  // Whether a preemption search can find anything this pass: a running job of a lower class
  // than some waiting one, or a project with a guarantee to reclaim. Most passes of most
  // clusters have neither, and a search looks at every running job.
  if (!policy_.preemption || in_.running.empty()) return;
  // How many waiting jobs could find victims: once the walk has passed them all, no search is
  // left to make (RestIsCounted).
  for (size_t i = 0; i < whole_->size(); ++i) {
    if (MayHaveVictims((*whole_)[i])) preemptors_left_ += whole_counts_ ? (*whole_counts_)[i] : 1;
  }
  preemption_ = preemptors_left_ > 0;
}

void Pass::SortReleases() {
  if (releases_sorted_) return;
  // Stable: releases at the same time keep the running jobs' order, then the pass's own.
  std::vector<Release>& releases = running_.releases;
  auto earlier = [](const Release& a, const Release& b) { return a.at < b.at; };
  if (!std::is_sorted(releases.begin(), releases.end(), earlier))
    std::stable_sort(releases.begin(), releases.end(), earlier);
  releases_sorted_ = true;
}

bool Pass::RestIsCounted() {
  if (waits_.Explaining()) return false;
  if (strict_blocker_) return true;
  if (in_.partial) return false;  // what asks least is known of the whole queue only
  // As WaitsWithoutLooking's last rule, for any job that could come next.
  if (!policy_.backfill || walked_ < claims_front_) return false;
  if (in_.full && SearchesLeft() && preemptors_left_ > 0) return false;
  if (!least_known_) {
    least_known_ = true;
    for (size_t i = 0; i < whole_->size(); ++i) {
      const PendingJob& p = (*whole_)[i];
      auto it = std::find_if(least_asked_.begin(), least_asked_.end(),
                             [&](const Least& l) { return SamePool(l.pool, p.pool); });
      if (it == least_asked_.end()) it = least_asked_.insert(it, Least{.pool = p.pool});
      const bool timed =
          whole_timed_ != nullptr ? (*whole_timed_)[i] != 0 : p.time_limit > Duration(0);
      int64_t& least = timed ? it->timed : it->untimed;
      least = std::min(least, p.resources->milli_gpus);
    }
  }
  // GPUs held from now on are open to no later job of a full pass: their holders were walked
  // (the pass made the holds). A pass that is not full keeps the last full pass's holds, and
  // a holder may be among the jobs left. A job without a time limit ends after any hold
  // begins: only GPUs held for no one are open to it.
  for (const Least& l : least_asked_) {
    const int64_t least = std::min(l.timed, l.untimed);
    if (least > FreeIn(l.pool)) continue;
    if (!in_.full) return false;
    const Open open = OpenFree(*l.pool);
    if (l.timed <= open.timed || l.untimed <= open.untimed) return false;
  }
  if (!in_.full || reserved_ >= policy_.reservations) return true;
  // Reservations are left, but no later job can get one: Shadow finds nothing for any (see
  // ShadowMayFind), and every pool's untimed hold is made (or there are none).
  if (std::any_of(least_asked_.begin(), least_asked_.end(), [&](const Least& l) {
        return ShadowMayFind(std::min(l.timed, l.untimed), l.pool);
      }))
    return false;
  if (!policy_.untimed_reservation) return true;
  return std::all_of(least_asked_.begin(), least_asked_.end(),
                     [&](const Least& l) { return HoldsUntimed(l.pool); });
}

Pass::Open Pass::OpenFree(std::string_view pool) {
  for (auto& [name, open, at] : open_free_) {
    if (name == pool && at == changes_) return open;
  }
  // What is free in the pool (the placer's index), less what holds take of it: only a node a
  // reservation marked (NodeSlots::reserved) has GPUs held, so only those are walked.
  const int64_t free = placer_->free_milli(pool);
  Open open{.timed = free, .untimed = free};
  for (const NodeSlots& n : placer_->view().nodes) {
    if (!n.reserved || !n.schedulable || n.pool != pool) continue;
    for (const GpuSlot& g : n.gpus) {
      if (!g.usable || g.reserved_from == kNever) continue;
      open.untimed -= g.free_milli;
      if (g.reserved_from <= now_) open.timed -= g.free_milli;
    }
  }
  for (auto& entry : open_free_) {
    if (std::get<0>(entry) == pool) {
      entry = {pool, open, changes_};
      return open;
    }
  }
  open_free_.emplace_back(pool, open, changes_);
  return open;
}

bool Pass::WaitsWithoutLooking(const PendingJob& job) {
  if (strict_blocker_ && !waits_.Explaining()) {
    waits_.Count();  // behind the blocker, past the explained ones: nothing can change for it
    return true;
  }
  if (std::string why = LimitReason(job, policy_, held_); !why.empty()) {
    waits_.Wait(job, WaitReason::kQuota, std::move(why));
    return true;
  }
  if (strict_blocker_) {
    waits_.Wait(job, WaitReason::kPriority, waits_.TextOnce(strict_text_, [&] {
      return "behind job " + strict_blocker_->ToString() + " (strict queue order, no backfill)";
    }));
    return true;
  }
  // Deep in a queue that no longer fits: no words to write, no reservation or search left
  // to make, and no room for it. Counting it is all there is to do.
  if (!waits_.Explaining() && job.resources->milli_gpus > FreeIn(job.pool) && policy_.backfill &&
      !claims_.count(job.id.value) &&
      (!in_.full || (reserved_ >= policy_.reservations && !SearchesLeft()))) {
    waits_.Count();
    return true;
  }
  return false;
}

bool Pass::CountsGroup(const PendingJob& next, uint32_t g, size_t left) {
  // No words are due, and no node refuses one of them that takes others' jobs.
  const JobQueue::Group& group = in_.queue->group(g);
  if (waits_.Explaining() || group.avoiding > 0 || (next.Limits().root && refusing_.root) ||
      (next.Limits().no_spot && refusing_.spot))
    return false;
  // One shape, the group's, failed this pass (Consider: it fails again for a job that would
  // not end sooner than the one that failed), and the view only fills as the pass goes on.
  const FailedShape* shape = shapes_.Find(*next.resources, next.pool);
  if (shape == nullptr) return false;
  const TimePoint soonest =
      group.shortest_limit == Duration::max() ? kNever : now_ + group.shortest_limit;
  if (!shape->never && soonest < shape->until) return false;
  if (!NothingToReserve(next, *shape)) return false;
  waits_.Count(static_cast<int>(left));
  if (MayHaveVictims(next)) preemptors_left_ -= std::min<int64_t>(preemptors_left_, left);
  return true;
}

bool Pass::NothingToReserve(const PendingJob& job, const FailedShape& k) const {
  if (!in_.full || k.never) return true;  // Consider reserves for neither
  if (SearchesLeft() && MayHaveVictims(job)) return false;
  if (reserved_ >= policy_.reservations) return true;
  // Shadow promises nothing for the shape now (ShadowMayFind). A job this pass starts later
  // gives back, when it ends, only GPUs free now, where the shape failed already (and a shadow
  // hides every reservation); a victim search could stop running jobs at a known time.
  if (ShadowMayFind(job.resources->milli_gpus, job.pool) ||
      (SearchesLeft() && preemptors_left_ > 0))
    return false;
  // The first job of the shape that failed tried its untimed hold, unless the pool has one.
  return !policy_.backfill || !policy_.untimed_reservation || HoldsUntimed(job.pool) ||
         k.untimed_failed || !MayHoldUntimed(*job.resources);
}

void Pass::Started(const PendingJob& job, const PlaceRules& rules, std::vector<NodeAllocation> at) {
  held_.Add(*job.project, *job.user, *job.pool, job.resources->milli_gpus, +1);
  ++changes_;
  started_.push_back(at);
  running_.Add(Release{rules.until, &started_.back(), job.resources, job.user});
  releases_sorted_ = false;
  result_.starts.push_back(Start{.id = job.id,
                                 .allocation = std::move(at),
                                 .index = static_cast<uint32_t>(&job - in_.pending.data())});
}

FailedShape& Pass::ShapeOf(const PendingJob& job, const PlaceRules& rules, FailedShape* found,
                           bool skipped, FailedShape& local) {
  if (found != nullptr) {
    if (!skipped) found->until = std::min(found->until, rules.until);
    return *found;
  }
  const bool never = !placer_->EverFits(*job.resources, *job.pool);
  // Past the explained waits no job of this pass will say it (the count only grows).
  std::string words = waits_.Explaining() ? NoFitWords(*placer_, job, rules, never, refusing_,
                                                       waits_.ahead() < detailed_)
                                          : std::string();
  local = FailedShape{job.resources, job.pool, never, rules.until, std::move(words)};
  if (Limited(rules, *job.resources)) return local;
  FailedShape* kept = shapes_.Keep(local);
  return kept != nullptr ? *kept : local;
}

void Pass::Consider(const PendingJob& job) {
  if (WaitsWithoutLooking(job)) return;
  const Resources& r = *job.resources;
  PlaceRules rules{.pool = *job.pool,
                   .limits = job.Limits(),
                   .until = job.time_limit > Duration(0) ? now_ + job.time_limit : kNever,
                   .job = job.id};
  const auto claim = claims_.find(job.id.value);
  // A job some nodes refuse is its own shape: what failed for it may fit another.
  FailedShape* found = Limited(rules, r) ? nullptr : shapes_.Find(r, job.pool);
  bool skip =
      found != nullptr && (found->never || rules.until >= found->until) && claim == claims_.end();
  if (!skip) {
    if (auto placed = placer_->Place(r, rules)) {
      Started(job, rules, std::move(*placed));
      return;
    }
  }
  FailedShape local;
  FailedShape& shape = ShapeOf(job, rules, found, skip, local);
  if (shape.never || !in_.full) {
    Wait(job, shape);
    return;
  }
  if (claim != claims_.end()) {
    // Its victims are still stopping: keep the claim, search no further. What it claimed
    // counts as its project's already: another of its jobs reclaims only what is left of
    // the guarantee, else the two together would exceed it and be preempted back.
    held_.Add(*job.project, *job.user, *job.pool, r.milli_gpus, +1);
    result_.reservations.push_back(*claim->second);
    waits_.Wait(job, WaitReason::kResources,
                "waiting for preempted jobs to stop to free " + DescribeRequest(r),
                claim->second->from);
    return;
  }
  if (!policy_.backfill) {
    strict_blocker_ = job.id;
    result_.blocker = static_cast<uint32_t>(&job - in_.pending.data());
  }
  Reserve(job, shape);
}

bool Pass::Preempt(const PendingJob& job, std::optional<Reservation>& reservation) {
  ++searches_;
  VictimSearch ctx{in_,      policy_,           now_,
                   held_,    running_.stopping, running_.Levels(in_.running, policy_),
                   *placer_, running_on_node_};
  std::optional<Claim> found = SearchVictims(job, ctx);
  if (!found) return false;
  for (size_t v : found->victims) {
    const RunningJob& x = in_.running[v];
    running_.stopping[v] = 1;
    result_.preemptions.push_back(Preemption{x.id, job.id, WhyPreempted(x, job, policy_)});
    running_.BringForward(x, found->reservation.from);
  }
  releases_sorted_ = false;
  reservation = std::move(found->reservation);
  // As for a kept claim (Consider): what it claimed counts as its project's already.
  held_.Add(*job.project, *job.user, *job.pool, job.resources->milli_gpus, +1);
  return true;
}

std::optional<Reservation> Pass::ShadowOf(const PendingJob& job, FailedShape& shape) {
  if (shape.shadow_none_at == changes_) return std::nullopt;
  auto found = Shadow(*placer_, running_.releases, *job.resources, *job.pool, now_, job.Limits());
  if (!found) shape.shadow_none_at = changes_;
  return found;
}

void Pass::Reserve(const PendingJob& job, FailedShape& shape) {
  const Resources& r = *job.resources;
  std::optional<Reservation> reservation;
  bool claimed = false;  // the reservation stands on GPUs its victims are giving back
  bool shadowed = false;
  const bool may_preempt = SearchesLeft() && MayHaveVictims(job);
  SortReleases();
  // Whether anything frees within the grace period; if not, the wait is long for sure and
  // the shadow can wait until preemption found nothing.
  const bool soon =
      !running_.releases.empty() && running_.releases.front().at <= now_ + policy_.preempt_grace;
  if ((reserved_ < policy_.reservations || may_preempt) && (!may_preempt || soon)) {
    reservation = ShadowOf(job, shape);
    shadowed = true;
  }
  if (may_preempt && (!reservation || reservation->from > now_ + policy_.preempt_grace)) {
    claimed = Preempt(job, reservation);
  }
  if (!shadowed && !claimed && reserved_ < policy_.reservations) reservation = ShadowOf(job, shape);
  // No time says when it could start: the first such job of a pool holds nodes as they
  // empty, else jobs that fit in the gaps would pass it for ever.
  bool untimed = false;
  if (!reservation && !claimed && reserved_ < policy_.reservations && policy_.backfill &&
      policy_.untimed_reservation && !HoldsUntimed(job.pool) && !shape.untimed_failed) {
    reservation = Untimed(*placer_, r, *job.pool, now_, job.Limits());
    untimed = reservation.has_value();
    if (untimed) untimed_pools_.push_back(job.pool);
    shape.untimed_failed = !untimed;
  }
  if (!reservation || (!claimed && reserved_ >= policy_.reservations)) {
    Wait(job, shape);
    return;
  }
  reservation->id = job.id;
  reserved_ += claimed ? 0 : 1;
  MarkReservation(placer_->view(), *reservation);
  ++changes_;
  TimePoint from = reservation->from;
  std::string nodes;
  for (const auto& part : reservation->allocation) nodes += (nodes.empty() ? "" : ", ") + part.node;
  result_.reservations.push_back(std::move(*reservation));
  if (untimed) {
    waits_.Wait(job, WaitReason::kResources,
                shape.words + "; holding " + nodes + " for it as running jobs end");
  } else {
    Wait(job, shape, from);
  }
}

PassResult Pass::Run() {
  if (in_.full) in_.view.ClearReservations();
  // 1. Order (as far as the walk goes).
  QueueOrder order(in_, policy_);
  claims_ = StandingClaims(in_);
  // Jobs holding a claim go first: they preempted for those GPUs, and no job ahead of them in
  // the order may stand in their way (in strict order, it would block them for ever).
  whole_ = in_.queue != nullptr ? &order.heads() : &in_.pending;
  if (in_.queue != nullptr) {
    whole_counts_ = &order.head_counts();
    whole_timed_ = &order.heads_timed();
  }
  if (!claims_.empty()) {
    std::vector<JobId> claimers;
    for (const auto& [id, claim] : claims_) claimers.push_back(JobId{id});
    order.Front(claimers);
    for (claims_front_ = 0; claims_front_ < order.size(); ++claims_front_) {
      if (!claims_.count(in_.pending[order.at(claims_front_)].id.value)) break;
    }
  }
  // 2. Walk it, until every job left would only be counted.
  refusing_.root = in_.view.totals().refuses_root;
  refusing_.spot = in_.view.totals().spot;
  refusing_.mps = in_.view.totals().mps;
  placer_.emplace(in_.view);
  running_ = SummarizeRunning(in_.running, policy_, now_);
  DecidePreemption();
  // What the running jobs hold is read only by limits and preemption searches: most passes
  // of most clusters have neither.
  if (preemption_ || AnyLimit(policy_)) AddRunning(held_, in_.running);
  strict_blocker_ = in_.blocker;
  result_.waits.reserve(std::min(order.size(), static_cast<size_t>(std::max(in_.explained, 0))));
  if (in_.queue != nullptr) {
    order.CountGroups([this](const PendingJob& next, uint32_t g, size_t left) {
      return CountsGroup(next, g, left);
    });
  }
  bool stopped = false;
  for (walked_ = 0; walked_ < order.size(); ++walked_) {
    if (RestIsCounted()) {
      waits_.Count(static_cast<int>(order.size() - walked_));
      stopped = true;
      break;
    }
    if (!order.Reach(walked_)) break;  // every job left was counted with its group
    const PendingJob& job = in_.pending[order.at(walked_)];
    if (preemptors_left_ > 0 && MayHaveVictims(job)) --preemptors_left_;
    Consider(job);
  }
  result_.wanted_more = in_.partial && !stopped && !RestIsCounted();
  order.Entries(in_, result_.order, &result_.sorted);
  if (in_.queue != nullptr) result_.rest = order.TakeRest();
  return std::move(result_);
}

}  // namespace

PassResult RunPass(PassInput in) { return RunPassOn(in); }

std::string PassResult::Detail(const sched::Wait& w, TimePoint now) const {
  return texts.at(w.text) + QueueWords(w.ahead, w.estimated_start, now);
}

PassResult RunPassOn(PassInput& in) {
  static const Policy kDefaultPolicy;
  const Policy& policy = in.policy != nullptr ? *in.policy : kDefaultPolicy;
  return Pass(in, policy).Run();
}

}  // namespace baton::sched
