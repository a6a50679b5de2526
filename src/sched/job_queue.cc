#include "sched/job_queue.h"

#include <algorithm>
#include <tuple>

namespace baton::sched {

void JobQueue::Add(const Job& job) {
  if (queue_.insert(KeyOf(job)).second) per_class_[static_cast<int>(job.spec.priority) & 3] += 1;
  fresh_.push_back(job.id);
}

void JobQueue::Remove(const Job& job) {
  if (queue_.erase(KeyOf(job)) > 0) per_class_[static_cast<int>(job.spec.priority) & 3] -= 1;
}

bool JobQueue::OneClass() const {
  int classes = 0;
  for (int64_t n : per_class_) classes += n > 0 ? 1 : 0;
  return classes <= 1;
}

std::pair<std::vector<const Job*>, bool> JobQueue::First(size_t limit) const {
  std::vector<const Job*> jobs;
  jobs.reserve(std::min(limit, queue_.size()));
  for (const Key& k : queue_) {
    if (jobs.size() == limit) return {std::move(jobs), true};
    jobs.push_back(k.job);
  }
  return {std::move(jobs), false};
}

void JobQueue::Tick(TimePoint now, Duration interval) {
  if (!queue_.empty() && now - last_full_ >= interval) full_due_ = true;
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

JobQueue::Plan JobQueue::Next(TimePoint now, bool strict, const Lookup& waiting, size_t limit) {
  if (!full_due_ && !freed_ && fresh_.empty()) return {};
  Plan plan;
  plan.kind = full_due_ || (freed_ && order_.empty()) || (strict && !queue_.empty()) ? Kind::kFull
              : freed_                                                               ? Kind::kHead
                       : Kind::kIncremental;
  freed_ = false;
  std::erase_if(fresh_, [&](JobId id) { return waiting(id) == nullptr; });
  std::sort(fresh_.begin(), fresh_.end());
  fresh_.erase(std::unique(fresh_.begin(), fresh_.end()), fresh_.end());
  if (plan.kind == Kind::kFull) {
    std::tie(plan.jobs, plan.partial) = First(limit > 0 ? limit : queue_.size());
    since_full_.clear();
    last_full_ = now;
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
    for (const Key& k : queue_) {
      if (position_.count(k.id)) continue;
      ++place;
      if (k.id == id.value) return std::make_pair(place, QueueFactors{});
    }
    return std::nullopt;
  }
  if (it == position_.end()) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(it->second) + 1, order_[it->second].factors);
}

}  // namespace baton::sched
