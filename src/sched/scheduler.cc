#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/quantity.h"
#include "sched/holdings.h"
#include "sched/job_queue.h"
#include "sched/placement.h"
#include "sched/preemption.h"
#include "sched/reservations.h"

namespace baton::sched {
namespace {

std::string Gpus(int64_t milli) { return FormatMilli(milli) + (milli == 1000 ? " GPU" : " GPUs"); }

// Whether two jobs' pools are one: by address first, as the controller gives every job of a
// pool the same string.
bool SamePool(const std::string* a, const std::string* b) { return a == b || *a == *b; }

// A shape (resources and pool) that failed to fit in this pass, with its words. The view only
// fills during a pass: a shape that failed fails again, unless a job of it ends sooner and may
// use a hole before a reservation.
struct Known {
  const Resources* r;
  const std::string* pool;
  bool never;
  TimePoint until;  // the shortest job of this shape that did not fit
  std::string detail;
  int text = -1;                // detail's index in PassResult::texts, once a wait said it
  bool untimed_failed = false;  // no node to hold for it (Untimed), for the rest of the pass
  int shadow_none_at = -1;      // Pass::changes_ when Shadow last found nothing for it
};

// One pass over one queue (the algorithm is stated in scheduler.h).
class Pass {
 public:
  Pass(PassInput& in, const Policy& policy)
      : in_(in),
        policy_(policy),
        now_(in.now),
        explained_(std::max(in.explained, 0)),
        detailed_(std::min(explained_, kDetailedWaits)),
        held_(policy) {}

  PassResult Run();

 private:
  void TakeClaims();
  void CountRunning();
  // What the running jobs hold, into held_.
  void CountHeld();
  void DecidePreemption();
  bool MayHaveVictims(const PendingJob& job) const;
  // Whether a victim search may still be made this pass.
  bool SearchesLeft() const { return preemption_ && searches_ < kPreemptionSearches; }
  // A job that does not start: counted, and explained while within explained_.
  void Wait(const PendingJob& job, WaitReason reason, std::string detail,
            std::optional<TimePoint> at = std::nullopt);
  void Wait(const PendingJob& job, WaitReason reason, Known& shape,
            std::optional<TimePoint> at = std::nullopt);
  void Explain(const PendingJob& job, WaitReason reason, uint32_t text,
               std::optional<TimePoint> at);
  // The index in PassResult::texts of words said at most once a pass, made on first need;
  // `cached` keeps it (-1 until then).
  template <typename Words>
  uint32_t TextOnce(int& cached, const Words& words) {
    if (cached < 0) {
      result_.texts.push_back(words());
      cached = static_cast<int>(result_.texts.size() - 1);
    }
    return static_cast<uint32_t>(cached);
  }
  // Whether every job after those walked so far would only be counted (WaitsWithoutLooking):
  // then the pass stops walking.
  bool RestIsCounted();
  // Whether some node refuses this job that takes others' (nodes it failed on, or it is
  // root's and a node refuses root's jobs): then what failed for others may fit it.
  bool Limited(const PlaceRules& rules) const {
    return (rules.limits.avoid != nullptr && !rules.limits.avoid->empty()) ||
           (rules.limits.root && refusing_root_);
  }
  // Whether Shadow could find a time for a job of `milli` GPUs in `pool`: some release says
  // when, and what is free with all such releases is enough (Shadow's own first test). As the
  // pass goes on, a start moves GPUs from free to a release, and only a victim search adds
  // to them: until then, a false stays false.
  bool ShadowMayFind(int64_t milli, std::string_view pool) const {
    return timed_releases_ > 0 && milli <= placer_->free_milli(pool) + timed_milli_;
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
  bool NothingToReserve(const PendingJob& job, const Known& k) const;
  void Consider(const PendingJob& job);
  void Started(const PendingJob& job, const PlaceRules& rules, std::vector<NodeAllocation> at);
  // The shape's entry in known_ (or `local` when known_ is full), made on its first failure.
  Known& ShapeOf(const PendingJob& job, const PlaceRules& rules, std::vector<Known>::iterator it,
                 bool skipped, Known& local);
  // A job that does not fit now: a reservation, and preemption when the wait would be long.
  void Reserve(const PendingJob& job, Known& shape);
  // Shadow for a job of `shape`; nothing without a look when it found nothing for the shape
  // and nothing started, was reserved or began to stop since (changes_).
  std::optional<Reservation> ShadowOf(const PendingJob& job, Known& shape);
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
  const int explained_;          // PassInput::explained: waiting jobs that get a reason
  const int detailed_;           // ... and of those, the first that say what is short (Shortfall)
  PassResult result_;
  std::unordered_map<int64_t, const Reservation*> claims_;  // earlier passes', by job
  std::optional<Placer> placer_;  // indexes the view once the claims are marked in it
  Holdings held_;
  std::vector<Release> releases_;
  std::vector<Release> untimed_scratch_;  // SortReleases' buffer
  bool releases_sorted_ = false;
  std::vector<bool> stopping_;  // per running job
  int lowest_running_ = static_cast<int>(Priority::kCritical) + 1;
  int highest_level_ = -1;   // the most served running job's LAS level
  std::vector<int> levels_;  // per running job, its LAS level (policy.las_preemption)
  bool any_guarantee_ = false;
  bool preemption_ = false;
  std::vector<Known> known_;                         // shapes that failed this pass
  std::deque<std::vector<NodeAllocation>> started_;  // stable addresses for releases_
  int ahead_ = 0;
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
  bool least_known_ = false;
  bool refusing_root_ = false;  // a node of the view refuses root's jobs
  int changes_ = 0;  // starts and reservations so far: OpenFree's answers hold until the next
  std::vector<std::tuple<std::string_view, Open, int>> open_free_;  // pool, free, changes_
  std::set<std::string_view> untimed_pools_;  // pools where a job holds nodes without a time
  int timed_releases_ = 0;   // releases_ that say when (a running or started job's time limit)
  int64_t timed_milli_ = 0;  // ... and the GPUs they give back, in milli-GPUs
};

void Pass::TakeClaims() {
  // Claims of earlier passes hold the GPUs their victims give back for their claimers.
  if (!in_.full || in_.claims.empty()) return;
  std::unordered_map<int64_t, bool> waiting;
  if (in_.queue == nullptr) {
    for (const auto& p : in_.pending) waiting[p.id.value] = true;
  } else {
    for (const auto& c : in_.claims) {
      if (in_.queue->Find(c.id) != nullptr) waiting[c.id.value] = true;
    }
  }
  for (const auto& c : in_.claims) {
    if (!c.claim || !waiting.count(c.id.value)) continue;
    if (now_ > c.from + kClaimSlack) continue;  // its victims never stopped: search again
    claims_[c.id.value] = &c;
    MarkReservation(in_.view, c);
  }
}

void Pass::CountHeld() {
  // Summed by account (one project and user) first: a cluster runs hundreds of jobs of a few
  // accounts, and each sum is a few lookups by name.
  struct Sum {
    const RunningJob* first = nullptr;
    int64_t milli = 0;
    int jobs = 0;
  };
  std::vector<Sum> sums;
  for (const RunningJob& r : in_.running) {
    Sum* sum = nullptr;
    if (r.account >= 0) {
      if (static_cast<size_t>(r.account) >= sums.size()) sums.resize(r.account + 1);
      sum = &sums[r.account];
      if (sum->first == nullptr) sum->first = &r;
    }
    if (sum == nullptr || !SamePool(sum->first->pool, r.pool)) {
      held_.Add(*r.project, *r.user, *r.pool, r.resources->milli_gpus, +1);
      continue;
    }
    sum->milli += r.resources->milli_gpus;
    sum->jobs += 1;
  }
  for (const Sum& sum : sums) {
    if (sum.first != nullptr)
      held_.AddJobs(*sum.first->project, *sum.first->user, *sum.first->pool, sum.milli, sum.jobs);
  }
}

void Pass::CountRunning() {
  releases_.reserve(in_.running.size());
  stopping_.resize(in_.running.size());
  for (size_t i = 0; i < in_.running.size(); ++i) {
    const RunningJob& r = in_.running[i];
    TimePoint end =
        r.stopping ? std::min(r.expected_end, now_ + policy_.preempt_grace) : r.expected_end;
    releases_.push_back(Release{end, r.allocation, r.resources});
    timed_releases_ += end != kNever ? 1 : 0;
    timed_milli_ += end != kNever ? r.resources->milli_gpus : 0;
    stopping_[i] = r.stopping;
    if (policy_.las_preemption) levels_.push_back(LasLevel(policy_, r.service));
    if (r.stopping) continue;
    lowest_running_ = std::min(lowest_running_, static_cast<int>(r.priority));
    if (policy_.las_preemption) highest_level_ = std::max(highest_level_, levels_.back());
  }
}

bool Pass::MayHaveVictims(const PendingJob& job) const {
  // A job that names its nodes does not preempt: a search picks the nodes its victims free.
  if (!job.resources->nodelist.empty()) return false;
  return static_cast<int>(job.priority) > lowest_running_ ||
         (any_guarantee_ && policy_.Project(*job.project).guaranteed_milli > 0) ||
         (policy_.las_preemption && LasLevel(policy_, job.service) < highest_level_);
}

void Pass::DecidePreemption() {
  // Whether a preemption search can find anything this pass: a running job of a lower class
  // than some waiting one, or a project with a guarantee to reclaim. Most passes of most
  // clusters have neither, and a search looks at every running job.
  // Projects not named in the policy have the default's guarantee.
  any_guarantee_ = policy_.default_project.guaranteed_milli > 0;
  for (const auto& [name, p] : policy_.projects) any_guarantee_ |= p.guaranteed_milli > 0;
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
  // Most running jobs have no time limit (kNever, last): those with a time go first, in their
  // order, and only they are sorted. The same order as a stable sort of all.
  size_t timed = 0;
  untimed_scratch_.clear();
  for (const Release& r : releases_) {
    if (r.at == kNever) {
      untimed_scratch_.push_back(r);
    } else {
      releases_[timed++] = r;
    }
  }
  std::copy(untimed_scratch_.begin(), untimed_scratch_.end(),
            releases_.begin() + static_cast<std::ptrdiff_t>(timed));
  std::stable_sort(releases_.begin(), releases_.begin() + static_cast<std::ptrdiff_t>(timed),
                   [](const Release& a, const Release& b) { return a.at < b.at; });
  releases_sorted_ = true;
}

void Pass::Explain(const PendingJob& job, WaitReason reason, uint32_t text,
                   std::optional<TimePoint> at) {
  result_.waits.push_back(sched::Wait{.id = job.id,
                                      .reason = reason,
                                      .text = text,
                                      .ahead = ahead_,
                                      .estimated_start = at,
                                      .index = static_cast<uint32_t>(&job - in_.pending.data())});
}

void Pass::Wait(const PendingJob& job, WaitReason reason, std::string detail,
                std::optional<TimePoint> at) {
  if (ahead_ < explained_) {
    // Quota reasons repeat from job to job of one user: one sentence for a run of them.
    if (result_.texts.empty() || result_.texts.back() != detail)
      result_.texts.push_back(std::move(detail));
    Explain(job, reason, static_cast<uint32_t>(result_.texts.size() - 1), at);
  }
  ++ahead_;
}

void Pass::Wait(const PendingJob& job, WaitReason reason, Known& shape,
                std::optional<TimePoint> at) {
  if (ahead_ < explained_)
    Explain(job, reason, TextOnce(shape.text, [&] { return shape.detail; }), at);
  ++ahead_;
}

bool Pass::RestIsCounted() {
  if (ahead_ < explained_) return false;
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
    if (least > placer_->free_milli(*l.pool)) continue;
    if (!in_.full) return false;
    const Open open = OpenFree(*l.pool);
    if (l.timed <= open.timed || l.untimed <= open.untimed) return false;
  }
  if (!in_.full || reserved_ >= policy_.reservations) return true;
  // Reservations are left, but no later job can get one: Shadow finds nothing for any (see
  // ShadowMayFind), and every pool's untimed hold is made (or there are none).
  if (std::any_of(least_asked_.begin(), least_asked_.end(), [&](const Least& l) {
        return ShadowMayFind(std::min(l.timed, l.untimed), *l.pool);
      }))
    return false;
  if (!policy_.untimed_reservation) return true;
  return std::all_of(least_asked_.begin(), least_asked_.end(),
                     [&](const Least& l) { return untimed_pools_.count(*l.pool) > 0; });
}

Pass::Open Pass::OpenFree(std::string_view pool) {
  for (auto& [name, open, at] : open_free_) {
    if (name == pool && at == changes_) return open;
  }
  Open open;
  for (const NodeSlots& n : placer_->view().nodes) {
    if (!n.schedulable || n.pool != pool) continue;
    for (const GpuSlot& g : n.gpus) {
      if (!g.usable) continue;
      if (g.reserved_from > now_) open.timed += g.free_milli;
      if (g.reserved_from == kNever) open.untimed += g.free_milli;
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
  if (strict_blocker_ && ahead_ >= explained_) {
    ++ahead_;  // behind the blocker, past the explained ones: nothing can change for it
    return true;
  }
  if (std::string why = LimitReason(job, policy_, held_); !why.empty()) {
    Wait(job, WaitReason::kQuota, std::move(why));
    return true;
  }
  if (strict_blocker_) {
    if (ahead_ < explained_) {
      Explain(job, WaitReason::kPriority,
              TextOnce(strict_text_,
                       [&] {
                         return "behind job " + strict_blocker_->ToString() +
                                " (strict queue order, no backfill)";
                       }),
              std::nullopt);
    }
    ++ahead_;
    return true;
  }
  // Deep in a queue that no longer fits: no words to write, no reservation or search left
  // to make, and no room for it. Counting it is all there is to do.
  if (ahead_ >= explained_ && job.resources->milli_gpus > placer_->free_milli(*job.pool) &&
      policy_.backfill && !claims_.count(job.id.value) &&
      (!in_.full || (reserved_ >= policy_.reservations && !SearchesLeft()))) {
    ++ahead_;
    return true;
  }
  return false;
}

bool Pass::CountsGroup(const PendingJob& next, uint32_t g, size_t left) {
  // No words are due, and no node refuses one of them that takes others' jobs.
  const JobQueue::Group& group = in_.queue->group(g);
  if (ahead_ < explained_ || group.avoiding > 0 || (next.Limits().root && refusing_root_))
    return false;
  // One shape, the group's, failed this pass (Consider: it fails again for a job that would
  // not end sooner than the one that failed), and the view only fills as the pass goes on.
  const Resources& r = *next.resources;
  auto it = std::find_if(known_.begin(), known_.end(),
                         [&](const Known& k) { return SamePool(k.pool, next.pool) && *k.r == r; });
  if (it == known_.end()) return false;
  const TimePoint soonest =
      group.shortest_limit == Duration::max() ? kNever : now_ + group.shortest_limit;
  if (!it->never && soonest < it->until) return false;
  if (!NothingToReserve(next, *it)) return false;
  ahead_ += static_cast<int>(left);
  if (MayHaveVictims(next)) preemptors_left_ -= std::min<int64_t>(preemptors_left_, left);
  return true;
}

bool Pass::NothingToReserve(const PendingJob& job, const Known& k) const {
  if (!in_.full || k.never) return true;  // Consider reserves for neither
  if (SearchesLeft() && MayHaveVictims(job)) return false;
  if (reserved_ >= policy_.reservations) return true;
  // Shadow promises nothing for the shape now (ShadowMayFind). A job this pass starts later
  // gives back, when it ends, only GPUs free now, where the shape failed already (and a shadow
  // hides every reservation); a victim search could stop running jobs at a known time.
  if (ShadowMayFind(job.resources->milli_gpus, *job.pool) ||
      (SearchesLeft() && preemptors_left_ > 0))
    return false;
  // The first job of the shape that failed tried its untimed hold, unless the pool has one.
  return !policy_.backfill || !policy_.untimed_reservation || untimed_pools_.count(*job.pool) ||
         k.untimed_failed || !MayHoldUntimed(*job.resources);
}

void Pass::Started(const PendingJob& job, const PlaceRules& rules, std::vector<NodeAllocation> at) {
  held_.Add(*job.project, *job.user, *job.pool, job.resources->milli_gpus, +1);
  ++changes_;
  started_.push_back(at);
  releases_.push_back(Release{rules.until, &started_.back(), job.resources});
  timed_releases_ += rules.until != kNever ? 1 : 0;
  timed_milli_ += rules.until != kNever ? job.resources->milli_gpus : 0;
  releases_sorted_ = false;
  result_.starts.push_back(Start{.id = job.id,
                                 .allocation = std::move(at),
                                 .index = static_cast<uint32_t>(&job - in_.pending.data())});
}

Known& Pass::ShapeOf(const PendingJob& job, const PlaceRules& rules,
                     std::vector<Known>::iterator it, bool skipped, Known& local) {
  if (it != known_.end()) {
    if (!skipped) it->until = std::min(it->until, rules.until);
    return *it;
  }
  const Resources& r = *job.resources;
  bool never = !placer_->EverFits(r, *job.pool);
  std::string detail;
  if (ahead_ >= explained_) {
    // Past the explained waits: no job of this pass will say it (ahead_ only grows).
  } else if (never) {
    detail = "no node in pool " + *job.pool + " can ever hold " + DescribeRequest(r);
  } else if (rules.limits.root && refusing_root_) {
    // Root's job: only the GPUs of nodes that run root's jobs count, and the others are said.
    int64_t free = 0;
    int refusing = 0;
    for (const NodeSlots& n : placer_->view().nodes) {
      if (!n.schedulable || n.pool != *job.pool) continue;
      if (!rules.limits.Allows(n)) {
        refusing += n.refuses_root_jobs ? 1 : 0;
        continue;
      }
      for (const GpuSlot& g : n.gpus) free += g.usable ? g.free_milli : 0;
    }
    detail = "waiting for " + DescribeRequest(r) + "; " + Gpus(free) + " free in pool " +
             *job.pool + " on nodes that run root's jobs (" + std::to_string(refusing) +
             (refusing == 1 ? " node refuses" : " nodes refuse") +
             " them: `baton agent --allow-root-jobs` allows them)";
  } else {
    detail = "waiting for " + DescribeRequest(r) + "; " + Gpus(placer_->free_milli(*job.pool)) +
             " free in pool " + *job.pool;
    // What is short, for the head of the queue (a walk over the pool's nodes each).
    if (ahead_ < detailed_) {
      if (std::string short_of = Shortfall(placer_->view(), r, *job.pool); !short_of.empty())
        detail += "; short of " + short_of;
    }
  }
  local = Known{job.resources, job.pool, never, rules.until, std::move(detail)};
  if (known_.size() >= 32 || Limited(rules)) return local;
  known_.push_back(local);
  return known_.back();
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
  auto it = Limited(rules) ? known_.end()
                           : std::find_if(known_.begin(), known_.end(), [&](const Known& k) {
                               return SamePool(k.pool, job.pool) && *k.r == r;
                             });
  bool skip =
      it != known_.end() && (it->never || rules.until >= it->until) && claim == claims_.end();
  if (!skip) {
    if (auto placed = placer_->Place(r, rules)) {
      Started(job, rules, std::move(*placed));
      return;
    }
  }
  Known local;
  Known& shape = ShapeOf(job, rules, it, skip, local);
  if (shape.never || !in_.full) {
    Wait(job, WaitReason::kResources, shape);
    return;
  }
  if (claim != claims_.end()) {
    // Its victims are still stopping: keep the claim, search no further. What it claimed
    // counts as its project's already: another of its jobs reclaims only what is left of
    // the guarantee, else the two together would exceed it and be preempted back.
    held_.Add(*job.project, *job.user, *job.pool, r.milli_gpus, +1);
    result_.reservations.push_back(*claim->second);
    Wait(job, WaitReason::kResources,
         "waiting for preempted jobs to stop to free " + DescribeRequest(r), claim->second->from);
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
  VictimSearch ctx{in_, policy_, now_, held_, stopping_, levels_, *placer_, running_on_node_};
  std::optional<Claim> found = SearchVictims(job, ctx);
  if (!found) return false;
  for (size_t v : found->victims) {
    const RunningJob& x = in_.running[v];
    stopping_[v] = true;
    result_.preemptions.push_back(Preemption{x.id, job.id, WhyPreempted(x, job, policy_)});
    for (auto& rel : releases_) {
      if (rel.allocation != x.allocation) continue;
      if (rel.at == kNever && found->reservation.from != kNever) {
        timed_releases_ += 1;
        timed_milli_ += rel.resources->milli_gpus;
      }
      rel.at = std::min(rel.at, found->reservation.from);
    }
  }
  releases_sorted_ = false;
  reservation = std::move(found->reservation);
  // As for a kept claim (Consider): what it claimed counts as its project's already.
  held_.Add(*job.project, *job.user, *job.pool, job.resources->milli_gpus, +1);
  return true;
}

std::optional<Reservation> Pass::ShadowOf(const PendingJob& job, Known& shape) {
  if (shape.shadow_none_at == changes_) return std::nullopt;
  auto found = Shadow(*placer_, releases_, *job.resources, *job.pool, now_, job.Limits());
  if (!found) shape.shadow_none_at = changes_;
  return found;
}

void Pass::Reserve(const PendingJob& job, Known& shape) {
  const Resources& r = *job.resources;
  std::optional<Reservation> reservation;
  bool claimed = false;  // the reservation stands on GPUs its victims are giving back
  bool shadowed = false;
  const bool may_preempt = SearchesLeft() && MayHaveVictims(job);
  SortReleases();
  // Whether anything frees within the grace period; if not, the wait is long for sure and
  // the shadow can wait until preemption found nothing.
  const bool soon = !releases_.empty() && releases_.front().at <= now_ + policy_.preempt_grace;
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
      policy_.untimed_reservation && !untimed_pools_.count(*job.pool) && !shape.untimed_failed) {
    reservation = Untimed(*placer_, r, *job.pool, now_, job.Limits());
    untimed = reservation.has_value();
    if (untimed) untimed_pools_.insert(*job.pool);
    shape.untimed_failed = !untimed;
  }
  if (!reservation || (!claimed && reserved_ >= policy_.reservations)) {
    Wait(job, WaitReason::kResources, shape);
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
    Wait(job, WaitReason::kResources,
         shape.detail + "; holding " + nodes + " for it as running jobs end");
  } else {
    Wait(job, WaitReason::kResources, shape, from);
  }
}

PassResult Pass::Run() {
  if (in_.full) in_.view.ClearReservations();
  // 1. Order (as far as the walk goes).
  QueueOrder order(in_, policy_);
  TakeClaims();
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
  refusing_root_ = std::any_of(in_.view.nodes.begin(), in_.view.nodes.end(),
                               [](const NodeSlots& n) { return n.refuses_root_jobs; });
  placer_.emplace(in_.view);
  CountRunning();
  DecidePreemption();
  // What the running jobs hold is read only by limits and preemption searches: most passes
  // of most clusters have neither.
  if (preemption_ || AnyLimit(policy_)) CountHeld();
  strict_blocker_ = in_.blocker;
  ahead_ = in_.ahead;
  known_.reserve(32);
  result_.waits.reserve(std::min(order.size(), static_cast<size_t>(explained_)));
  if (in_.queue != nullptr) {
    order.CountGroups([this](const PendingJob& next, uint32_t g, size_t left) {
      return CountsGroup(next, g, left);
    });
  }
  bool stopped = false;
  for (walked_ = 0; walked_ < order.size(); ++walked_) {
    if (RestIsCounted()) {
      ahead_ += static_cast<int>(order.size() - walked_);
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
