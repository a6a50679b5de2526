#include "sched/job_queue.h"

#include <algorithm>
#include <tuple>

namespace baton::sched {

PendingJob JobQueue::PendingRecord(const Job& job) {
  return PendingJob{.id = job.id,
                    .resources = &job.spec.resources,
                    .priority = job.spec.priority,
                    .project = &job.spec.project,
                    .user = &job.user,
                    .pool = &job.spec.pool,
                    .submitted = job.submitted_at,
                    .time_limit = job.spec.time_limit,
                    .service = job.gpu_seconds,
                    .avoid = &job.launch_failed_on};
}

void JobQueue::Add(const Job& job, const PendingJob& record) {
  const int c = ClassOf(job);
  std::vector<Entry>& run = by_class_[c];
  // Arrivals come in id order: almost every one goes at the end.
  auto it = !run.empty() && run.back().id < job.id.value
                ? run.end()
                : std::lower_bound(run.begin(), run.end(), job.id.value,
                                   [](const Entry& e, int64_t id) { return e.id < id; });
  bool added = true;
  if (it == run.end() || it->id != job.id.value) {
    run.insert(it, Entry{job.id.value, &job, record});
  } else if (it->job == nullptr) {
    it->job = &job;
    it->record = record;
    --blank_[c];
  } else {
    it->record = record;
    added = false;
  }
  if (added) {
    per_class_[c] += 1;
    ++size_;
  }
  fresh_.push_back(job.id);
}

void JobQueue::Remove(const Job& job) {
  const int c = ClassOf(job);
  std::vector<Entry>& run = by_class_[c];
  auto it = std::lower_bound(run.begin(), run.end(), job.id.value,
                             [](const Entry& e, int64_t id) { return e.id < id; });
  if (it == run.end() || it->id != job.id.value || it->job == nullptr) return;
  it->job = nullptr;
  per_class_[c] -= 1;
  --size_;
  if (++blank_[c] * 2 > run.size()) {
    std::erase_if(run, [](const Entry& e) { return e.job == nullptr; });
    blank_[c] = 0;
  }
}

bool JobQueue::OneClass() const {
  int classes = 0;
  for (int64_t n : per_class_) classes += n > 0 ? 1 : 0;
  return classes <= 1;
}

std::pair<std::vector<const Job*>, bool> JobQueue::First(size_t limit,
                                                         std::vector<PendingJob>* records) const {
  std::vector<const Job*> jobs;
  jobs.reserve(std::min(limit, size_));
  if (records != nullptr) {
    records->clear();
    records->reserve(std::min(limit, size_));
  }
  for (int c = kClasses - 1; c >= 0; --c) {
    for (const Entry& e : by_class_[c]) {
      if (e.job == nullptr) continue;
      if (jobs.size() == limit) return {std::move(jobs), true};
      jobs.push_back(e.job);
      if (records != nullptr) records->push_back(e.record);
    }
  }
  return {std::move(jobs), false};
}

void JobQueue::Tick(TimePoint now, Duration interval) {
  if (size_ > 0 && now - last_full_ >= interval) tick_due_ = true;
}

void JobQueue::AddHead(Plan& plan, std::unordered_set<int64_t>& taken, const Lookup& waiting) {
  SortRest();
  for (const QueueEntry& e : order_) {
    if (static_cast<int>(plan.jobs.size()) >= kHeadPass) break;
    const Job* j = waiting(e.id);
    if (j == nullptr) continue;
    plan.jobs.push_back(j);
    taken.insert(e.id.value);
  }
  // Arrivals since the last full pass are not in its order: they come along.
  int added = 0;
  for (auto it = since_full_.begin(); it != since_full_.end() && added < kHeadPass;) {
    const Job* j = waiting(JobId{it->id});
    if (j == nullptr) {
      it = since_full_.erase(it);
      continue;
    }
    if (taken.insert(it->id).second) {
      plan.jobs.push_back(j);
      ++added;
    }
    ++it;
  }
}

bool JobQueue::AtTail(std::vector<const Job*>& tail, const Lookup& waiting) const {
  // Walked from the end of the queue order: the lowest class's newest jobs first.
  tail.clear();
  for (int c = 0; c < kClasses && tail.size() < fresh_.size(); ++c) {
    const std::vector<Entry>& run = by_class_[c];
    for (auto it = run.rbegin(); it != run.rend() && tail.size() < fresh_.size(); ++it) {
      if (it->job == nullptr) continue;
      if (!std::binary_search(fresh_.begin(), fresh_.end(), JobId{it->id})) return false;
      tail.push_back(waiting(JobId{it->id}));
    }
  }
  std::reverse(tail.begin(), tail.end());
  return tail.size() == fresh_.size();
}

JobQueue::Plan JobQueue::Next(TimePoint now, bool strict, const Lookup& waiting, size_t limit,
                              bool quiet, bool stuck) {
  const bool due = full_due_ || (tick_due_ && !quiet);
  if (!due && !freed_ && fresh_.empty()) return {};
  std::erase_if(fresh_, [&](JobId id) { return waiting(id) == nullptr; });
  std::sort(fresh_.begin(), fresh_.end());
  fresh_.erase(std::unique(fresh_.begin(), fresh_.end()), fresh_.end());
  Plan plan;
  if (quiet && strict && !due && (!freed_ || stuck) && blocker_ &&
      waiting(JobId{blocker_->id}) != nullptr &&
      !std::binary_search(fresh_.begin(), fresh_.end(), JobId{blocker_->id}) &&
      AtTail(plan.jobs, waiting)) {
    // Nothing can start: at most arrivals to place behind the job that still cannot.
    freed_ = false;
    if (fresh_.empty()) return {};
    plan.kind = Kind::kIncremental;
    plan.blocker = JobId{blocker_->id};
    plan.ahead = static_cast<int>(size_ - fresh_.size());
    for (JobId id : fresh_) since_full_.insert(KeyOf(*waiting(id)));
    fresh_.clear();
    return plan;
  }
  plan.kind = due || (freed_ && order_.empty()) || (strict && size_ > 0) ? Kind::kFull
              : freed_                                                   ? Kind::kHead
                                                                         : Kind::kIncremental;
  plan.jobs.clear();
  freed_ = false;
  if (plan.kind == Kind::kFull) {
    std::tie(plan.jobs, plan.partial) = First(limit > 0 ? limit : size_, &plan.records);
    since_full_.clear();
    last_full_ = now;
    tick_due_ = false;
    blocker_.reset();
  } else {
    std::unordered_set<int64_t> taken;
    if (plan.kind == Kind::kHead) AddHead(plan, taken, waiting);
    for (JobId id : fresh_) {
      if (!taken.count(id.value)) plan.jobs.push_back(waiting(id));
    }
    for (JobId id : fresh_) since_full_.insert(KeyOf(*waiting(id)));
  }
  fresh_.clear();
  full_due_ = false;
  if (plan.kind == Kind::kFull && plan.jobs.empty()) Ordered({}, 0, false);
  return plan;
}

void JobQueue::Ordered(std::vector<QueueEntry> order, size_t sorted, bool partial) {
  order_ = std::move(order);
  order_partial_ = partial;
  sorted_ = std::min(sorted, order_.size());
  position_stale_ = true;
}

void JobQueue::SortRest() const {
  if (sorted_ >= order_.size()) return;
  // The pass's own rule (sched/ordering.h): the highest score first, ties by submit order.
  std::sort(order_.begin() + static_cast<std::ptrdiff_t>(sorted_), order_.end(),
            [](const QueueEntry& a, const QueueEntry& b) {
              return a.factors.score != b.factors.score ? a.factors.score > b.factors.score
                                                        : a.id < b.id;
            });
  sorted_ = order_.size();
}

bool JobQueue::WantsRepass(Kind kind, bool could_preempt, TimePoint now) {
  if (kind == Kind::kFull || !could_preempt) return false;
  full_due_ = true;
  return now - last_full_ >= kRepassGap;
}

std::optional<std::pair<int64_t, QueueFactors>> JobQueue::Position(JobId id) const {
  SortRest();
  if (position_stale_) {
    // Built on the first look after a full pass: most passes are never asked about.
    position_.clear();
    position_.reserve(order_.size());
    for (uint32_t i = 0; i < order_.size(); ++i) position_[order_[i].id.value] = i;
    position_stale_ = false;
  }
  auto it = position_.find(id.value);
  if (it == position_.end() && order_partial_) {
    // Past the head the pass was given: the rest of the queue is in pass order already.
    int64_t place = static_cast<int64_t>(order_.size());
    std::optional<std::pair<int64_t, QueueFactors>> found;
    ForEach([&](const Job& j) {
      if (found || position_.count(j.id.value)) return;
      ++place;
      if (j.id == id) found = std::make_pair(place, QueueFactors{});
    });
    return found;
  }
  if (it == position_.end()) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(it->second) + 1, order_[it->second].factors);
}

}  // namespace baton::sched
