#include "control/dependency_gate.h"

#include <algorithm>
#include <optional>

namespace baton::control {
namespace {

// How a job a dependency names ended: an array's id stands for all its tasks.
struct Outcome {
  bool all_ended = true;
  const Job* failed = nullptr;  // one that ended other than succeeded
};

Outcome OutcomeOf(JobId dep, const DependencyGate::Jobs& jobs) {
  Outcome out;
  auto it = jobs.find(dep);
  if (it == jobs.end()) return out;  // gone: counts as met
  // An array's id stands for every task of the array, as in Slurm.
  const bool array = it->second.array_id == dep;
  for (; it != jobs.end() && (it->first == dep || (array && it->second.array_id == dep)); ++it) {
    const Job& t = it->second;
    if (!IsTerminal(t.state)) {
      out.all_ended = false;
    } else if (t.state != JobState::kSucceeded) {
      out.failed = &t;
    }
  }
  return out;
}

}  // namespace

DependencyGate::Waiting DependencyGate::Judge(const Job& job, const Jobs& jobs, TimePoint now) {
  auto never = [&](JobId dep, std::string_view rule, const Job* how) {
    std::string state = how != nullptr ? std::string(JobStateName(how->state)) : "succeeded";
    if (how != nullptr && how->array_id.value != 0)
      state += " (task " + TaskName(how->array_id, how->array_index) + ")";
    return Waiting{.reason = WaitReason::kDependency,
                   .never = true,
                   .detail = "job " + dep.ToString() + " it runs after (" + std::string(rule) +
                             ") ended " + state + "; it can never run"};
  };
  std::optional<Waiting> waiting;
  auto wait_for = [&](JobId dep, const char* what) {
    if (!waiting) {
      waiting = Waiting{.reason = WaitReason::kDependency,
                        .detail = "waiting for job " + dep.ToString() + " to " + what};
    }
  };
  for (JobId dep : job.spec.after) {
    Outcome o = OutcomeOf(dep, jobs);
    if (o.failed != nullptr) return never(dep, "after-ok", o.failed);
    if (!o.all_ended) wait_for(dep, "succeed");
  }
  for (JobId dep : job.spec.after_any) {
    if (!OutcomeOf(dep, jobs).all_ended) wait_for(dep, "end");
  }
  for (JobId dep : job.spec.after_notok) {
    Outcome o = OutcomeOf(dep, jobs);
    if (!o.all_ended) {
      wait_for(dep, "end other than succeeded");
    } else if (o.failed == nullptr && jobs.count(dep) != 0) {
      return never(dep, "after-notok", nullptr);
    }
  }
  if (waiting) return *waiting;
  if (job.spec.singleton) {
    // Jobs are numbered in submit order: an earlier one of the same name and user not ended.
    for (auto it = jobs.begin(); it != jobs.end() && it->first < job.id; ++it) {
      const Job& other = it->second;
      if (IsTerminal(other.state) || other.user != job.user || other.spec.name != job.spec.name)
        continue;
      return Waiting{.reason = WaitReason::kDependency,
                     .detail = "singleton: waiting for job " + other.id.ToString() +
                               " of the same name and user to end"};
    }
  }
  if (job.spec.begin && *job.spec.begin > now && !job.spec.schedule.empty()) {
    return Waiting{.reason = WaitReason::kSchedule,
                   .detail = "recurring (" + job.spec.schedule + "): next run at " +
                             FormatRfc3339(*job.spec.begin)};
  }
  if (job.spec.begin && *job.spec.begin > now) {
    return Waiting{.reason = WaitReason::kBeginTime,
                   .detail = "starts no earlier than " + FormatRfc3339(*job.spec.begin)};
  }
  return Waiting{};
}

DependencyGate::ArrayGate* DependencyGate::GateOf(const Job& job) {
  if (job.array_id.value == 0) return nullptr;
  auto it = arrays_.find(job.array_id);
  if (it == arrays_.end()) {
    auto spec = ParseArraySpec(job.spec.array, "array");
    if (!spec || spec->throttle == 0) return nullptr;
    it = arrays_.emplace(job.array_id, ArrayGate{.limit = spec->throttle}).first;
  }
  return &it->second;
}

void DependencyGate::DropGateIfIdle(JobId array) {
  auto it = arrays_.find(array);
  if (it != arrays_.end() && it->second.active == 0 && it->second.waiting.empty())
    arrays_.erase(it);
}

void DependencyGate::Block(const Job& job, const Waiting& w) {
  blocked_.insert(job.id);
  if (w.reason == WaitReason::kNone) {
    if (ArrayGate* gate = GateOf(job)) gate->waiting.insert(job.id);
    return;
  }
  if (w.reason == WaitReason::kBeginTime || w.reason == WaitReason::kSchedule)
    begins_.emplace(*job.spec.begin, job.id);
  if (job.spec.singleton) singletons_.emplace(SingletonKey(job), job.id);
}

bool DependencyGate::Unblock(const Job& job, bool indexes) {
  if (blocked_.erase(job.id) == 0) return false;
  if (!indexes) return true;
  if (job.array_id.value != 0) {
    if (auto it = arrays_.find(job.array_id); it != arrays_.end()) it->second.waiting.erase(job.id);
  }
  auto erase_one = [&](auto& index, const auto& key) {
    auto [from, to] = index.equal_range(key);
    for (auto it = from; it != to; ++it) {
      if (it->second == job.id) {
        index.erase(it);
        return;
      }
    }
  };
  if (job.spec.begin) erase_one(begins_, *job.spec.begin);
  if (job.spec.singleton) erase_one(singletons_, SingletonKey(job));
  return true;
}

std::vector<JobId> DependencyGate::AfterEnd(const Job& ended, const Jobs& jobs) const {
  std::vector<JobId> check;
  if (blocked_.empty()) return check;
  auto names = [&](const std::vector<JobId>& ids) {
    return std::find(ids.begin(), ids.end(), ended.id) != ids.end() ||
           (ended.array_id.value != 0 &&
            std::find(ids.begin(), ids.end(), ended.array_id) != ids.end());
  };
  // Jobs that run after it: a scan of the blocked ones (dependencies are rare; a cluster's
  // blocked jobs are few).
  for (JobId id : blocked_) {
    const Job& j = jobs.at(id);
    if (names(j.spec.after) || names(j.spec.after_any) || names(j.spec.after_notok))
      check.push_back(id);
  }
  // The singletons of its name and user: the earliest may go now, the others wait for it.
  if (!singletons_.empty()) {
    auto [from, to] = singletons_.equal_range(SingletonKey(ended));
    std::vector<JobId> same;
    for (auto it = from; it != to; ++it) same.push_back(it->second);
    std::sort(same.begin(), same.end());
    check.insert(check.end(), same.begin(), same.end());
  }
  return check;
}

std::vector<JobId> DependencyGate::Due(TimePoint now) const {
  std::vector<JobId> due;
  for (auto it = begins_.begin(); it != begins_.end() && it->first <= now; ++it)
    due.push_back(it->second);
  return due;
}

}  // namespace baton::control
