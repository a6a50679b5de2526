// `baton update` (PATCH /v1/jobs/{id}), as Slurm's `scontrol update`: a waiting job's time
// limit, priority, name, project, pool, begin time, dependencies and retries; a running job's
// time limit (within its pool's maximum; its nodes are told the new one) and name.
#include <algorithm>

#include "control/controller.h"
#include "core/quantity.h"

namespace baton::control {

namespace {

constexpr const char* kWhileRunning[] = {"time_limit", "name"};

bool ChangesOnlyWhatRunsOn(const std::set<std::string>& set) {
  return std::all_of(set.begin(), set.end(), [](const std::string& f) {
    return std::find(std::begin(kWhileRunning), std::end(kWhileRunning), f) !=
           std::end(kWhileRunning);
  });
}

}  // namespace

// The job's spec with the update's fields, checked as a submit checks them; nothing changes.
Result<JobSpec> Controller::Patched(const Job& job, const UpdateJob& c, TimePoint now) {
  const std::string name = TaskName(job.array_id.value != 0 ? job.array_id : job.id,
                                    job.array_id.value != 0 ? job.array_index : -1);
  if (IsTerminal(job.state)) {
    return Err(Conflict("job " + name + " is " + std::string(JobStateName(job.state)) +
                        ": an ended job does not change (`baton resubmit " + name +
                        "` runs it again, with flags changed)"));
  }
  if (job.state == JobState::kRunning && !ChangesOnlyWhatRunsOn(c.set)) {
    return Err(Conflict("job " + name +
                        " is running: only its time limit and name change now; the rest "
                        "while it waits"));
  }
  JobSpec spec = job.spec;
  for (const std::string& f : c.set) {
    if (f == "time_limit") spec.time_limit = c.fields.time_limit;
    if (f == "priority") spec.priority = c.fields.priority;
    if (f == "name") spec.name = c.fields.name;
    if (f == "project") spec.project = c.fields.project;
    if (f == "pool") spec.pool = c.fields.pool;
    if (f == "begin") spec.begin = c.fields.begin;
    if (f == "after") spec.after = c.fields.after;
    if (f == "after_any") spec.after_any = c.fields.after_any;
    if (f == "after_notok") spec.after_notok = c.fields.after_notok;
    if (f == "retries") spec.retries = c.fields.retries;
  }
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  if (c.set.count("time_limit") || c.set.count("pool")) {
    if (const PoolPolicy* pool = options_.policy.Pool(spec.pool)) {
      if (pool->max_time_limit.count() > 0 &&
          (spec.time_limit.count() == 0 || spec.time_limit > pool->max_time_limit)) {
        return Err(InvalidArgument("time_limit: pool " + spec.pool + " allows at most " +
                                   FormatDuration(pool->max_time_limit)));
      }
      if (spec.interactive != Interactive::kNone && pool->interactive &&
          spec.time_limit > pool->session_time_limit) {
        return Err(InvalidArgument("time_limit: sessions in pool " + spec.pool + " run at most " +
                                   FormatDuration(pool->session_time_limit)));
      }
    }
  }
  for (const auto& [field, ids] :
       {std::pair{"after", &spec.after}, std::pair{"after_any", &spec.after_any},
        std::pair{"after_notok", &spec.after_notok}}) {
    for (JobId dep : *ids) {
      if (jobs_.count(dep) == 0)
        return Err(
            InvalidArgument(std::string(field) + ": job " + dep.ToString() + " does not exist"));
      if (dep == job.id || (job.array_id.value != 0 && dep == job.array_id))
        return Err(InvalidArgument(std::string(field) + ": a job cannot wait for itself"));
    }
  }
  if (c.set.count("project") && spec.project != job.spec.project) {
    RETURN_IF_ERROR(budgets_.Allows(options_.policy, spec.project, now));
  }
  if (c.set.count("pool") && spec.pool != job.spec.pool) {
    ASSIGN_OR_RETURN(Resources fits, Feasible(spec, job.user));
    (void)fits;
  }
  return spec;
}

void Controller::ApplyPatch(Job& job, JobSpec spec, TimePoint now) {
  const bool pending = job.state == JobState::kPending;
  const bool time_changed = spec.time_limit != job.spec.time_limit;
  if (pending) {
    // Out of the queue and its indexes, and back in with what changed (its place in an
    // array's throttle given up and taken again).
    const bool queued = !gate_.Blocked(job.id);
    Dequeue(job);
    if (queued && job.array_id.value != 0) LeaveGate(job, now);
  }
  if (spec.project != job.spec.project) job.account.id = -1;  // fair share of the new one
  job.spec = std::move(spec);
  MarkDirty(job);
  if (pending) Enqueue(job, now);
  if (job.state == JobState::kRunning && time_changed) {
    // Its nodes keep its time: a launch order again for each part still running says the
    // new limit (an agent takes a launch of what it runs as that).
    for (size_t rank = 0; rank < job.allocation.size(); ++rank) {
      if (!job.allocation[rank].ended) Launch(job, rank);
    }
  }
}

Result<JobShown> Controller::Update(const UpdateJob& c, TimePoint now) {
  const Job* found = FindJob(c.id, c.array_index);
  if (found == nullptr) {
    return Err(NotFound("job " + TaskName(c.id, c.array_index) + " does not exist"));
  }
  Job& job = jobs_.at(found->id);
  if (!c.caller.admin && job.user != c.caller.user) {
    return Err(
        PermissionDenied("job " + TaskName(c.id, c.array_index) + " belongs to " + job.user));
  }
  if (c.set.empty()) return Err(InvalidArgument("nothing to change: name a field"));
  // An array's id alone: every task that can take the change (waiting ones; running ones too
  // for a time limit or name), checked first, so that all change or none.
  std::vector<std::pair<Job*, JobSpec>> changes;
  if (c.array_index < 0 && job.array_id == job.id) {
    for (auto it = jobs_.find(job.id); it != jobs_.end() && it->second.array_id == job.id; ++it) {
      Job& task = it->second;
      if (IsTerminal(task.state)) continue;
      if (task.state == JobState::kRunning && !ChangesOnlyWhatRunsOn(c.set)) continue;
      auto spec = Patched(task, c, now);
      if (!spec) return Err(spec.error());
      changes.emplace_back(&task, std::move(*spec));
    }
    if (changes.empty()) {
      return Err(Conflict("array " + job.id.ToString() +
                          " has no task this can change (ended, or running)"));
    }
  } else {
    auto spec = Patched(job, c, now);
    if (!spec) return Err(spec.error());
    changes.emplace_back(&job, std::move(*spec));
  }
  for (auto& [task, spec] : changes) ApplyPatch(*task, std::move(spec), now);
  return JobShown{job};
}

}  // namespace baton::control
