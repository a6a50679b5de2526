#include "control/job_checks.h"

#include <string>
#include <utility>

#include "control/read_outs.h"

namespace baton::control {

Result<const Job*> FindOwned(const std::map<JobId, Job>& jobs, JobId id, int array_index,
                             const Caller& caller) {
  const Job* job = FindJob(jobs, id, array_index);
  if (job == nullptr) return Err(NotFound("job " + TaskName(id, array_index) + " does not exist"));
  if (!caller.admin && job->user != caller.user) {
    return Err(PermissionDenied("job " + TaskName(id, array_index) + " belongs to " + job->user));
  }
  return job;
}

Status CheckDependencies(const std::map<JobId, Job>& jobs, const JobSpec& spec, const Job* self) {
  for (const auto& [field, ids] :
       {std::pair{"after", &spec.after}, std::pair{"after_any", &spec.after_any},
        std::pair{"after_notok", &spec.after_notok}}) {
    for (JobId dep : *ids) {
      if (jobs.count(dep) == 0)
        return InvalidArgument(std::string(field) + ": job " + dep.ToString() + " does not exist");
      if (self != nullptr &&
          (dep == self->id || (self->array_id.value != 0 && dep == self->array_id)))
        return InvalidArgument(std::string(field) + ": a job cannot wait for itself");
    }
  }
  return Status::Ok();
}

}  // namespace baton::control
