#include "control/admission.h"

#include "core/quantity.h"
#include "core/time.h"
#include "sched/holdings.h"

namespace baton::control {

Duration DefaultTimeLimit(const JobSpec& spec, const PoolPolicy& pool) {
  return pool.interactive && spec.interactive != Interactive::kNone ? pool.session_time_limit
                                                                    : pool.default_time_limit;
}

Status AdmitToPool(const JobSpec& spec, const Policy& policy) {
  if (policy.OutputLimit(spec.output_limit, spec.pool) > policy.max_output_limit) {
    return InvalidArgument("output_limit: this cluster keeps at most " +
                           FormatSize(policy.max_output_limit) + " of a job's output per node");
  }
  const PoolPolicy* pool = policy.Pool(spec.pool);
  if (pool == nullptr) return Status::Ok();
  Duration limit = spec.time_limit.count() > 0 ? spec.time_limit : DefaultTimeLimit(spec, *pool);
  if (pool->max_time_limit.count() > 0 && (limit.count() == 0 || limit > pool->max_time_limit)) {
    return InvalidArgument("time_limit: pool " + spec.pool + " allows at most " +
                           FormatDuration(pool->max_time_limit));
  }
  if (pool->max_milli_per_job != kNoLimit && spec.resources.milli_gpus > pool->max_milli_per_job) {
    return InvalidArgument("resources.gpus: pool " + spec.pool + " allows at most " +
                           FormatMilli(pool->max_milli_per_job) + " GPUs per job");
  }
  return Status::Ok();
}

Status AdmitNotPreemptible(const JobSpec& spec, const Policy& policy) {
  if (Preemptible(spec) || !sched::AnyGuarantee(policy)) return Status::Ok();
  const int64_t guaranteed = policy.Project(spec.project).guaranteed_milli;
  if (spec.resources.milli_gpus <= guaranteed) return Status::Ok();
  const std::string kind =
      spec.preemptible ? "it is not preemptible" : "it is not preemptible (a session's default)";
  return InvalidArgument("preemptible: " + kind + ", so it runs within project " + spec.project +
                         "'s guarantee, which is " +
                         (guaranteed == 0
                              ? "none"
                              : FormatMilli(guaranteed) + (guaranteed == 1000 ? " GPU" : " GPUs")) +
                         ", and it asks for " + FormatMilli(spec.resources.milli_gpus) +
                         (spec.resources.milli_gpus == 1000 ? " GPU" : " GPUs") +
                         " (--preemptible lets it use idle GPUs, and be preempted for them)");
}

Status AdmitSession(const std::map<JobId, Job>& jobs, const JobSpec& spec, const PoolPolicy& pool,
                    const std::string& user) {
  if (!pool.interactive || spec.interactive == Interactive::kNone) return Status::Ok();
  if (spec.time_limit > pool.session_time_limit) {
    return InvalidArgument("time_limit: sessions in pool " + spec.pool + " run at most " +
                           FormatDuration(pool.session_time_limit) +
                           " (a batch job, baton submit, may run longer)");
  }
  if (pool.max_sessions_per_user <= 0) return Status::Ok();
  std::vector<std::string> open;
  for (const auto& [id, job] : jobs) {
    if (job.user == user && job.spec.pool == spec.pool &&
        job.spec.interactive != Interactive::kNone && !IsTerminal(job.state))
      open.push_back(id.ToString());
  }
  if (static_cast<int>(open.size()) < pool.max_sessions_per_user) return Status::Ok();
  std::string list;
  for (const std::string& id : open) list += (list.empty() ? "" : ", ") + id;
  return Conflict("pool " + spec.pool + " allows " + std::to_string(pool.max_sessions_per_user) +
                  " session(s) per user; " + user + " has " + list +
                  " (baton sessions lists them; baton cancel ends one)");
}

Job DraftJob(const JobSpec& spec, const Resources& resources, const std::string& user,
             const Policy& policy, TimePoint now) {
  Job job;
  job.spec = spec;
  job.spec.resources = resources;
  if (const PoolPolicy* pool = policy.Pool(spec.pool); pool && spec.time_limit.count() == 0)
    job.spec.time_limit = DefaultTimeLimit(spec, *pool);
  job.user = user;
  job.submitted_at = now;
  return job;
}

}  // namespace baton::control
