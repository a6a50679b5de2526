// Workload traces for `baton sim`: the CSV format of PRODUCT.md §6 (a header, then one job a
// line). Every error names the file, the line and the column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/trace_job.h"

namespace baton::sim {

// Parses a trace: columns submit_time, duration, gpus (required); name, user, project,
// priority, gpu_type, time_limit, nodes, preemptible (optional; empty or absent: preemptible, a
// batch job's default), in any order. Times are seconds (a number) or durations such as 90s,
// 2h. At most `max_jobs` rows.
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
