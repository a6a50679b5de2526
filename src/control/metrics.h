// What the controller counts for GET /metrics (PRODUCT §5): a snapshot taken on the loop's
// thread and rendered in Prometheus' text format by api/metrics.cc.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/names.h"

namespace baton::control {

// A cumulative histogram with fixed upper bounds, Prometheus style: counts[i] holds the
// observations <= bounds[i] (and above bounds[i-1]); the +Inf bucket is `count`.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // per bucket, not cumulative; one per bound
  uint64_t count = 0;
  double sum = 0;

  explicit Histogram(std::vector<double> upper_bounds = {})
      : bounds(std::move(upper_bounds)), counts(bounds.size(), 0) {}
  void Observe(double value) {
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (value <= bounds[i]) {
        ++counts[i];
        break;
      }
    }
    ++count;
    sum += value;
  }
};

// What a GPU is doing as GET /metrics counts it (failed: out of service by its health or a
// node that is not ready).
enum class GpuUse { kIdle, kAllocated, kDrained, kFailed };
inline constexpr std::array<std::string_view, 4> kGpuUseNames = {"idle", "allocated", "drained",
                                                                 "failed"};
inline std::string_view GpuUseName(GpuUse u) { return EnumName(kGpuUseNames, u); }

struct GpuMetrics {
  std::string node;
  int index = 0;
  std::string model;
  GpuUse state = GpuUse::kIdle;
  bool sampled = false;  // the gauges below came from the agent
  int utilization_pct = 0;
  int64_t memory_used_bytes = 0;
  int64_t memory_total_bytes = 0;
  int temperature_c = 0;
  int power_w = 0;
};

// What the controller counts as it goes, since it started (not stored): the controller keeps
// one and each snapshot copies it.
struct Counters {
  uint64_t jobs_submitted = 0;
  std::map<std::string, uint64_t> jobs_finished;  // by final state
  uint64_t preemptions = 0;
  uint64_t sessions_reclaimed = 0;   // idle sessions stopped
  double reclaimed_gpu_seconds = 0;  // their GPUs x the time left of their time limits
  Histogram wait_seconds{{1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}};  // to first start
};

struct MetricsSnapshot : Counters {
  std::map<std::string, int64_t> jobs_by_state;   // every state, 0 included
  std::map<std::string, int64_t> nodes_by_state;  // ready, drained, lost, awaiting
  std::vector<GpuMetrics> gpus;
  std::map<std::string, double> project_gpu_seconds;  // all attempts, running ones to now
  std::map<std::string, double> project_cost;         // currency units
  uint64_t events = 0;                                // cluster events raised
};

}  // namespace baton::control
