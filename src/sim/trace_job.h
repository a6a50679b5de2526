// A job of a workload trace, as every trace loader makes it (sim/trace.h reads the files and
// tells their kinds apart; sim/sacct.h and the others each read one kind).
#pragma once

#include <optional>
#include <string>

#include "core/job.h"

namespace baton::sim {

struct TraceJob {
  Duration submit{0};    // from the trace's start
  Duration duration{0};  // how long it runs once given its GPUs
  // gpus (milli), nodes, gpu_type; nodes 0 (a Baton CSV row with none): as `baton submit`
  // without -N, the fewest whole nodes that hold the GPUs split evenly, chosen at submit
  Resources resources;
  std::string name;
  std::string user = "user";
  std::string project = "default";
  Priority priority = Priority::kNormal;
  Duration time_limit{0};           // 0 = none
  std::optional<bool> preemptible;  // unset: a batch job's default (preemptible)
  int line = 0;                     // in the trace file, for messages

  // The job spec it is submitted as (command "sim").
  JobSpec Spec() const;
};

}  // namespace baton::sim
