// The controller's running jobs by id, in one sorted array: every scheduling pass reads all of
// them, in id order, and a tree's nodes are scattered over the heap. Starts and ends insert
// and erase in place (a few thousand pointers moved at most).
//
// Beside each job, what a pass reads of it (sched::RunningJob), kept as the job changes instead
// of made again from the job's record at every pass: a pass reads a few hundred of them, each
// from fields spread over a thousand bytes of its job. What depends on the time (how long it has
// run, and for a job whose program has not started yet, its start) is brought up to the pass's
// time by Records.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/job.h"
#include "sched/pass.h"

namespace baton::control {

// GPU-seconds that `milli_gpus` held from `start` to `now` (0 when `now` is not after it):
// what a running attempt has used so far (AttemptService, job_cost.h).
inline double GpuSecondsRun(int64_t milli_gpus, TimePoint start, TimePoint now) {
  if (now <= start) return 0;
  return static_cast<double>(milli_gpus) / 1000.0 * static_cast<double>((now - start).count()) /
         1000.0;
}

class RunningJobs {
 public:
  using Entry = std::pair<JobId, Job*>;
  // What a job's record is brought up to a time from.
  struct Clock {
    double gpu_seconds = 0;  // Job::gpu_seconds: its ended attempts
    // What it holds, in GPUs (its milli-GPUs / 1000.0, GpuSecondsRun's first step): worked
    // out once, not at every pass for every running job.
    double gpus = 0;
    Duration time_limit{0};     // JobSpec::time_limit (0: none)
    bool started = false;       // Job::started_at is known (RunningJob::started is it)
    bool checkpointed = false;  // Job::last_checkpoint is known (RunningJob::last_checkpoint)
  };
  struct Kept {
    sched::RunningJob record;
    Clock clock;
  };

  // Brings the time-dependent parts of `record` to `now`: what AttemptService counts, and
  // for a job not started yet, a start of `now`.
  static void AtTime(sched::RunningJob& record, const Clock& clock, TimePoint now) {
    if (!clock.started) {
      record.started = now;
      record.expected_end = clock.time_limit.count() > 0 ? now + clock.time_limit : sched::kNever;
      if (!clock.checkpointed) record.last_checkpoint = now;
    }
    // GpuSecondsRun, to the last bit.
    const bool ran = clock.started && now > record.started;
    record.service =
        clock.gpu_seconds +
        (ran ? clock.gpus * static_cast<double>((now - record.started).count()) / 1000.0 : 0);
  }

  // As std::map's: nothing when `id` is there already.
  void emplace(JobId id, Job* job, const Kept& kept) {
    auto it = Find(id);
    if (it != entries_.end() && it->first == id) return;
    const auto at = it - entries_.begin();
    entries_.insert(it, Entry{id, job});
    records_.insert(records_.begin() + at, kept.record);
    clocks_.insert(clocks_.begin() + at, kept.clock);
  }
  void erase(JobId id) {
    auto it = Find(id);
    if (it == entries_.end() || it->first != id) return;
    const auto at = it - entries_.begin();
    entries_.erase(it);
    records_.erase(records_.begin() + at);
    clocks_.erase(clocks_.begin() + at);
  }
  // A running job changed what its record is made of; nothing when `id` does not run.
  void Keep(JobId id, const Kept& kept) {
    auto it = Find(id);
    if (it == entries_.end() || it->first != id) return;
    const auto at = it - entries_.begin();
    records_[at] = kept.record;
    clocks_[at] = kept.clock;
  }
  // Brings every running job's record to `now`.
  void AdvanceTo(TimePoint now) {
    for (size_t i = 0; i < records_.size(); ++i) AtTime(records_[i], clocks_[i], now);
  }
  // Lends the records, in id order, to a pass: swapped with `lent`, a buffer of the same kind,
  // and given back by a second swap, before any job starts or ends.
  void SwapRecords(std::vector<sched::RunningJob>& lent) { records_.swap(lent); }
  // The running job `id`; throws std::out_of_range when it does not run.
  Job* at(JobId id) const {
    auto it = Find(id);
    if (it == entries_.end() || it->first != id) throw std::out_of_range("not a running job");
    return it->second;
  }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  // Where `id` is or would go. Starts come mostly in id order: at the end.
  std::vector<Entry>::const_iterator Find(JobId id) const {
    if (entries_.empty() || entries_.back().first < id) return entries_.end();
    return std::lower_bound(entries_.begin(), entries_.end(), id,
                            [](const Entry& e, JobId id) { return e.first < id; });
  }
  std::vector<Entry> entries_;
  std::vector<sched::RunningJob> records_;  // by the same index as entries_
  std::vector<Clock> clocks_;
};

}  // namespace baton::control
