#include "control/session_limits.h"

#include "core/time.h"

namespace baton::control {

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

}  // namespace baton::control
