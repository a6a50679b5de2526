// What a stretch of a job's metrics file tells the controller ($BATON_METRICS_FILE: JSON lines
// the job appends, docs/api.md "What a job sees"): the checkpoints it announced, and the values
// of the metric its job tracks (LaunchOrder::best_metric). The agent reads the file from where
// its last scan stopped and reports what this says (agent.cc: ScanMetrics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/protocol.h"

namespace baton::agent {

// The most of the file one scan reads.
inline constexpr size_t kMetricsRead = 1 << 20;

struct MetricsScan {
  // Bytes looked at: the whole lines in the stretch (a line still being written waits for the
  // next scan), or one line longer than a read, skipped.
  int64_t consumed = 0;
  // The tracked metric's lowest, highest and last value of the stretch (the agent does not
  // know which way is better), each with the latest checkpoint, then that checkpoint if the
  // stretch announced one.
  std::vector<JobEvent> events;
};

// Scans `data`, the file from where the last scan stopped (at most kMetricsRead bytes), of the
// job of `order`; `checkpoint` is the latest checkpoint seen before, updated.
MetricsScan ScanMetricsLines(std::string_view data, const LaunchOrder& order,
                             std::string* checkpoint, TimePoint now);

}  // namespace baton::agent
