#include "sched/job_queue.h"

#include <algorithm>

namespace baton::sched {

void JobQueue::Add(const Job& job) {
  queue_.insert(KeyOf(job));
  fresh_.push_back(job.id);
}

void JobQueue::Remove(const Job& job) { queue_.erase(KeyOf(job)); }

void JobQueue::Tick(TimePoint now, Duration interval) {
  if (!queue_.empty() && now - last_full_ >= interval) full_due_ = true;
}

void JobQueue::AddHead(Plan& plan, std::unordered_set<int64_t>& taken, const Lookup& waiting) {
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

JobQueue::Plan JobQueue::Next(TimePoint now, bool strict, const Lookup& waiting) {
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
    plan.jobs.reserve(queue_.size());
    for (const Key& k : queue_) plan.jobs.push_back(k.job);
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
  if (plan.kind == Kind::kFull && plan.jobs.empty()) Ordered({});
  return plan;
}

void JobQueue::Ordered(std::vector<QueueEntry> order) {
  order_ = std::move(order);
  position_stale_ = true;
}

bool JobQueue::WantsRepass(Kind kind, bool could_preempt, TimePoint now) {
  if (kind == Kind::kFull || !could_preempt) return false;
  full_due_ = true;
  return now - last_full_ >= kRepassGap;
}

std::optional<std::pair<int64_t, QueueFactors>> JobQueue::Position(JobId id) const {
  if (position_stale_) {
    // Built on the first look after a full pass: most passes are never asked about.
    position_.clear();
    position_.reserve(order_.size());
    for (uint32_t i = 0; i < order_.size(); ++i) position_[order_[i].id.value] = i;
    position_stale_ = false;
  }
  auto it = position_.find(id.value);
  if (it == position_.end()) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(it->second) + 1, order_[it->second].factors);
}

}  // namespace baton::sched
