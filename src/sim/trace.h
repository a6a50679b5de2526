// Workload traces for `baton sim`: the CSV format of PRODUCT.md §6 (a header, then one job a
// line). Every error names the file, the line and the column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace baton::sim {

struct TraceJob {
  Duration submit{0};    // from the trace's start
  Duration duration{0};  // how long it runs once given its GPUs
  Resources resources;   // gpus (milli), nodes, gpu_type
  std::string name;
  std::string user = "user";
  std::string project = "default";
  Priority priority = Priority::kNormal;
  Duration time_limit{0};  // 0 = none
  bool preemptible = false;
  int line = 0;  // in the trace file, for messages

  // The job spec it is submitted as (command "sim").
  JobSpec Spec() const;
};

// Parses a trace: columns submit_time, duration, gpus (required); name, user, project,
// priority, gpu_type, time_limit, nodes, preemptible (optional), in any order. Times are
// seconds (a number) or durations such as 90s, 2h. At most `max_jobs` rows.
Result<std::vector<TraceJob>> ParseTraceCsv(std::string_view text, std::string_view file,
                                            size_t max_jobs = 10'000'000);

// Parses a trace file of any known kind, told apart by its header line: the CSV above, the
// Philly trace (timestamp,duration,num_gpus,gpu_time,cluster: each virtual cluster becomes a
// project with one user; jobs over 8 GPUs are gangs over whole 8-GPU shares), or an Alibaba
// openb pod list (name,cpu_milli,...,creation_time,deletion_time: fractional gpu_milli,
// gpu_spec as the GPU type, qos as the priority class; pods without both times are left out).
Result<std::vector<TraceJob>> ParseTrace(std::string_view text, std::string_view file,
                                         size_t max_jobs = 10'000'000);

}  // namespace baton::sim
