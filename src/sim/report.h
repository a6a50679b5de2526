// The pictures of `baton sim --report DIR`: self-contained SVG charts (no script, no external
// fonts) comparing simulated runs, one line per run. Output depends only on the input, byte for
// byte, so reports can be diffed and pinned.
#pragma once

#include <string>
#include <vector>

#include "sim/simulator.h"

namespace baton::sim {

struct ReportRun {
  std::string policy;                 // legend label
  const SimResult* result = nullptr;  // borrowed; null draws as a run without data
  double gpus = 0;                    // GPUs in the cluster (for utilisation = busy / gpus)
};

// Chart geometry in SVG user units, public so tests can say where a value must be drawn.
// Values map linearly (utilisation 0..100 %, CDF 0..1) from kPlotBottom up to kPlotTop; time
// maps from the earliest to the latest timeline entry over kPlotLeft..kPlotRight.
inline constexpr double kChartWidth = 900;
inline constexpr double kChartHeight = 420;
inline constexpr double kPlotLeft = 70;
inline constexpr double kPlotRight = 720;  // the legend sits to the right
inline constexpr double kPlotTop = 50;
inline constexpr double kPlotBottom = 360;
// Time charts average the step function over at most this many equal intervals; the CDF keeps
// at most this many quantiles. Both keep a 200,000-event run's pictures small.
inline constexpr int kMaxTimeColumns = 800;
inline constexpr int kMaxCdfPoints = 1000;

// Busy share of the cluster's GPUs over time (0..100 %), one line per run: the time-weighted
// mean of each interval. A run with gpus <= 0 has no line.
std::string UtilisationSvg(const std::vector<ReportRun>& runs);
// Pending jobs over time, one line per run: the time-weighted mean of each interval.
std::string QueueSvg(const std::vector<ReportRun>& runs);
// Empirical CDF of job completion time (end - submit of finished jobs), log-scale x axis
// in seconds with human tick labels (1s, 10s, 1m, 10m, 1h, 10h, 1d, 10d, ...), one line per run.
// Times under one second are drawn at 1s.
std::string JctCdfSvg(const std::vector<ReportRun>& runs);

}  // namespace baton::sim
