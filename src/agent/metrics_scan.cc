#include "agent/metrics_scan.h"

#include <optional>

#include "codec/json_codec.h"

namespace baton::agent {

MetricsScan ScanMetricsLines(std::string_view data, const LaunchOrder& order,
                             std::string* checkpoint, TimePoint now) {
  MetricsScan scan;
  size_t end = data.rfind('\n');
  if (end == std::string_view::npos) {
    // One line longer than a read is no checkpoint line: skip it.
    if (data.size() >= kMetricsRead) scan.consumed = static_cast<int64_t>(data.size());
    return scan;
  }
  std::optional<std::string> last;
  // The tracked metric's lowest, highest and last value in this stretch of the file.
  std::optional<JobEvent> best_here, top_here, last_here;
  size_t start = 0;
  while (start <= end) {
    size_t nl = data.find('\n', start);
    codec::MetricsLine line =
        codec::ReadMetricsLine(data.substr(start, nl - start), order.best_metric);
    start = nl + 1;
    if (line.checkpoint) last = *checkpoint = *line.checkpoint;
    if (!line.value) continue;
    JobEvent e{.job = order.job,
               .attempt = order.attempt,
               .kind = JobEvent::Kind::kMetric,
               .at = now,
               .message = *checkpoint,
               .value = *line.value,
               .step = line.step};
    last_here = e;
    if (!best_here || e.value < best_here->value) best_here = e;
    if (!top_here || e.value > top_here->value) top_here = e;
  }
  scan.consumed = static_cast<int64_t>(end + 1);
  for (const auto* e : {&best_here, &top_here, &last_here}) {
    if (*e) scan.events.push_back(**e);
  }
  if (last) {
    scan.events.push_back(JobEvent{.job = order.job,
                                   .attempt = order.attempt,
                                   .kind = JobEvent::Kind::kCheckpoint,
                                   .at = now,
                                   .message = *last});
  }
  return scan;
}

}  // namespace baton::agent
