// The body of PATCH /v1/jobs/{id} (`baton update`): the fields of a job's spec that change.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "core/job.h"
#include "core/status.h"

namespace baton::codec {

struct JobPatch {
  JobSpec fields;             // the values of the fields named in `set`
  std::set<std::string> set;  // time_limit, priority, name, project, pool, begin, after,
                              // after_any, after_notok, retries
};

// {"time_limit": "4h", "priority": "high", ...}: each field read as a spec's is ("begin":
// null clears it). Any other field is an error naming those that change.
Result<JobPatch> DecodeJobPatch(std::string_view json);

}  // namespace baton::codec
