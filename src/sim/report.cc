#include "sim/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

namespace baton::sim {
namespace {

// Distinguishable on screen and in print; after eight runs the colours repeat dashed.
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr size_t kMaxLegendChars = 22;  // what fits between the plot and the right edge

using Point = std::pair<double, double>;  // data units: (x, y)

// Fixed-point text without the locale (snprintf's decimal point follows LC_NUMERIC) and
// without "-0.0", so equal pictures are equal bytes.
std::string Fixed(double v, int decimals) {
  if (!std::isfinite(v)) v = 0;
  double scale = std::pow(10.0, decimals);
  v = std::round(v * scale) / scale;
  if (v == 0) v = 0;  // drops the sign of -0
  char buf[512];      // room for any double in fixed notation
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed, decimals);
  if (ec != std::errc()) return "0";
  return std::string(buf, end);
}

std::string Num(double v) { return Fixed(v, 1); }

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? ' ' : c;
    }
  }
  return out;
}

// Cuts at a code point boundary so a multi-byte UTF-8 character is never split.
std::string Shorten(const std::string& label) {
  size_t chars = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    if ((static_cast<unsigned char>(label[i]) & 0xC0) == 0x80) continue;
    if (++chars > kMaxLegendChars) return label.substr(0, i) + "...";
  }
  return label;
}

// 1, 2 or 5 times a power of ten, giving about `target` intervals over `range`.
double NiceStep(double range, int target) {
  double raw = range / target;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / magnitude;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
}

int DecimalsFor(double step) {
  return step >= 1 ? 0 : std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 9);
}

struct Axis {
  double lo = 0, hi = 0;  // hi <= lo: nothing to draw
  bool log = false;
  std::vector<std::pair<double, std::string>> ticks;  // value, label
  std::string label;
};

Axis ValueAxis(double hi, std::string label) {
  Axis axis;
  axis.hi = hi;
  axis.label = std::move(label);
  return axis;
}

// Ticks at multiples of a nice step within [lo, hi]; `suffix` follows each label.
void LinearTicks(Axis& axis, int target, const std::string& suffix) {
  double step = NiceStep(axis.hi - axis.lo, target);
  if (!(step > 0) || !std::isfinite(step)) return;
  int decimals = DecimalsFor(step);
  double first = std::ceil(axis.lo / step - 1e-9) * step;
  for (int i = 0; i < 50; ++i) {
    double v = first + i * step;
    if (v > axis.hi + step * 1e-9) break;
    axis.ticks.emplace_back(v, Fixed(v, decimals) + suffix);
  }
}

double Position(const Axis& axis, double v, double from, double to) {
  double a = axis.log ? std::log10(axis.lo) : axis.lo;
  double b = axis.log ? std::log10(axis.hi) : axis.hi;
  double x = axis.log ? std::log10(v) : v;
  return from + (x - a) / (b - a) * (to - from);
}
double X(const Axis& axis, double v) { return Position(axis, v, kPlotLeft, kPlotRight); }
double Y(const Axis& axis, double v) { return Position(axis, v, kPlotBottom, kPlotTop); }

struct Chart {
  std::string title, subtitle;
  Axis x, y;
  std::vector<std::vector<Point>> series;  // one per run, in the runs' order; empty: no line
};

void Text(std::string& out, double x, double y, const char* anchor, const std::string& text,
          const std::string& attrs = "") {
  out += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + anchor + "\"" + attrs +
         ">" + Escape(text) + "</text>\n";
}

void Line(std::string& out, double x1, double y1, double x2, double y2) {
  out += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
         Num(y2) + "\"/>\n";
}

std::string Header(const Chart& chart) {
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kChartWidth) +
                    "\" height=\"" + Num(kChartHeight) + "\" viewBox=\"0 0 " + Num(kChartWidth) +
                    " " + Num(kChartHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out += "<title>" + Escape(chart.title) + "</title>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  Text(out, kChartWidth / 2, 22, "middle", chart.title, " font-size=\"16\" font-weight=\"bold\"");
  if (!chart.subtitle.empty()) {
    Text(out, kChartWidth / 2, 40, "middle", chart.subtitle, " fill=\"#555555\"");
  }
  return out;
}

std::string NoData(const Chart& chart) {
  std::string out = Header(chart);
  out += "<rect x=\"" + Num(kPlotLeft) + "\" y=\"" + Num(kPlotTop) + "\" width=\"" +
         Num(kPlotRight - kPlotLeft) + "\" height=\"" + Num(kPlotBottom - kPlotTop) +
         "\" fill=\"none\" stroke=\"#cccccc\"/>\n";
  Text(out, (kPlotLeft + kPlotRight) / 2, (kPlotTop + kPlotBottom) / 2, "middle", "no data",
       " font-size=\"14\" fill=\"#777777\"");
  return out + "</svg>\n";
}

std::string Polyline(const Chart& chart, const std::vector<Point>& points) {
  std::string coords, last;
  for (const auto& [x, y] : points) {
    std::string p = Num(X(chart.x, x)) + "," + Num(Y(chart.y, y));
    if (p == last) continue;  // invisible at this resolution; keeps the file small
    if (!coords.empty()) coords += ' ';
    coords += p;
    last = std::move(p);
  }
  return coords;
}

std::string Stroke(size_t run) {
  std::string s = std::string(" stroke=\"") + kPalette[run % kPaletteSize] + "\"";
  if ((run / kPaletteSize) % 2 == 1) s += " stroke-dasharray=\"6,3\"";
  return s;
}

std::string Render(const Chart& chart, const std::vector<ReportRun>& runs) {
  bool any = std::any_of(chart.series.begin(), chart.series.end(),
                         [](const auto& s) { return !s.empty(); });
  if (!any || !(chart.x.hi > chart.x.lo) || !(chart.y.hi > chart.y.lo)) return NoData(chart);
  std::string out = Header(chart);
  out += "<defs><clipPath id=\"plot\"><rect x=\"" + Num(kPlotLeft) + "\" y=\"" + Num(kPlotTop) +
         "\" width=\"" + Num(kPlotRight - kPlotLeft) + "\" height=\"" +
         Num(kPlotBottom - kPlotTop) + "\"/></clipPath></defs>\n";

  out += "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (const auto& [v, _] : chart.x.ticks) {
    Line(out, X(chart.x, v), kPlotTop, X(chart.x, v), kPlotBottom);
  }
  for (const auto& [v, _] : chart.y.ticks)
    Line(out, kPlotLeft, Y(chart.y, v), kPlotRight, Y(chart.y, v));
  out += "</g>\n";

  out += "<g stroke=\"#333333\" stroke-width=\"1\">\n";
  Line(out, kPlotLeft, kPlotBottom, kPlotRight, kPlotBottom);
  Line(out, kPlotLeft, kPlotTop, kPlotLeft, kPlotBottom);
  for (const auto& [v, _] : chart.x.ticks) {
    Line(out, X(chart.x, v), kPlotBottom, X(chart.x, v), kPlotBottom + 5);
  }
  for (const auto& [v, _] : chart.y.ticks)
    Line(out, kPlotLeft - 5, Y(chart.y, v), kPlotLeft, Y(chart.y, v));
  out += "</g>\n";

  out += "<g font-size=\"11\" fill=\"#333333\">\n";
  for (const auto& [v, label] : chart.x.ticks) {
    Text(out, X(chart.x, v), kPlotBottom + 18, "middle", label);
  }
  for (const auto& [v, label] : chart.y.ticks)
    Text(out, kPlotLeft - 8, Y(chart.y, v) + 4, "end", label);
  out += "</g>\n";
  Text(out, (kPlotLeft + kPlotRight) / 2, kPlotBottom + 42, "middle", chart.x.label);
  double mid = (kPlotTop + kPlotBottom) / 2;
  Text(out, 18, mid, "middle", chart.y.label, " transform=\"rotate(-90 18 " + Num(mid) + ")\"");

  out +=
      "<g fill=\"none\" stroke-width=\"1.5\" stroke-linejoin=\"round\" clip-path=\"url(#plot)\">\n";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    if (chart.series[i].empty()) continue;
    out += "<polyline" + Stroke(i) + " points=\"" + Polyline(chart, chart.series[i]) + "\"/>\n";
  }
  out += "</g>\n";

  out += "<g font-size=\"12\" fill=\"#222222\">\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    double y = kPlotTop + 10 + 20 * static_cast<double>(i);
    double x = kPlotRight + 15;
    out += "<g>\n<title>" + Escape(runs[i].policy) + "</title>\n";
    out += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(x + 22) + "\" y2=\"" +
           Num(y) + "\" stroke-width=\"2.5\"" + Stroke(i) + "/>\n";
    bool empty = i >= chart.series.size() || chart.series[i].empty();
    Text(out, x + 28, y + 4, "start", Shorten(runs[i].policy) + (empty ? " (no data)" : ""));
    out += "</g>\n";
  }
  out += "</g>\n";
  return out + "</svg>\n";
}

// Time-weighted mean of a step function over `columns` equal intervals of [t0, t1]: each
// timeline value holds from its time until the next entry's. Averaging, not sampling, keeps a
// short burst visible in proportion to its length. Intervals the run does not cover are left out.
template <typename Value>
std::vector<Point> ColumnMeans(const SimResult& result, Value value, double t0, double t1,
                               int columns) {
  std::vector<double> sum(columns, 0), covered(columns, 0);
  double span = t1 - t0;
  auto edge = [&](int k) { return k == columns ? t1 : t0 + span * k / columns; };
  const auto& tl = result.timeline;
  for (size_t i = 0; i + 1 < tl.size(); ++i) {
    double a = std::max(std::get<0>(tl[i]), t0), b = std::min(std::get<0>(tl[i + 1]), t1);
    double v = value(tl[i]);
    if (!(b > a) || !std::isfinite(v)) continue;
    // One column early in case rounding put `a` just past an edge.
    int k = std::clamp(static_cast<int>((a - t0) / span * columns) - 1, 0, columns - 1);
    for (; k < columns && edge(k) < b; ++k) {
      double overlap = std::min(b, edge(k + 1)) - std::max(a, edge(k));
      if (overlap <= 0) continue;
      sum[k] += v * overlap;
      covered[k] += overlap;
    }
  }
  std::vector<Point> points;
  for (int k = 0; k < columns; ++k) {
    if (covered[k] > 0) points.emplace_back((edge(k) + edge(k + 1)) / 2, sum[k] / covered[k]);
  }
  return points;
}

bool Usable(const ReportRun& run, bool needs_gpus) {
  return run.result != nullptr && (!needs_gpus || run.gpus > 0);
}

// The shared time axis: the earliest to the latest timeline entry of any usable run.
Axis TimeAxis(const std::vector<ReportRun>& runs, bool needs_gpus) {
  double t0 = INFINITY, t1 = -INFINITY;
  for (const auto& run : runs) {
    if (!Usable(run, needs_gpus)) continue;
    for (const auto& entry : run.result->timeline) {
      double t = std::get<0>(entry);
      if (!std::isfinite(t)) continue;
      t0 = std::min(t0, t);
      t1 = std::max(t1, t);
    }
  }
  Axis axis;
  if (!(t1 > t0) || !std::isfinite(t1 - t0)) return axis;  // lo == hi: Render says no data
  double unit = t1 - t0 < 72 * 3600.0 ? 3600.0 : 86400.0;
  axis.lo = t0 / unit;
  axis.hi = t1 / unit;
  axis.label = unit == 3600.0 ? "time (hours)" : "time (days)";
  LinearTicks(axis, 8, "");
  axis.lo = t0;  // the series are in seconds: keep the ticks' values in seconds too
  axis.hi = t1;
  for (auto& tick : axis.ticks) tick.first *= unit;
  return axis;
}

template <typename Value>
Chart TimeChart(const std::vector<ReportRun>& runs, bool needs_gpus, Value value) {
  Chart chart;
  chart.x = TimeAxis(runs, needs_gpus);
  for (const auto& run : runs) {
    if (!Usable(run, needs_gpus) || !(chart.x.hi > chart.x.lo)) {
      chart.series.emplace_back();
      continue;
    }
    auto v = [&](const auto& entry) { return value(run, entry); };
    chart.series.push_back(ColumnMeans(*run.result, v, chart.x.lo, chart.x.hi, kMaxTimeColumns));
  }
  return chart;
}

// Human ticks for seconds: 1s, 10s, 1m, 10m, 1h, 10h, 1d, then days by tens.
std::vector<std::pair<double, std::string>> HumanTicks(double up_to) {
  std::vector<std::pair<double, std::string>> ticks = {{1, "1s"},    {10, "10s"},  {60, "1m"},
                                                       {600, "10m"}, {3600, "1h"}, {36000, "10h"},
                                                       {86400, "1d"}};
  for (double days = 10; ticks.back().first < up_to && std::isfinite(days * 86400); days *= 10) {
    ticks.emplace_back(days * 86400, Fixed(days, 0) + "d");
  }
  return ticks;
}

}  // namespace

std::string UtilisationSvg(const std::vector<ReportRun>& runs) {
  Chart chart = TimeChart(runs, true, [](const ReportRun& run, const auto& entry) {
    return std::get<1>(entry) / run.gpus * 100;
  });
  chart.title = "GPU utilisation";
  chart.subtitle = "busy share of the cluster's GPUs, mean per interval";
  chart.y = ValueAxis(100, "GPUs busy (%)");
  LinearTicks(chart.y, 5, "%");
  return Render(chart, runs);
}

std::string QueueSvg(const std::vector<ReportRun>& runs) {
  Chart chart = TimeChart(runs, false, [](const ReportRun&, const auto& entry) {
    return static_cast<double>(std::get<2>(entry));
  });
  chart.title = "Pending jobs";
  chart.subtitle = "jobs waiting to start, mean per interval";
  double most = 0;
  for (const auto& series : chart.series) {
    for (const auto& [_, y] : series) most = std::max(most, y);
  }
  chart.y = ValueAxis(1, "pending jobs (mean per interval)");
  if (most > 0) {
    double step = NiceStep(most, 5);
    chart.y.hi = std::max(step, std::ceil(most / step - 1e-9) * step);
  }
  LinearTicks(chart.y, 5, "");
  return Render(chart, runs);
}

std::string JctCdfSvg(const std::vector<ReportRun>& runs) {
  Chart chart;
  chart.title = "Job completion time (empirical CDF)";
  chart.subtitle = "end - submit of finished jobs; log scale";
  std::vector<std::vector<double>> jcts;
  double low = INFINITY, high = 0;
  for (const auto& run : runs) {
    auto& v = jcts.emplace_back();
    if (run.result == nullptr) continue;
    for (const auto& job : run.result->jobs) {
      double jct = job.end - job.submit;
      if (job.end < 0 || !std::isfinite(jct)) continue;
      v.push_back(std::max(jct, 1.0));  // a log axis has no zero; see the header
    }
    std::sort(v.begin(), v.end());
    if (!v.empty()) {
      low = std::min(low, v.front());
      high = std::max(high, v.back());
    }
  }
  chart.y = ValueAxis(1, "finished jobs (%)");
  for (int p = 0; p <= 100; p += 20) chart.y.ticks.emplace_back(p / 100.0, std::to_string(p) + "%");
  chart.x.log = true;
  chart.x.label = "job completion time (log scale)";
  if (high >= low) {
    auto ticks = HumanTicks(high);
    // The axis spans from the last tick at or below the fastest job to the first at or above the
    // slowest, and at least one tick interval.
    size_t first = 0, last = ticks.size() - 1;
    while (first + 1 < ticks.size() && ticks[first + 1].first <= low) ++first;
    while (last > 0 && ticks[last - 1].first >= high) --last;
    if (last == first && last + 1 < ticks.size()) ++last;
    if (last == first && first > 0) --first;
    chart.x.lo = ticks[first].first;
    chart.x.hi = ticks[last].first;
    chart.x.ticks.assign(ticks.begin() + first, ticks.begin() + last + 1);
  }
  // At most kMaxCdfPoints quantiles, drawn as steps: the share jumps at each sampled time. The
  // last sample is always the slowest job, where the share reaches 100 %.
  for (const auto& v : jcts) {
    auto& series = chart.series.emplace_back();
    if (v.empty()) continue;
    uint64_t n = v.size(), samples = std::min<uint64_t>(n, kMaxCdfPoints);
    series.emplace_back(v.front(), 0.0);
    double share = 0;
    for (uint64_t k = 1; k <= samples; ++k) {
      uint64_t i = (k * n + samples - 1) / samples - 1;
      series.emplace_back(v[i], share);
      share = static_cast<double>(i + 1) / static_cast<double>(n);
      series.emplace_back(v[i], share);
    }
  }
  return Render(chart, runs);
}

}  // namespace baton::sim
