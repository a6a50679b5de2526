// `baton update` (PATCH /v1/jobs/{id}), as Slurm's `scontrol update`: the update of a job, or
// of every task of an array that can take it, all or none, put in place: the queue, and a
// running job's nodes told its new time limit. What may change and the spec it makes are
// job_update.h's.
#include "control/controller.h"
#include "control/job_checks.h"
#include "control/job_update.h"

namespace baton::control {

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
  const std::string project = job.spec.project;
  job.spec = std::move(spec);
  job.account = {};  // made from the spec (project, pool): made again from the new one
  if (job.spec.project != project) tally_.Retagged(job, project);
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
  ASSIGN_OR_RETURN(const Job* found, FindOwned(jobs_, c.id, c.array_index, c.caller));
  Job& job = jobs_.at(found->id);
  if (c.set.empty()) return Err(InvalidArgument("nothing to change: name a field"));
  // The task's spec with the update (job_update.h), its new pool's nodes able to hold it.
  auto patched = [&](const Job& task) -> Result<JobSpec> {
    ASSIGN_OR_RETURN(JobSpec spec,
                     Patched(task, c, options_.policy, jobs_, ledgers_.budgets(), now));
    if (c.set.count("pool") && spec.pool != task.spec.pool) {
      ASSIGN_OR_RETURN(Resources fits, nodes_.Feasible(spec, task.user));
      (void)fits;
    }
    return spec;
  };
  // An array's id alone: every task that can take the change (waiting ones; running ones too
  // for a time limit or name), checked first, so that all change or none.
  std::vector<std::pair<Job*, JobSpec>> changes;
  if (c.array_index < 0 && job.array_id == job.id) {
    for (auto it = jobs_.find(job.id); it != jobs_.end() && it->second.array_id == job.id; ++it) {
      Job& task = it->second;
      if (IsTerminal(task.state)) continue;
      if (task.state == JobState::kRunning && !ChangesOnlyWhatRunsOn(c.set)) continue;
      auto spec = patched(task);
      if (!spec) return Err(spec.error());
      changes.emplace_back(&task, std::move(*spec));
    }
    if (changes.empty()) {
      return Err(Conflict("array " + job.id.ToString() +
                          " has no task this can change (ended, or running)"));
    }
  } else {
    auto spec = patched(job);
    if (!spec) return Err(spec.error());
    changes.emplace_back(&job, std::move(*spec));
  }
  for (auto& [task, spec] : changes) ApplyPatch(*task, std::move(spec), now);
  return JobShown{job};
}

}  // namespace baton::control
