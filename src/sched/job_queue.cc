#include "sched/job_queue.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "sched/ordering.h"

namespace baton::sched {
namespace {

// Where `id` is or would go in a run kept by id (Entry or Member). Arrivals come in id order:
// almost every one goes at the end.
template <typename Run>
auto ById(Run& run, int64_t id) {
  if (!run.empty() && run.back().id < id) return run.end();
  return std::lower_bound(run.begin(), run.end(), id,
                          [](const auto& x, int64_t id) { return x.id < id; });
}

// Whether what failed for another job of its group may still fit it: nodes refuse it, or it
// names nodes or wants its nodes to itself (the group's key does not say which).
bool OwnShape(const PendingJob& record) {
  return (record.avoid != nullptr && !record.avoid->empty()) || record.resources->Constrained();
}

}  // namespace

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
                    .avoid = &job.launch_failed_on,
                    .preemptible = Preemptible(job.spec)};
}

void JobQueue::Add(const Job& job, const PendingJob& record) {
  const int c = ClassOf(job);
  std::vector<Entry>& run = by_class_[c];
  auto it = ById(run, job.id.value);
  const uint32_t g = GroupOf(record);
  bool added = true;
  if (it == run.end() || it->id != job.id.value) {
    run.insert(it, Entry{job.id.value, &job, g});
  } else if (it->job == nullptr) {
    it->job = &job;
    it->group = g;
    --blank_[c];
  } else {
    Leave(it->group, job.id.value);  // a new record, maybe of another group
    it->group = g;
    added = false;
  }
  Join(g, job, record);
  if (added) {
    per_class_[c] += 1;
    ++size_;
  }
  fresh_.push_back(job.id);
}

void JobQueue::Remove(const Job& job) {
  const int c = ClassOf(job);
  std::vector<Entry>& run = by_class_[c];
  auto it = ById(run, job.id.value);
  if (it == run.end() || it->id != job.id.value || it->job == nullptr) return;
  Leave(it->group, job.id.value);
  it->job = nullptr;
  per_class_[c] -= 1;
  --size_;
  if (++blank_[c] * 2 > run.size()) {
    std::erase_if(run, [](const Entry& e) { return e.job == nullptr; });
    blank_[c] = 0;
  }
}

uint32_t JobQueue::GroupOf(const PendingJob& r) {
  const int level = static_cast<int>(std::upper_bound(levels_.begin(), levels_.end(), r.service) -
                                     levels_.begin());
  const Resources& x = *r.resources;
  auto [it, added] = group_index_.try_emplace(
      GroupKey{static_cast<int>(r.priority), level, x.milli_gpus, x.gpu_type, x.gpu_memory_bytes,
               x.nodes, x.cpus, x.memory_bytes, *r.pool, *r.project, *r.user, r.preemptible},
      static_cast<uint32_t>(groups_.size()));
  if (added) groups_.emplace_back();
  return it->second;
}

void JobQueue::Join(uint32_t g, const Job& job, const PendingJob& record) {
  Group& group = groups_[g];
  std::vector<Member>& m = group.members;
  auto it = ById(m, job.id.value);
  if (it != m.end() && it->id == job.id.value) {
    *it = Member{job.id.value, &job, ++seq_, record};  // its own blank
    --group.blanks;
  } else {
    it = m.insert(it, Member{job.id.value, &job, ++seq_, record});
  }
  // Blanks keep their records: a group stays monotone as long as the whole run is.
  if (it != m.begin() && std::prev(it)->record.submitted > record.submitted) group.monotone = false;
  if (std::next(it) != m.end() && std::next(it)->record.submitted < record.submitted)
    group.monotone = false;
  if (OwnShape(record)) ++group.avoiding;
  if (record.time_limit > Duration(0))
    group.shortest_limit = std::min(group.shortest_limit, record.time_limit);
  if (group.live++ == 0) {
    group.live_at = static_cast<uint32_t>(live_groups_.size());
    live_groups_.push_back(g);
  }
}

void JobQueue::Leave(uint32_t g, int64_t id) {
  Group& group = groups_[g];
  std::vector<Member>& m = group.members;
  auto it = ById(m, id);
  if (it == m.end() || it->id != id || it->job == nullptr) return;
  // It was in the pass that ordered the head: the rest of that order still has it.
  if (rest_ && it->seq <= rest_->seq)
    rest_->left.push_back(QueueEntry{JobId{id}, RestFactors(*rest_, it->record, g)});
  it->job = nullptr;
  ++group.blanks;
  if (OwnShape(it->record)) --group.avoiding;
  if (--group.live == 0) {
    const uint32_t last = live_groups_.back();
    live_groups_[group.live_at] = last;
    groups_[last].live_at = group.live_at;
    live_groups_.pop_back();
    m.clear();
    group.blanks = 0;
    group.monotone = true;
    group.shortest_limit = Duration::max();
  } else if (group.blanks * 2 > m.size()) {
    std::erase_if(m, [](const Member& x) { return x.job == nullptr; });
    group.blanks = 0;
    if (!group.monotone) {
      group.monotone = std::is_sorted(m.begin(), m.end(), [](const Member& a, const Member& b) {
        return a.record.submitted < b.record.submitted;
      });
    }
  }
}

const JobQueue::Member* JobQueue::MemberOf(const Entry& e) const {
  const std::vector<Member>& m = groups_[e.group].members;
  auto it = ById(m, e.id);
  return it != m.end() && it->id == e.id && it->job != nullptr ? &*it : nullptr;
}

const JobQueue::Entry* JobQueue::EntryOf(JobId id) const {
  for (const std::vector<Entry>& run : by_class_) {
    auto it = ById(run, id.value);
    if (it != run.end() && it->id == id.value && it->job != nullptr) return &*it;
  }
  return nullptr;
}

const PendingJob* JobQueue::Find(JobId id) const {
  const Entry* e = EntryOf(id);
  const Member* m = e != nullptr ? MemberOf(*e) : nullptr;
  return m != nullptr ? &m->record : nullptr;
}

void JobQueue::SetLevels(const std::vector<double>& thresholds) {
  if (thresholds == levels_) return;
  SortRest();  // the last order, made of the groups as they are
  levels_ = thresholds;
  std::vector<std::pair<Entry*, PendingJob>> waiting;
  for (std::vector<Entry>& run : by_class_) {
    for (Entry& e : run) {
      if (e.job != nullptr) waiting.emplace_back(&e, MemberOf(e)->record);
    }
  }
  group_index_.clear();
  groups_.clear();
  live_groups_.clear();
  for (auto& [e, record] : waiting) {
    e->group = GroupOf(record);
    Join(e->group, *e->job, record);
  }
}

bool JobQueue::OneClass() const {
  int classes = 0;
  for (int64_t n : per_class_) classes += n > 0 ? 1 : 0;
  return classes <= 1;
}

int JobQueue::HighestClass() const {
  for (int c = kClasses - 1; c >= 0; --c) {
    if (per_class_[c] > 0) return c;
  }
  return -1;
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
      if (records != nullptr) records->push_back(MemberOf(e)->record);
    }
  }
  return {std::move(jobs), false};
}

void JobQueue::Tick(TimePoint now, Duration interval) {
  if (size_ > 0 && now - last_full_ >= interval) tick_due_ = true;
}

void JobQueue::AddHead(Plan& plan, std::vector<int64_t>& taken) {
  // The queue's own entries say which jobs wait (the caller's Lookup agrees: a job is in the
  // queue exactly while it waits), without a look into the caller's map of every job.
  auto waiting = [&](JobId id) -> const Job* {
    const Entry* e = EntryOf(id);
    return e != nullptr ? e->job : nullptr;
  };
  // Ordered only as far as the head goes: the rest of a long order is never asked for by most
  // head passes.
  taken.clear();
  for (size_t i = 0; static_cast<int>(plan.jobs.size()) < kHeadPass; ++i) {
    if (i >= sorted_) SortTo(std::max(2 * i, i + kHeadPass));
    if (i >= order_.size()) break;
    const QueueEntry& e = order_[i];
    const Job* j = waiting(e.id);
    if (j == nullptr) continue;
    plan.jobs.push_back(j);
    taken.push_back(e.id.value);
  }
  // Arrivals since the last full pass are not in its order: they come along (each once, as
  // since_full_ is a set).
  std::sort(taken.begin(), taken.end());
  const size_t head = taken.size();
  int added = 0;
  for (auto it = since_full_.begin(); it != since_full_.end() && added < kHeadPass;) {
    const Job* j = waiting(JobId{it->id});
    if (j == nullptr) {
      it = since_full_.erase(it);
      continue;
    }
    if (!std::binary_search(taken.begin(), taken.begin() + static_cast<std::ptrdiff_t>(head),
                            it->id)) {
      plan.jobs.push_back(j);
      taken.push_back(it->id);
      ++added;
    }
    ++it;
  }
  std::sort(taken.begin() + static_cast<std::ptrdiff_t>(head), taken.end());
  std::inplace_merge(taken.begin(), taken.begin() + static_cast<std::ptrdiff_t>(head), taken.end());
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
                              bool quiet, bool stuck, bool grouped) {
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
    if (grouped && size_ > 0) {
      plan.grouped = true;
    } else {
      std::tie(plan.jobs, plan.partial) = First(limit > 0 ? limit : size_, &plan.records);
    }
    since_full_.clear();
    last_full_ = now;
    tick_due_ = false;
    blocker_.reset();
  } else {
    if (plan.kind == Kind::kHead) {
      AddHead(plan, taken_);  // sorted
    } else {
      taken_.clear();
    }
    for (JobId id : fresh_) {
      if (!std::binary_search(taken_.begin(), taken_.end(), id.value))
        plan.jobs.push_back(waiting(id));
    }
    for (JobId id : fresh_) since_full_.insert(KeyOf(*waiting(id)));
  }
  fresh_.clear();
  full_due_ = false;
  if (plan.kind == Kind::kFull && plan.jobs.empty() && !plan.grouped) Ordered({}, 0, false);
  return plan;
}

void JobQueue::Ordered(std::vector<QueueEntry> order, size_t sorted, bool partial) {
  order_ = std::move(order);
  order_partial_ = partial;
  sorted_ = std::min(sorted, order_.size());
  position_stale_ = true;
  rest_.reset();
}

void JobQueue::OrderedHead(std::vector<QueueEntry> head, size_t sorted, OrderRest rest,
                           TimePoint now, const Policy& policy) {
  Ordered(std::move(head), sorted, false);
  rest_ = Rest{.seq = seq_,
               .now = now,
               .cluster_milli = rest.cluster_milli,
               .weights = policy.weights,
               .max_age = policy.max_age,
               .levels = policy.las_thresholds,
               .fairshare = std::move(rest.fairshare),
               .left = {}};
}

QueueFactors JobQueue::RestFactors(const Rest& rest, const PendingJob& record, uint32_t g) {
  return FactorsOf(record, rest.weights, rest.max_age, rest.levels, rest.now, rest.cluster_milli,
                   g < rest.fairshare.size() ? rest.fairshare[g] : 0);
}

void JobQueue::MakeRest() const {
  Rest rest = std::move(*rest_);
  rest_.reset();
  // Every job of that pass's queue that it did not walk: those waiting still, and those that
  // left since (jobs that joined later were not in it).
  // The walked jobs are a few dozen: a sorted list of their ids is quicker to make and to ask
  // than a hash set.
  std::vector<int64_t>& taken = rest_taken_;
  taken.clear();
  for (const QueueEntry& e : order_) taken.push_back(e.id.value);
  std::sort(taken.begin(), taken.end());
  for (const QueueEntry& e : rest.left) {
    auto at = std::lower_bound(taken.begin(), taken.end(), e.id.value);
    if (at != taken.end() && *at == e.id.value) continue;
    taken.insert(at, e.id.value);
    order_.push_back(e);
  }
  auto was_taken = [&](int64_t id) { return std::binary_search(taken.begin(), taken.end(), id); };
  for (uint32_t g : live_groups_) {
    for (const Member& m : groups_[g].members) {
      if (m.job == nullptr || m.seq > rest.seq || was_taken(m.id)) continue;
      order_.push_back(QueueEntry{JobId{m.id}, RestFactors(rest, m.record, g)});
    }
  }
  position_stale_ = true;
}

void JobQueue::SortTo(size_t end) const {
  if (rest_) MakeRest();
  end = std::min(end, order_.size());
  if (end <= sorted_) return;
  // The pass's own rule (sched/ordering.h): the highest score first, ties by submit order.
  auto higher = [](const QueueEntry& a, const QueueEntry& b) {
    return a.factors.score != b.factors.score ? a.factors.score > b.factors.score : a.id < b.id;
  };
  auto first = order_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  auto last = order_.begin() + static_cast<std::ptrdiff_t>(end);
  if (last != order_.end()) std::nth_element(first, last, order_.end(), higher);
  std::sort(first, last, higher);
  sorted_ = end;
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
