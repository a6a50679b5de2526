// The queue of waiting jobs (pending, their dependencies met) and the planning of scheduling
// passes over it: which jobs the next pass looks at, and when the whole queue is ordered again.
//
// Three kinds of pass:
//   full:        the whole queue, ordered, with reservations and preemption; its order is kept
//                (GET /v1/queue, a job's position, and the head passes that follow). Due every
//                full_pass_interval (ages and usage change the order), when asked (a policy,
//                node, drain or health change), when GPUs were freed and no order is known yet,
//                and always in strict order (no backfill): an arrival must not pass a job ahead.
//   head:        GPUs were freed between full passes (jobs end hundreds of times a second on a
//                busy cluster; ordering the whole queue each time would not pay): the first
//                kHeadPass jobs of the last order, up to kHeadPass arrivals since it, and the
//                new arrivals.
//   incremental: only the new arrivals, against the reservations already made.
// Quiet strict order (no backfill, the order the queue's own by class and submit time, no
// preemption): the order never changes by itself, so no full pass is due by time; and while
// the last full pass's first waiting job (its blocker) still waits, and nothing was freed or
// what was freed still cannot hold it (the caller's `stuck`), no pass runs for frees, and
// arrivals at the tail of the queue get an incremental pass that has them wait behind it:
// a full pass would start nothing and change no other job's place.
// Groups: a full pass need not score every waiting job. Jobs of one priority class, project
// and user (one fair-share factor), pool, request (one shape: Resources) and least-attained-
// service level score alike but for age, and age does not fall as the submit time is earlier: while
// a group's submit times do not fall as its ids rise (`monotone`), its jobs in id order are in the
// pass's order (ties by id, as the pass breaks them). A pass given the queue (PassInput::queue)
// merges the groups' heads as far as it walks, and the rest of its order is made from the groups
// when asked, with that pass's factors (OrderedHead). A group whose times fall (a clock set back)
// is scored and sorted whole by its pass. As a group is one shape, a pass can also tell when
// all of a group's jobs left would only be counted, and merge no more of it (QueueOrder).
// Re-pass rule: when a pass that was not full leaves an arrival waiting that could preempt (a
// lower class runs, or its project has a guarantee), a full pass follows at once, unless one
// ran in the last kRepassGap (then at the next batch).
// Owned by the Controller; the jobs are borrowed from its job map (whose nodes never move).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/job.h"
#include "sched/pass.h"

namespace baton::sched {

class JobQueue {
 public:
  static constexpr int kHeadPass = 256;
  static constexpr Duration kRepassGap = std::chrono::milliseconds(200);

  // A job joined the queue (it is pending and may run) / left it (any other state).
  // `record`: what a pass reads of it (PendingJob), made once here, as it does not change
  // while the job waits: a full pass copies the records in queue order, one after another,
  // instead of reading each job's scattered record. Without one, PendingRecord's.
  void Add(const Job& job, const PendingJob& record);
  void Add(const Job& job) { Add(job, PendingRecord(job)); }
  // The record of a waiting job (Add's), or nullptr.
  const PendingJob* Find(JobId id) const;
  // A job's record for a pass, with no account number and its own copy of the pool's name.
  static PendingJob PendingRecord(const Job& job);
  void Remove(const Job& job);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  void RequestFull() { full_due_ = true; }
  void Freed() { freed_ = true; }
  bool freed() const { return freed_; }  // GPUs were freed since the last pass
  // Time passed: a full pass is due every `interval` while jobs wait.
  void Tick(TimePoint now, Duration interval);

  enum class Kind { kNone, kFull, kHead, kIncremental };
  struct Plan {
    Kind kind = Kind::kNone;
    std::vector<const Job*> jobs;     // full: in queue order (class, then id)
    std::vector<PendingJob> records;  // full: the jobs' records (Add), one per job; else empty
    // full: nothing in `jobs` or `records`: the pass is given the queue (PassInput::queue).
    bool grouped = false;
    bool partial = false;  // full: only the first jobs of the queue (Next's `limit`)
    // A quiet strict incremental pass (PassInput::blocker, ::ahead).
    std::optional<JobId> blocker;
    int ahead = 0;
  };
  // The job `id` if it still waits in the queue (pending, its dependencies met), else nullptr.
  using Lookup = std::function<const Job*(JobId id)>;
  // What the next pass looks at; kNone when nothing changed since the last. `strict`: strict
  // order (no backfill). `limit` > 0: a full pass is given only the first `limit` jobs of the
  // queue order, for a caller whose pass order is the queue's own (see First).
  // `quiet`: strict order by class and submit time alone, without preemption (see above);
  // `stuck`: the blocker could not start on what is free now, and no job ahead of it waits.
  // `grouped`: a full pass that walks the groups (see above) is given none of the jobs.
  Plan Next(TimePoint now, bool strict, const Lookup& waiting, size_t limit = 0, bool quiet = false,
            bool stuck = false, bool grouped = false);
  std::optional<JobId> blocker() const {
    return blocker_ ? std::optional<JobId>(JobId{blocker_->id}) : std::nullopt;
  }
  // The first job a full pass left waiting for resources in strict order (nullptr: none).
  void Blocked(const Job* job) {
    blocker_ = job != nullptr ? std::optional<Key>(KeyOf(*job)) : std::nullopt;
  }
  // The first `limit` jobs in queue order, and whether more wait: a pass given too few asks
  // for more. With `records`, their records (Add) go there, in the same order.
  std::pair<std::vector<const Job*>, bool> First(size_t limit,
                                                 std::vector<PendingJob>* records = nullptr) const;
  // Whether every waiting job has the same priority class (then queue order is submit order).
  bool OneClass() const;
  // The highest priority class a waiting job has (-1 when none waits).
  int HighestClass() const;
  // A full pass ordered the queue so: every job it looked at, the first `sorted` highest
  // first, the rest in no order yet (ordered here on the first need: most passes' whole order
  // is never asked for).
  // `partial`: the pass was given only the head of the queue (Plan::partial).
  void Ordered(std::vector<QueueEntry> order, size_t sorted, bool partial);
  // A pass given the queue ordered `head`, jobs it walked, in order, the first `sorted` of
  // them with no other job between; the rest is made from the groups with its factors
  // (`rest`, and `policy`'s weights at `now`) when asked.
  void OrderedHead(std::vector<QueueEntry> head, size_t sorted, OrderRest rest, TimePoint now,
                   const Policy& policy);

  // The groups (see above). Members are in id order; a member that left is blank (job =
  // nullptr) until the group closes up.
  struct Member {
    int64_t id;
    const Job* job;  // nullptr: left the queue
    uint64_t seq;    // the Add that put it here: JobQueue counts them
    PendingJob record;
  };
  struct Group {
    std::vector<Member> members;
    size_t live = 0;
    size_t blanks = 0;
    uint32_t live_at = 0;  // its place in live_groups()
    bool monotone = true;  // submit times do not fall as ids rise
    // Members that avoid nodes (PendingJob::avoid not empty: a waiting job's list does not
    // change, as it grows only when a launch fails), or name nodes or want theirs to themselves
    // (Resources::Constrained).
    size_t avoiding = 0;
    // The shortest time limit of a member since the group was last empty (none: max()).
    Duration shortest_limit = Duration::max();
  };
  // The groups that have waiting jobs, as indices for group().
  const std::vector<uint32_t>& live_groups() const { return live_groups_; }
  const Group& group(uint32_t g) const { return groups_[g]; }
  size_t groups_count() const { return groups_.size(); }
  // A group's first waiting member (nullptr: none waits).
  const Member* Head(uint32_t g) const {
    for (const Member& m : groups_[g].members) {
      if (m.job != nullptr) return &m;
    }
    return nullptr;
  }
  // The group of a waiting job.
  std::optional<uint32_t> GroupOfJob(JobId id) const {
    const Entry* e = EntryOf(id);
    return e != nullptr ? std::optional<uint32_t>(e->group) : std::nullopt;
  }
  // Policy::las_thresholds: the levels that split groups; the groups are made again when they
  // change.
  void SetLevels(const std::vector<double>& thresholds);
  // Whether the re-pass rule wants a full pass right after a pass of `kind` now.
  bool WantsRepass(Kind kind, bool could_preempt, TimePoint now);

  // A job's place in the last full order (1 = next) and its factors, if it was in it; after a
  // pass given only the head of the queue (Plan::partial), a job past it is placed by queue order.
  std::optional<std::pair<int64_t, QueueFactors>> Position(JobId id) const;
  const std::vector<QueueEntry>& order() const {
    SortRest();
    return order_;
  }
  // Every waiting job, by class then id.
  template <typename F>
  void ForEach(const F& f) const {
    for (int c = kClasses - 1; c >= 0; --c) {
      for (const Entry& e : by_class_[c]) {
        if (e.job != nullptr) f(*e.job);
      }
    }
  }

 private:
  // Queue order: higher priority first, then lower id (submit order).
  struct Key {
    int priority;
    int64_t id;
    const Job* job = nullptr;
    bool operator<(const Key& o) const {
      return priority != o.priority ? priority > o.priority : id < o.id;
    }
  };
  static Key KeyOf(const Job& job) {
    return Key{static_cast<int>(job.spec.priority), job.id.value, &job};
  }
  // A head pass's jobs: the head of the last order, then arrivals since it; `taken` gets
  // their ids, sorted.
  void AddHead(Plan& plan, std::vector<int64_t>& taken);
  // Orders the part of order_ the last full pass left unordered (making it first from the
  // groups after OrderedHead).
  void SortRest() const { SortTo(std::numeric_limits<size_t>::max()); }
  // ... its first `end` entries only.
  void SortTo(size_t end) const;
  // Group membership: the group of the record's kind (made on first need), and leaving it.
  uint32_t GroupOf(const PendingJob& record);
  void Join(uint32_t g, const Job& job, const PendingJob& record);
  void Leave(uint32_t g, int64_t id);

  // Whether the arrivals (fresh_, sorted) are the last jobs of the queue order, after every
  // other waiting job; then `tail` holds them in queue order.
  bool AtTail(std::vector<const Job*>& tail, const Lookup& waiting) const;

  // The queue itself: per priority class, its jobs by id (submit order), so that queue order
  // is the classes' runs one after another, highest first. Contiguous: a pass walks the head
  // of a queue of 100,000 every few milliseconds, and a tree's nodes are scattered. A job that
  // leaves is blanked (job = nullptr) and the run closed up once blanks are half of it.
  static constexpr int kClasses = 4;
  struct Entry {
    int64_t id;
    const Job* job;
    uint32_t group;  // groups_[group] holds its record
  };
  static int ClassOf(const Job& job) { return static_cast<int>(job.spec.priority) & 3; }
  // The entry of a waiting job, or nullptr.
  const Entry* EntryOf(JobId id) const;
  // The member of the entry `e` (nullptr when it left).
  const Member* MemberOf(const Entry& e) const;
  std::vector<Entry> by_class_[kClasses];
  size_t blank_[kClasses] = {0, 0, 0, 0};
  int64_t per_class_[kClasses] = {0, 0, 0, 0};  // waiting jobs per priority class
  size_t size_ = 0;
  std::vector<JobId> fresh_;  // joined since the last pass
  bool full_due_ = false;     // asked for (RequestFull)
  bool tick_due_ = false;     // due by time (Tick)
  bool freed_ = false;
  std::optional<Key> blocker_;  // Blocked
  std::set<Key> since_full_;    // arrivals since the last full pass (not in order_)
  std::vector<int64_t> taken_;  // a head pass's jobs (AddHead): its buffer
  TimePoint last_full_{};
  mutable std::vector<QueueEntry> order_;  // the last full pass's order
  mutable size_t sorted_ = 0;              // order_[0, sorted_) is in order
  bool order_partial_ = false;             // order_ holds only the head of the queue
  mutable std::unordered_map<int64_t, uint32_t> position_;  // id -> index in order_, on demand
  mutable bool position_stale_ = false;

  // Groups: (class, level, Resources' fields, pool, project, user, preemptible) -> index into
  // groups_.
  using GroupKey = std::tuple<int, int, int64_t, std::string, int64_t, int, int, int64_t,
                              std::string, std::string, std::string, bool>;
  std::map<GroupKey, uint32_t> group_index_;
  std::vector<Group> groups_;
  std::vector<uint32_t> live_groups_;
  std::vector<double> levels_;  // Policy::las_thresholds
  uint64_t seq_ = 0;            // Adds so far
  // After OrderedHead: what the rest of that pass's order is made of, until it is made.
  struct Rest {
    uint64_t seq = 0;  // members that joined later were not in the pass
    TimePoint now{};
    int64_t cluster_milli = 0;
    Weights weights;
    Duration max_age{};
    std::vector<double> levels;
    std::vector<double> fairshare;  // by group; NaN: the group had no jobs then (and see
                                    // OrderRest::fairshare)
    std::vector<QueueEntry> left;   // members that left since, with their factors
  };
  mutable std::optional<Rest> rest_;
  mutable std::vector<int64_t> rest_taken_;  // MakeRest's buffer: the ids already in order_
  // A member's factors as the pass that ordered the head saw them.
  static QueueFactors RestFactors(const Rest& rest, const PendingJob& record, uint32_t g);
  // Makes the rest of the order from the groups (SortRest orders it).
  void MakeRest() const;
};

}  // namespace baton::sched
