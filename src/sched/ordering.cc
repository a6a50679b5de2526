#include "sched/ordering.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "sched/job_queue.h"

namespace baton::sched {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

// The GPUs of schedulable nodes that are usable, in milli-GPUs: the size factor's whole.
int64_t ClusterMilli(const ClusterView& view) { return view.totals().usable_milli; }

}  // namespace

FairShareTable::FairShareTable(const UsageLedger* usage, const Policy* policy,
                               const std::vector<PendingJob>& pending,
                               const std::vector<RunningJob>& running)
    : usage_(usage), policy_(policy) {
  // Every project the policy, the usage or a job names, and how many users each has: the
  // ledger's users of it, and those of its waiting and running jobs the ledger has not seen
  // (a running job's are always there). A queue repeats a few hundred pairs thousands of
  // times: a set of them, looked up in the ledger once each.
  std::vector<std::string_view> projects;
  for (const auto& [name, p] : policy->projects) projects.push_back(name);
  if (usage != nullptr) {
    for (const auto& [name, used] : usage->projects()) {
      projects.push_back(name);
      const auto* users = usage->users(name);
      users_per_project_[name] = users != nullptr ? static_cast<int>(users->size()) : 0;
    }
  }
  std::unordered_set<std::pair<std::string_view, std::string_view>, PairHash> seen;
  seen.reserve(256);
  // A job with an account number is known by it: only the first of each is looked at by name.
  std::vector<char> seen_account;
  // Runs of one user's jobs are common: skip a repeat of the last pair without hashing it.
  const std::string* last_project = nullptr;
  const std::string* last_user = nullptr;
  auto add = [&](const std::string* project, const std::string* user, int32_t account) {
    if (account >= 0) {
      if (static_cast<size_t>(account) >= seen_account.size())
        seen_account.resize(static_cast<size_t>(account) + 1, 0);
      if (seen_account[account] != 0) return;
      seen_account[account] = 1;
    } else if (last_project != nullptr && *last_project == *project && *last_user == *user) {
      return;
    }
    last_project = project;
    last_user = user;
    if (!seen.emplace(*project, *user).second) return;
    const auto* users = usage != nullptr ? usage->users(*project) : nullptr;
    if (users != nullptr && users->count(*user)) return;
    auto [it, added] = users_per_project_.try_emplace(*project, 0);
    it->second += 1;
    if (added) projects.push_back(*project);
  };
  for (const auto& j : pending) add(j.project, j.user, j.account);
  for (const auto& j : running) add(j.project, j.user, j.account);
  by_account_.assign(seen_account.size(), std::nan(""));
  std::sort(projects.begin(), projects.end());
  projects.erase(std::unique(projects.begin(), projects.end()), projects.end());
  for (std::string_view name : projects) users_per_project_.try_emplace(name, 0);
  // In name order, as a sum of doubles must be the same from pass to pass.
  for (std::string_view name : projects) share_total_ += policy->Project(std::string(name)).share;
}

double FairShareTable::Factor(const std::string& project, const std::string& user,
                              int32_t account) {
  if (account >= 0 && static_cast<size_t>(account) < by_account_.size()) {
    double& f = by_account_[account];
    if (std::isnan(f)) f = Factor(project, user);
    return f;
  }
  // Queues hold runs of one user's jobs: the last answer is usually the one asked for.
  if (has_last_ && last_project_ == project && last_user_ == user) return last_;
  auto key = std::make_pair(std::string_view(project), std::string_view(user));
  auto hit = cache_.find(key);
  double f =
      hit != cache_.end() ? hit->second : cache_.emplace(key, Lookup(project, user)).first->second;
  last_project_ = project;
  last_user_ = user;
  last_ = f;
  has_last_ = true;
  return f;
}

double FairShareTable::Lookup(const std::string& project, const std::string& user) {
  double f_project = 1;
  double f_user = 1;
  if (usage_ != nullptr && usage_->total() > 0 && share_total_ > 0) {
    double used = usage_->project(project) / usage_->total();
    double share = policy_->Project(project).share / share_total_;
    f_project = share > 0 ? std::exp2(-used / share) : (used > 0 ? 0 : 1);
    double project_used = usage_->project(project);
    if (project_used > 0) {
      double u_used = usage_->user(project, user) / project_used;
      // Users of a project share it by their configured shares (1 each unless set).
      double u_total = 0;
      if (const auto* users = usage_->users(project)) {
        for (const auto& [u, x] : *users) u_total += policy_->User(u).share;
      }
      auto known_it = users_per_project_.find(project);
      int known = known_it != users_per_project_.end() ? known_it->second : 1;
      u_total = std::max(u_total, static_cast<double>(known));
      double u_share = policy_->User(user).share / std::max(u_total, 1.0);
      f_user = u_share > 0 ? std::exp2(-u_used / u_share) : 0;
    }
  }
  return f_project * (1 + f_user) / 2;
}

Factors ComputeFactors(const PendingJob& job, const Policy& policy, TimePoint now,
                       int64_t cluster_milli, FairShareTable* shares) {
  return FactorsOf(
      job, policy.weights, policy.max_age, policy.las_thresholds, now, cluster_milli,
      shares != nullptr ? shares->Factor(*job.project, *job.user, job.account) : kUnweighed);
}

void ShownFairShare::Fill(QueueFactors& f, const PendingJob& job,
                          const std::function<std::vector<PendingJob>()>& accounts) {
  if (f.fairshare != kUnweighed) return;
  if (!table_) {
    accounts_ = accounts();
    table_.emplace(usage_, policy_, accounts_, std::vector<RunningJob>{});
  }
  f.fairshare = table_->Factor(*job.project, *job.user, job.account);
}

Factors FactorsOf(const PendingJob& job, const Weights& w, Duration max_age,
                  const std::vector<double>& las_thresholds, TimePoint now, int64_t cluster_milli,
                  double fairshare) {
  Factors f;
  f.priority = static_cast<double>(static_cast<int>(job.priority)) / 3.0;
  f.fairshare = fairshare;
  double waited = Seconds(now - job.submitted);
  double max_age_s = std::max(Seconds(max_age), 1.0);
  f.age = std::clamp(waited / max_age_s, 0.0, 1.0);
  f.size = cluster_milli > 0 ? std::min(1.0, static_cast<double>(job.resources->milli_gpus) /
                                                 static_cast<double>(cluster_milli))
                             : 0;
  const auto levels = static_cast<double>(las_thresholds.size());
  f.las = levels > 0 ? 1.0 - LasLevel(las_thresholds, job.service) / levels : 1.0;
  f.score = w.priority * f.priority + (w.fairshare != 0 ? w.fairshare * f.fairshare : 0) +
            w.age * f.age + w.size * f.size + w.las * f.las;
  return f;
}

// QueueOrder::Higher as the sorts' comparison: a function pointer would be called, not
// inlined, at each of the tens of millions of comparisons of a simulated trace.
constexpr auto kHigher = [](const auto& a, const auto& b) { return QueueOrder::Higher(a, b); };

QueueOrder::QueueOrder(PassInput& in, const Policy& policy)
    : in_(in),
      policy_(policy),
      chunk_(static_cast<size_t>(std::max(in.explained, 0)) + 64),
      cluster_milli_(ClusterMilli(in.view)) {
  if (in.queue != nullptr) {
    // Every group's first job stands for the group: the names and accounts (fair share), and
    // what it asks (a pass's look at the whole queue).
    const JobQueue& q = *in.queue;
    size_ = q.size();
    heads_.reserve(q.live_groups().size());
    head_counts_.reserve(q.live_groups().size());
    heads_timed_.reserve(q.live_groups().size());
    for (uint32_t g : q.live_groups()) {
      const JobQueue::Member* head = q.Head(g);
      if (head == nullptr) continue;
      heads_.push_back(head->record);
      head_counts_.push_back(q.group(g).live);
      heads_timed_.push_back(q.group(g).shortest_limit != Duration::max() ? 1 : 0);
    }
    if (policy.weights.fairshare != 0) shares_.emplace(in.usage, &policy, heads_, in.running);
    rest_.cluster_milli = cluster_milli_;
    keys_.reserve(std::min<size_t>(size_, chunk_));
    factors_.reserve(std::min<size_t>(size_, chunk_));
    runs_.reserve(q.live_groups().size());
    heap_.reserve(q.live_groups().size());
    return;  // the runs start at the first at() or Front()
  }
  size_ = in.pending.size();
  keys_.resize(size_);
  factors_.resize(size_);
  if (policy.weights.fairshare != 0) shares_.emplace(in.usage, &policy, in.pending, in.running);
  // Each job's request lies in its own record, far from the last one: asked for a few jobs
  // ahead, so that the loads overlap instead of stalling one after another.
  constexpr uint32_t kAhead = 8;
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    if (i + kAhead < keys_.size()) __builtin_prefetch(in.pending[i + kAhead].resources);
    factors_[i] = Score(in.pending[i]);
    keys_[i] = Key{factors_[i].score, in.pending[i].id.value, i};
  }
  // Strict order by class is given in queue order, already the pass's own: nothing to sort.
  if (std::is_sorted(keys_.begin(), keys_.end(), kHigher)) sorted_ = keys_.size();
}

Factors QueueOrder::Score(const PendingJob& job) {
  return ComputeFactors(job, policy_, in_.now, cluster_milli_, shares_ ? &*shares_ : nullptr);
}

void QueueOrder::Front(const std::vector<JobId>& ids) {
  auto among = [&](int64_t id) {
    return std::find(ids.begin(), ids.end(), JobId{id}) != ids.end();
  };
  if (in_.queue == nullptr) {
    auto end =
        std::partition(keys_.begin(), keys_.end(), [&](const Key& k) { return among(k.id); });
    sorted_ = static_cast<size_t>(end - keys_.begin());
    std::sort(keys_.begin(), end, kHigher);
    return;
  }
  // Taken out of their runs before the merge starts (Front comes first).
  for (JobId id : ids) {
    const PendingJob* record = in_.queue->Find(id);
    if (record == nullptr ||
        std::find(fronted_.begin(), fronted_.end(), id.value) != fronted_.end())
      continue;
    fronted_.push_back(id.value);
    auto index = static_cast<uint32_t>(in_.pending.size());
    in_.pending.push_back(*record);
    factors_.push_back(Score(*record));
    keys_.push_back(Key{factors_.back().score, id.value, index});
  }
  std::sort(keys_.begin(), keys_.end(), kHigher);
  sorted_ = keys_.size();
}

void QueueOrder::Advance(Run& run, uint32_t r) {
  const JobQueue::Group& group = in_.queue->group(run.group);
  const PendingJob* record = nullptr;
  if (!group.monotone) {
    if (run.next < run.sorted.size()) record = &group.members[run.sorted[run.next++]].record;
  } else {
    while (run.next < group.members.size()) {
      const JobQueue::Member& m = group.members[run.next++];
      if (m.job == nullptr) continue;
      if (!fronted_.empty() && std::find(fronted_.begin(), fronted_.end(), m.id) != fronted_.end())
        continue;
      record = &m.record;
      break;
    }
  }
  if (record == nullptr) return;
  Factors f = Score(*record);
  heap_.push_back(Head{Key{f.score, record->id.value, r}, f, record});
  std::push_heap(heap_.begin(), heap_.end(),
                 [](const Head& a, const Head& b) { return Higher(b.key, a.key); });
}

void QueueOrder::Start() {
  if (started_) return;
  started_ = true;
  // The runs, one per group with waiting jobs; and each group's fair-share factor, for the
  // rest of the order (PassResult::rest).
  const JobQueue& q = *in_.queue;
  rest_.fairshare.assign(q.groups_count(), std::nan(""));
  const std::vector<uint32_t>& live = q.live_groups();
  for (size_t i = 0; i < live.size(); ++i) {
    const uint32_t g = live[i];
    const PendingJob& head = heads_[i];
    rest_.fairshare[g] =
        shares_ ? shares_->Factor(*head.project, *head.user, head.account) : kUnweighed;
    Run run{.group = g};
    for (int64_t id : fronted_) run.fronted += q.GroupOfJob(JobId{id}) == g ? 1 : 0;
    const JobQueue::Group& group = q.group(g);
    if (!group.monotone) {
      // Scored and sorted whole: its order is not its members'.
      std::vector<Key> all;
      for (uint32_t m = 0; m < group.members.size(); ++m) {
        const JobQueue::Member& member = group.members[m];
        if (member.job == nullptr ||
            std::find(fronted_.begin(), fronted_.end(), member.id) != fronted_.end())
          continue;
        all.push_back(Key{Score(member.record).score, member.id, m});
      }
      std::sort(all.begin(), all.end(), kHigher);
      for (const Key& k : all) run.sorted.push_back(k.index);
    }
    runs_.push_back(std::move(run));
    Advance(runs_.back(), static_cast<uint32_t>(runs_.size() - 1));
  }
}

void QueueOrder::Pull() {
  Start();
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(),
                  [](const Head& a, const Head& b) { return Higher(b.key, a.key); });
    Head head = heap_.back();
    heap_.pop_back();
    Run& run = runs_[head.key.index];
    if (counts_) {
      // The group's jobs not in the order yet, this one among them.
      const JobQueue::Group& group = in_.queue->group(run.group);
      const size_t left =
          group.monotone ? group.live - run.fronted - run.taken : run.sorted.size() - run.taken;
      if (counts_(*head.record, run.group, left)) {
        if (!dropped_at_) dropped_at_ = keys_.size();
        size_ -= left;
        continue;
      }
    }
    auto index = static_cast<uint32_t>(in_.pending.size());
    in_.pending.push_back(*head.record);
    factors_.push_back(head.factors);
    keys_.push_back(Key{head.key.score, head.key.id, index});
    ++run.taken;
    Advance(run, head.key.index);
    return;
  }
}

OrderRest QueueOrder::TakeRest() {
  Start();
  return std::move(rest_);
}

void QueueOrder::SortTo(size_t end) {
  if (in_.queue != nullptr) {
    while (keys_.size() < end && keys_.size() < size_) {
      const size_t before = keys_.size();
      Pull();
      if (keys_.size() == before) break;  // nothing left (size_ counts what Front took)
    }
    sorted_ = keys_.size();
    return;
  }
  end = std::min(keys_.size(), std::max(end, sorted_ + chunk_));
  chunk_ *= 2;
  auto first = keys_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  auto last = keys_.begin() + static_cast<std::ptrdiff_t>(end);
  if (last != keys_.end()) std::nth_element(first, last, keys_.end(), kHigher);
  std::sort(first, last, kHigher);
  sorted_ = end;
}

void QueueOrder::Entries(const PassInput& in, std::vector<QueueEntry>& out, size_t* sorted) const {
  out.reserve(out.size() + keys_.size());
  for (const Key& k : keys_) out.push_back(QueueEntry{in.pending[k.index].id, factors_[k.index]});
  *sorted = dropped_at_ ? std::min(sorted_, *dropped_at_) : sorted_;
}

std::vector<uint32_t> OrderQueue(PassInput& in, const Policy& policy,
                                 std::vector<QueueEntry>& entries) {
  QueueOrder order(in, policy);
  std::vector<uint32_t> indices(order.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = order.at(i);
  size_t sorted = 0;
  order.Entries(in, entries, &sorted);
  return indices;
}

}  // namespace baton::sched
