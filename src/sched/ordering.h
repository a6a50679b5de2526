// Queue order: each waiting job's score is the sum of weight x factor over its priority class,
// its project's and user's fair share (decayed usage against configured shares, Slurm's
// "fair tree" in two levels), its age (up to policy.max_age), its size, and its least-attained-
// service level; the highest score goes first, ties by submit order (lower id).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/policy.h"
#include "sched/fair_share.h"
#include "sched/pass.h"

namespace baton::sched {

// The factors of one job; `shares` caches per-project/user fair-share factors of a pass.
// Names are borrowed (string_view) from the pass's jobs, policy and usage, which outlive it.
class FairShareTable {
 public:
  FairShareTable(const UsageLedger* usage, const Policy* policy,
                 const std::vector<PendingJob>& pending, const std::vector<RunningJob>& running);
  // `account`: the jobs' PendingJob::account, when given (>= 0): the factor is looked up by it.
  double Factor(const std::string& project, const std::string& user, int32_t account = -1);

 private:
  double Lookup(const std::string& project, const std::string& user);

  struct PairHash {
    size_t operator()(const std::pair<std::string_view, std::string_view>& p) const {
      return std::hash<std::string_view>()(p.first) * 31 + std::hash<std::string_view>()(p.second);
    }
  };

  const UsageLedger* usage_;
  const Policy* policy_;
  double share_total_ = 0;
  std::unordered_map<std::pair<std::string_view, std::string_view>, double, PairHash> cache_;
  std::unordered_map<std::string_view, int> users_per_project_;
  std::vector<double> by_account_;             // Factor by account; NaN until asked
  std::string_view last_project_, last_user_;  // the last Factor asked, and its answer
  double last_ = 0;
  bool has_last_ = false;
};

// The fair-share factor of a pass whose policy does not weigh it (Weights::fairshare == 0): it
// changes no score, so the pass does not work it out (a table per pass, a lookup per job), and
// what shows a job's factors works it out when asked (ShownFairShare).
inline constexpr double kUnweighed = -1;

// Fills in the fair-share factors a pass left kUnweighed, from the usage now: a table of the
// queue's accounts (one waiting job of each group) and the running jobs', as a pass makes it.
class ShownFairShare {
 public:
  ShownFairShare(const UsageLedger* usage, const Policy* policy) : usage_(usage), policy_(policy) {}
  // `heads` and `running` are asked for on the first factor to fill, and only then.
  void Fill(QueueFactors& f, const PendingJob& job,
            const std::function<std::vector<PendingJob>()>& accounts);

 private:
  const UsageLedger* usage_;
  const Policy* policy_;
  std::vector<PendingJob> accounts_;
  std::optional<FairShareTable> table_;
};

// The least-attained-service level of a job that has run `service` GPU-seconds: the number of
// Policy::las_thresholds it has reached.
inline int LasLevel(const std::vector<double>& thresholds, double service) {
  return static_cast<int>(std::upper_bound(thresholds.begin(), thresholds.end(), service) -
                          thresholds.begin());
}
inline int LasLevel(const Policy& policy, double service) {
  return LasLevel(policy.las_thresholds, service);
}
// Whether LAS preemption may still stop `r` (Policy::las_preemption_budget).
inline bool LasBudgetLeft(const Policy& policy, const RunningJob& r) {
  return !policy.las_preemption_budget || r.preemptions < *policy.las_preemption_budget;
}

// `shares` may be null where the policy does not weigh fair share: the factor is then kUnweighed.
Factors ComputeFactors(const PendingJob& job, const Policy& policy, TimePoint now,
                       int64_t cluster_milli, FairShareTable* shares);
// The same with the fair-share factor given, and only the parts of a policy that score. A factor
// whose weight is 0 adds nothing to the score, whatever its value (kUnweighed included).

Factors FactorsOf(const PendingJob& job, const Weights& w, Duration max_age,
                  const std::vector<double>& las_thresholds, TimePoint now, int64_t cluster_milli,
                  double fairshare);

// The pass's waiting jobs in start order, made only as far as the pass walks. Given the jobs
// (PassInput::pending): every job's factors first (the order needs every score), then the
// order a chunk at a time (selection, then a sort of the chunk), so a pass that stops after the
// first few hundred jobs of a long queue does not sort all of it. Given the queue
// (PassInput::queue): its groups' heads are merged, each job scored as it comes up, and added
// to PassInput::pending. Either way the order is the one a full sort by (score desc, id) gives.
// Given the queue, the pass may also say, of a group whose next job comes up, that every job
// left of it would only be counted (CountGroups): the merge drops the group there, and the
// order comes without those jobs (size() falls by them).
class QueueOrder {
 public:
  // A job in the order: its score, its id for ties (the older first), its index.
  struct Key {
    double score;
    int64_t id;
    uint32_t index;
  };
  static bool Higher(const Key& a, const Key& b) {
    return a.score != b.score ? a.score > b.score : a.id < b.id;
  }
  QueueOrder(PassInput& in, const Policy& policy);
  size_t size() const { return size_; }
  // Given the queue: `counts(next, group, left)` is asked as a group's next job comes up, with
  // the jobs of the group left to order (`next` among them); true drops them.
  using Counts = std::function<bool(const PendingJob& next, uint32_t group, size_t left)>;
  void CountGroups(Counts counts) { counts_ = std::move(counts); }
  // Whether the order has an `i`-th job (ordering up to it): false once every job left was
  // dropped with its group.
  bool Reach(size_t i) {
    if (i >= sorted_) SortTo(i + 1);
    return i < keys_.size();
  }
  // Moves the waiting jobs among `ids` to the front, in score order among themselves.
  void Front(const std::vector<JobId>& ids);
  // The `i`-th job in order (an index into in.pending), ordering up to it.
  uint32_t at(size_t i) {
    if (i >= sorted_) SortTo(i + 1);
    return keys_[i].index;
  }
  // PassResult::order: every job, the ordered part first (its length in `sorted`); given the
  // queue, only the jobs it ordered, in order, and `sorted` as far as no job of a dropped group
  // would have come between them.
  void Entries(const PassInput& in, std::vector<QueueEntry>& out, size_t* sorted) const;
  // Given the queue: one job of each group (what the whole queue asks, up to the order).
  const std::vector<PendingJob>& heads() const { return heads_; }
  const std::vector<size_t>& head_counts() const { return head_counts_; }  // each group's jobs
  // ... and whether a job of it may have a time limit (JobQueue::Group::shortest_limit).
  const std::vector<char>& heads_timed() const { return heads_timed_; }
  // Given the queue: what the rest of the order is made of (PassResult::rest).
  OrderRest TakeRest();

 private:
  void SortTo(size_t end);
  // Given the queue: a group's next job (after `next`), by its order.
  struct Run {
    uint32_t group;
    size_t next = 0;               // into the group's members, or `sorted`
    std::vector<uint32_t> sorted;  // a group that is not monotone: its members, in order
    size_t taken = 0;              // its jobs in the order so far
    size_t fronted = 0;            // its jobs Front took
  };
  struct Head {
    Key key;  // index: the run's
    Factors factors;
    const PendingJob* record;
  };
  void Start();                        // the runs, on the first need
  void Advance(Run& run, uint32_t r);  // pushes the run's next job, if any
  void Pull();                         // the next job of the merge, into in.pending
  Factors Score(const PendingJob& job);

  PassInput& in_;
  const Policy& policy_;
  size_t size_ = 0;
  std::vector<Key> keys_;         // compact: a queue of 100,000 stays in cache while it is ordered
  std::vector<Factors> factors_;  // by index into in.pending
  size_t sorted_ = 0;             // keys_[0, sorted_) are in order
  // The next chunk's size: a pass walks at least the first PassInput::explained jobs that do
  // not start. Doubles, so that a whole walk stays n log n.
  size_t chunk_;
  int64_t cluster_milli_ = 0;
  std::optional<FairShareTable> shares_;
  // Given the queue.
  std::vector<PendingJob> heads_;
  std::vector<size_t> head_counts_;
  std::vector<char> heads_timed_;
  std::vector<Run> runs_;
  std::vector<Head> heap_;        // the runs' next jobs, the highest on top
  std::vector<int64_t> fronted_;  // jobs Front took out of their runs
  bool started_ = false;
  Counts counts_;
  std::optional<size_t> dropped_at_;  // keys_.size() when the first group was dropped
  OrderRest rest_;
};

// The whole order at once (indices into in.pending); their factors go to `entries`, in order.
std::vector<uint32_t> OrderQueue(PassInput& in, const Policy& policy,
                                 std::vector<QueueEntry>& entries);

}  // namespace baton::sched
