// A small driver for scheduling passes in tests: jobs that run for a fixed duration on a
// cluster view, advanced from event to event. It calls the real sched::RunPass and applies its
// decisions the way the controller does (starts, preemptions with a grace period, requeue).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/policy.h"
#include "sched/fair_share.h"
#include "sched/job_queue.h"
#include "sched/scheduler.h"

namespace baton::sched::testing {

inline NodeSlots MakeNode(std::string name, int gpus, std::string model = "H100-80GB",
                          std::string topology = "nvswitch", std::string pool = "default") {
  NodeSlots n;
  n.name = std::move(name);
  n.pool = std::move(pool);
  for (int i = 0; i < gpus; ++i) {
    GpuSlot g{.index = i,
              .model = model,
              .memory_bytes = 80LL << 30,
              .free_milli = 1000,
              .free_memory_bytes = 80LL << 30};
    g.numa_node = i < gpus / 2 ? 0 : 1;
    g.pcie_switch = gpus >= 4 ? i / (gpus / 4) : 0;
    g.island = topology == "nvswitch"   ? 0
               : topology == "pairs"    ? i / 2
               : topology == "cubemesh" ? i / 4
                                        : i;
    n.gpus.push_back(g);
  }
  n.total_cpus = n.free_cpus = 128;
  n.total_memory_bytes = n.free_memory_bytes = 1LL << 40;
  return n;
}

// Jobs for a single RunPass call, with the strings and allocations they borrow kept alive.
inline const TimePoint kPassNow = FromMillis(1'700'000'000'000);

struct PassJobs {
  std::string project = "p", user = "u", pool = "default";
  std::vector<Resources> resources{16};  // stable addresses for the borrowed pointers
  std::vector<std::vector<NodeAllocation>> allocations{16};

  PendingJob Pending(int64_t id, int64_t milli, double service, TimePoint submitted = kPassNow) {
    resources[id] = Resources{.milli_gpus = milli};
    return PendingJob{.id = JobId{id},
                      .resources = &resources[id],
                      .project = &project,
                      .user = &user,
                      .pool = &pool,
                      .submitted = submitted,
                      .service = service};
  }
  // A running job on node `node`'s GPUs [first, first + count), taken out of `view`.
  RunningJob Running(ClusterView& view, int64_t id, const std::string& node, int first, int count,
                     double service, Priority priority = Priority::kNormal) {
    resources[id] = Resources{.milli_gpus = count * 1000};
    NodeAllocation a{.node = node};
    for (int g = first; g < first + count; ++g) a.gpus.push_back(g);
    allocations[id] = {a};
    view.Apply(allocations[id], resources[id], +1);
    return RunningJob{.id = JobId{id},
                      .resources = &resources[id],
                      .allocation = &allocations[id],
                      .priority = priority,
                      .project = &project,
                      .user = &user,
                      .pool = &pool,
                      .started = kPassNow - std::chrono::hours(1),
                      .last_checkpoint = kPassNow - std::chrono::hours(1),
                      .service = service};
  }
};

struct SimJob {
  JobId id;
  Resources r;
  Priority priority = Priority::kNormal;
  std::string project = "p";
  std::string user = "u";
  std::string pool = "default";
  Duration limit{0};
  Duration duration = std::chrono::minutes(10);
  TimePoint submitted{};
  std::optional<TimePoint> started;
  std::optional<TimePoint> ended;
  std::optional<TimePoint> checkpoint;
  std::vector<NodeAllocation> allocation;
  std::optional<TimePoint> stop_at;  // being preempted: ends here
  int restarts = 0;
  double service = 0;  // GPU-seconds of its ended attempts (least attained service)
  WaitReason reason = WaitReason::kNone;
  std::string detail;
  std::optional<TimePoint> estimated_start;
  bool preemptible = true;  // false: never a victim, never on spot, within its guarantee
};

class MiniSim {
 public:
  explicit MiniSim(ClusterView view, Policy policy = {})
      : view_(std::move(view)), policy_(std::move(policy)), usage_(policy_.fairshare_half_life) {
    usage_.Advance(now_);
    queue_.SetLevels(policy_.las_thresholds);
  }

  SimJob& Submit(SimJob job) {
    job.id = JobId{next_id_++};
    job.submitted = now_;
    SimJob& j = jobs_[job.id] = std::move(job);
    return j;
  }
  // A job that arrives at `at` (RunToEnd submits it then).
  void SubmitAt(TimePoint at, SimJob job) { arrivals_.emplace(at, std::move(job)); }
  const std::map<JobId, SimJob>& jobs() const { return jobs_; }
  SimJob& job(JobId id) { return jobs_.at(id); }
  SimJob& job(int64_t id) { return jobs_.at(JobId{id}); }
  const ClusterView& view() const { return view_; }
  TimePoint now() const { return now_; }
  UsageLedger& usage() { return usage_; }
  std::vector<std::pair<JobId, JobId>>& preemptions() { return preemptions_; }
  // Per preemption: its reason and when it was decided.
  const std::vector<std::pair<PreemptReason, TimePoint>>& preemption_reasons() const {
    return preemption_reasons_;
  }
  // GPU-seconds `j` has had by now, its running attempt included.
  double Service(const SimJob& j) const {
    double s = j.service;
    if (j.started && !j.ended) {
      s += static_cast<double>(j.r.milli_gpus) / 1000.0 *
           static_cast<double>((now_ - *j.started).count()) / 1000.0;
    }
    return s;
  }
  // Per preemption: how many outside events (arrivals, jobs ending on their own) came before.
  const std::vector<int>& preemption_epochs() const { return preemption_epochs_; }

  // PassInput::explained of every pass.
  int explained = kExplainedWaits;
  // Full passes are given a JobQueue that waiting jobs join and leave as they come and go
  // (PassInput::queue), as the controller gives them, instead of the waiting jobs.
  bool grouped = false;

  // A waiting job's record for a pass.
  static PendingJob Record(JobId id, const SimJob& j) {
    return PendingJob{.id = id,
                      .resources = &j.r,
                      .priority = j.priority,
                      .project = &j.project,
                      .user = &j.user,
                      .pool = &j.pool,
                      .submitted = j.submitted,
                      .time_limit = j.limit,
                      .service = j.service,
                      .preemptible = j.preemptible};
  }

  PassResult Pass(bool full = true) {
    if (grouped) SyncQueue();
    PassInput in;
    in.view = view_;
    in.policy = &policy_;
    in.usage = &usage_;
    in.now = now_;
    in.full = full;
    in.explained = explained;
    if (full) in.claims = claims_;
    for (auto& [id, j] : jobs_) {
      if (j.ended) continue;
      if (!j.started) {
        if (!(grouped && full)) in.pending.push_back(Record(id, j));
      } else {
        in.running.push_back(
            RunningJob{.id = id,
                       .resources = &j.r,
                       .allocation = &j.allocation,
                       .priority = j.priority,
                       .project = &j.project,
                       .user = &j.user,
                       .pool = &j.pool,
                       .started = *j.started,
                       .expected_end = j.limit.count() > 0 ? *j.started + j.limit : kNever,
                       .last_checkpoint = j.checkpoint.value_or(*j.started),
                       .stopping = j.stop_at.has_value(),
                       .service = Service(j),
                       .preemptible = j.preemptible});
      }
    }
    usage_.Advance(now_);
    if (grouped && full) in.queue = &queue_;
    PassResult result = RunPass(std::move(in));
    if (full) {
      view_.ClearReservations();
      claims_.clear();
      for (const auto& r : result.reservations) {
        MarkReservation(view_, r);
        if (r.claim) claims_.push_back(r);
      }
    }
    for (const auto& w : result.waits) {
      SimJob& j = jobs_.at(w.id);
      j.reason = w.reason;
      j.detail = result.Detail(w, now_);
      j.estimated_start = w.estimated_start;
    }
    for (const auto& p : result.preemptions) {
      SimJob& v = jobs_.at(p.victim);
      if (!v.stop_at) v.stop_at = now_ + policy_.preempt_grace;
      preemptions_.emplace_back(p.for_job, p.victim);
      preemption_epochs_.push_back(epoch_);
      preemption_reasons_.emplace_back(p.reason, now_);
    }
    for (const auto& s : result.starts) {
      SimJob& j = jobs_.at(s.id);
      j.allocation = s.allocation;
      j.started = now_;
      view_.Apply(j.allocation, j.r, +1);
      usage_.AddRate(j.project, j.user, j.r.milli_gpus);
    }
    return result;
  }

  // When the next job ends (or a preempted one stops); nullopt when nothing runs.
  std::optional<TimePoint> NextEnd() const {
    std::optional<TimePoint> next;
    for (const auto& [id, j] : jobs_) {
      if (!j.started || j.ended) continue;
      TimePoint end = *j.started + j.duration;
      if (j.limit.count() > 0) end = std::min(end, *j.started + j.limit);
      if (j.stop_at) end = std::min(end, *j.stop_at);
      if (!next || end < *next) next = end;
    }
    return next;
  }

  // Moves time to `t`, ending (or requeuing, when preempted) the jobs due by then.
  void AdvanceTo(TimePoint t) {
    usage_.Advance(t);
    now_ = t;
    for (auto& [id, j] : jobs_) {
      if (!j.started || j.ended) continue;
      TimePoint end = *j.started + j.duration;
      if (j.limit.count() > 0) end = std::min(end, *j.started + j.limit);
      bool preempted = j.stop_at && *j.stop_at <= t && *j.stop_at < end;
      if (!preempted && end > t) continue;
      view_.Apply(j.allocation, j.r, -1);
      usage_.AddRate(j.project, j.user, -j.r.milli_gpus);
      j.service = Service(j);  // now_ is the attempt's end
      j.allocation.clear();
      if (preempted) {
        j.started.reset();
        j.stop_at.reset();
        j.checkpoint.reset();
        j.restarts += 1;
      } else {
        j.ended = t;
        ++epoch_;
      }
    }
  }

  // Passes and advances until every job ended or `max_steps` events passed; true if all ended.
  // `after_pass` (if given) sees every pass's result.
  template <class F = void (*)(const PassResult&)>
  bool RunToEnd(
      int max_steps = 10'000, F after_pass = [](const PassResult&) {}) {
    for (int step = 0; step < max_steps; ++step) {
      while (!arrivals_.empty() && arrivals_.begin()->first <= now_) {
        Submit(std::move(arrivals_.begin()->second));
        arrivals_.erase(arrivals_.begin());
        ++epoch_;
      }
      after_pass(Pass());
      auto next = NextEnd();
      if (!arrivals_.empty() && (!next || arrivals_.begin()->first < *next))
        next = arrivals_.begin()->first;
      if (!next) {
        return std::all_of(jobs_.begin(), jobs_.end(),
                           [](const auto& e) { return e.second.ended.has_value(); });
      }
      AdvanceTo(*next);
    }
    return false;
  }

  // The queue holds the jobs that wait, each with its record as it is now (a requeued job
  // comes back with its service).
  void SyncQueue() {
    for (auto& [id, j] : jobs_) {
      const bool waits = !j.started && !j.ended;
      Job& shadow = shadows_[id];
      shadow.id = id;
      shadow.spec.priority = j.priority;
      if (waits && !queued_.count(id)) {
        queue_.Add(shadow, Record(id, j));
        queued_.insert(id);
      } else if (!waits && queued_.erase(id) > 0) {
        queue_.Remove(shadow);
      }
    }
  }

  // Whether every GPU's free share equals its capacity minus what the running jobs hold.
  bool Consistent() const {
    std::map<std::pair<std::string, int>, int64_t> used;
    for (const auto& [id, j] : jobs_) {
      if (!j.started || j.ended) continue;
      for (const auto& part : j.allocation) {
        for (int g : part.gpus) used[{part.node, g}] += part.milli_per_gpu;
      }
    }
    for (const auto& n : view_.nodes) {
      for (const auto& g : n.gpus) {
        int64_t u = used[{n.name, g.index}];
        if (u > 1000 || g.free_milli != 1000 - u) return false;
      }
    }
    return true;
  }

 private:
  ClusterView view_;
  Policy policy_;
  UsageLedger usage_;
  std::map<JobId, SimJob> jobs_;
  int64_t next_id_ = 1;
  TimePoint now_ = FromMillis(1'790'000'000'000);
  std::vector<std::pair<JobId, JobId>> preemptions_;  // (for, victim)
  std::multimap<TimePoint, SimJob> arrivals_;
  std::vector<Reservation> claims_;
  std::vector<int> preemption_epochs_;
  std::vector<std::pair<PreemptReason, TimePoint>> preemption_reasons_;
  int epoch_ = 0;
  JobQueue queue_;                // with `grouped`
  std::map<JobId, Job> shadows_;  // the queue's jobs
  std::set<JobId> queued_;
};

inline Resources Gpus(int64_t milli, int nodes = 1) {
  Resources r;
  r.milli_gpus = milli;
  r.nodes = nodes;
  return r;
}

}  // namespace baton::sched::testing
