// What `baton resubmit ID` and POST /v1/jobs/{id}/resubmit submit: the job's spec again, not
// held, a task of an array alone, a run of a recurring job once (now).
#pragma once

#include "core/job.h"

namespace baton {

inline JobSpec ResubmitSpec(const Job& job) {
  JobSpec spec = job.spec;
  spec.hold = false;  // held again only when asked
  if (job.array_id.value != 0) spec.array.clear();
  if (job.cron_id.value != 0) {
    spec.schedule.clear();
    spec.begin.reset();
  }
  return spec;
}

}  // namespace baton
