// What keeps a pending job out of the queue, and what lets it in: its dependencies (after-ok,
// after-any, after-notok; an array's id standing for all its tasks), the singleton rule, its
// begin time, and its array's throttle. Blocked jobs wait in `blocked_`; the begin-time,
// singleton and array indexes say which of them may go when time passes or a job ends.
#include <algorithm>

#include "control/controller.h"

namespace baton::control {

void Controller::Enqueue(Job& job, TimePoint now) {
  job.queue_ahead = -1;  // the words of a pass before it left the queue are stale
  Waiting w = WaitingFor(job, now);
  if (w.never) {
    job.reason = WaitReason::kDependency;
    job.reason_detail = std::move(w.detail);
    SetState(job, JobState::kFailed, now);
    return;
  }
  if (w.reason != WaitReason::kNone) {
    blocked_.insert(job.id);
    job.reason = w.reason;
    job.reason_detail = std::move(w.detail);
    if (w.reason == WaitReason::kBeginTime || w.reason == WaitReason::kSchedule)
      begins_.emplace(*job.spec.begin, job.id);
    if (job.spec.singleton) singletons_.emplace(SingletonKey(job), job.id);
    return;
  }
  if (ArrayGate* gate = GateOf(job)) {
    if (gate->active >= gate->limit) {
      blocked_.insert(job.id);
      gate->waiting.insert(job.id);
      job.reason = WaitReason::kArrayLimit;
      job.reason_detail = "array " + job.array_id.ToString() + " runs at most " +
                          std::to_string(gate->limit) + " tasks at once (%" +
                          std::to_string(gate->limit) + ")";
      return;
    }
    gate->active += 1;
  }
  queue_.Add(job, PendingOf(job));
  job.reason = WaitReason::kPriority;
  job.reason_detail = "waiting for the scheduler";
}

void Controller::Dequeue(Job& job) {
  job.queue_ahead = -1;  // a pass's place in the queue means nothing outside it
  queue_.Remove(job);
  if (blocked_.erase(job.id) > 0) Unblock(job);
}

Controller::ArrayGate* Controller::GateOf(const Job& job) {
  if (job.array_id.value == 0) return nullptr;
  auto it = arrays_.find(job.array_id);
  if (it == arrays_.end()) {
    auto spec = ParseArraySpec(job.spec.array, "array");
    if (!spec || spec->throttle == 0) return nullptr;
    it = arrays_.emplace(job.array_id, ArrayGate{.limit = spec->throttle}).first;
  }
  return &it->second;
}

void Controller::LeaveGate(const Job& job, TimePoint now) {
  ArrayGate* gate = GateOf(job);
  if (gate == nullptr) return;
  gate->active -= 1;
  while (gate->active < gate->limit && !gate->waiting.empty()) {
    Job& next = jobs_.at(*gate->waiting.begin());
    gate->waiting.erase(gate->waiting.begin());
    blocked_.erase(next.id);
    Enqueue(next, now);  // takes a place, or waits again behind a dependency
    MarkDirty(next);
  }
  if (gate->active == 0 && gate->waiting.empty()) arrays_.erase(job.array_id);
}

void Controller::Unblock(const Job& job) {
  if (job.array_id.value != 0) {
    if (auto it = arrays_.find(job.array_id); it != arrays_.end()) it->second.waiting.erase(job.id);
  }
  if (job.spec.begin) {
    auto [from, to] = begins_.equal_range(*job.spec.begin);
    for (auto it = from; it != to; ++it) {
      if (it->second == job.id) {
        begins_.erase(it);
        break;
      }
    }
  }
  if (job.spec.singleton) {
    auto [from, to] = singletons_.equal_range(SingletonKey(job));
    for (auto it = from; it != to; ++it) {
      if (it->second == job.id) {
        singletons_.erase(it);
        break;
      }
    }
  }
}

std::string Controller::SingletonKey(const Job& job) { return job.user + '\n' + job.spec.name; }

// The dependencies first (after-ok, after-any, after-notok), then the singleton rule, then the
// begin time: the first that holds the job back says why.
Controller::Outcome Controller::OutcomeOf(JobId dep) const {
  Outcome out;
  const Job* d = FindJob(dep);
  if (d == nullptr) return out;  // gone: counts as met
  // An array's id stands for every task of the array, as in Slurm.
  const bool array = d->array_id == dep;
  for (auto it = jobs_.find(dep);
       it != jobs_.end() && (it->first == dep || (array && it->second.array_id == dep)); ++it) {
    const Job& t = it->second;
    if (!IsTerminal(t.state)) {
      out.all_ended = false;
    } else if (t.state != JobState::kSucceeded) {
      out.failed = &t;
    }
  }
  return out;
}

Controller::Waiting Controller::WaitingFor(const Job& job, TimePoint now) const {
  auto ended = [&](JobId dep) { return OutcomeOf(dep).all_ended; };
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
    Outcome o = OutcomeOf(dep);
    if (o.failed != nullptr) return never(dep, "after-ok", o.failed);
    if (!o.all_ended) wait_for(dep, "succeed");
  }
  for (JobId dep : job.spec.after_any) {
    if (!ended(dep)) wait_for(dep, "end");
  }
  for (JobId dep : job.spec.after_notok) {
    Outcome o = OutcomeOf(dep);
    if (!o.all_ended) {
      wait_for(dep, "end other than succeeded");
    } else if (o.failed == nullptr && FindJob(dep) != nullptr) {
      return never(dep, "after-notok", nullptr);
    }
  }
  if (waiting) return *waiting;
  if (job.spec.singleton) {
    // Jobs are numbered in submit order: an earlier one of the same name and user not ended.
    for (auto it = jobs_.begin(); it != jobs_.end() && it->first < job.id; ++it) {
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

void Controller::OnTerminal(const Job& ended, TimePoint now) {
  if (blocked_.empty()) return;
  std::vector<JobId> check;
  auto names = [&](const std::vector<JobId>& ids) {
    return std::find(ids.begin(), ids.end(), ended.id) != ids.end() ||
           (ended.array_id.value != 0 &&
            std::find(ids.begin(), ids.end(), ended.array_id) != ids.end());
  };
  // Jobs that run after it: a scan of the blocked ones (dependencies are rare; a cluster's
  // blocked jobs are few).
  for (JobId id : blocked_) {
    const Job& j = jobs_.at(id);
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
  Recheck(check, now);
}

void Controller::Recheck(const std::vector<JobId>& ids, TimePoint now) {
  for (JobId id : ids) {
    Job& j = jobs_.at(id);
    if (j.state != JobState::kPending || !blocked_.count(id)) continue;
    Waiting w = WaitingFor(j, now);
    if (!w.never && w.reason == j.reason && w.reason != WaitReason::kNone) {
      j.reason_detail = std::move(w.detail);  // still waiting, perhaps for another job
      continue;
    }
    blocked_.erase(id);
    Unblock(j);
    Enqueue(j, now);
    MarkDirty(j);
  }
}

void Controller::ReleaseBegun(TimePoint now) {
  std::vector<JobId> due;
  for (auto it = begins_.begin(); it != begins_.end() && it->first <= now; ++it)
    due.push_back(it->second);
  if (!due.empty()) Recheck(due, now);
}

}  // namespace baton::control
