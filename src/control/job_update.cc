#include "control/job_update.h"

#include <algorithm>

#include "control/job_checks.h"
#include "core/time.h"

namespace baton::control {

namespace {

constexpr const char* kWhileRunning[] = {"time_limit", "name"};

}  // namespace

bool ChangesOnlyWhatRunsOn(const std::set<std::string>& set) {
  return std::all_of(set.begin(), set.end(), [](const std::string& f) {
    return std::find(std::begin(kWhileRunning), std::end(kWhileRunning), f) !=
           std::end(kWhileRunning);
  });
}

Result<JobSpec> Patched(const Job& job, const UpdateJob& c, const Policy& policy,
                        const std::map<JobId, Job>& jobs, const BudgetBook& budgets,
                        TimePoint now) {
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
    if (const PoolPolicy* pool = policy.Pool(spec.pool)) {
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
  RETURN_IF_ERROR(CheckDependencies(jobs, spec, &job));
  if (c.set.count("project") && spec.project != job.spec.project) {
    RETURN_IF_ERROR(budgets.Allows(policy, spec.project, now));
  }
  return spec;
}

}  // namespace baton::control
