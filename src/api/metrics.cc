#include "api/metrics.h"

#include <charconv>
#include <cmath>
#include <map>

namespace baton::api {
namespace {

// A label value with `\`, `"` and newlines escaped, as the format asks.
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// The shortest text that reads back as the same double.
std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

class Writer {
 public:
  void Family(const std::string& name, const std::string& type, const std::string& help) {
    out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void Sample(const std::string& name, const std::string& labels, double value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + Number(value) + "\n";
  }
  void Histogram(const std::string& name, const std::string& help, const control::Histogram& h) {
    Family(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      Sample(name + "_bucket", "le=\"" + Number(h.bounds[i]) + "\"",
             static_cast<double>(cumulative));
    }
    Sample(name + "_bucket", "le=\"+Inf\"", static_cast<double>(h.count));
    Sample(name + "_sum", "", h.sum);
    Sample(name + "_count", "", static_cast<double>(h.count));
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string Label(const std::string& key, const std::string& value) {
  return key + "=\"" + Escape(value) + "\"";
}

// Each GPU's state and its last readings.
void WriteGpus(Writer& w, const control::MetricsSnapshot& m) {
  w.Family("baton_gpus", "gauge", "GPUs (or MIG instances) by state.");
  std::map<std::string_view, int> by_state;  // in the names' order, 0 included
  for (std::string_view name : control::kGpuUseNames) by_state[name] = 0;
  for (const auto& g : m.gpus) by_state[control::GpuUseName(g.state)] += 1;
  for (const auto& [state, n] : by_state)
    w.Sample("baton_gpus", Label("state", std::string(state)), n);

  auto gpu_labels = [](const control::GpuMetrics& g) {
    return Label("node", g.node) + "," + Label("gpu", std::to_string(g.index)) + "," +
           Label("model", g.model);
  };
  struct Gauge {
    const char* name;
    const char* help;
    double (*value)(const control::GpuMetrics&);
  };
  const Gauge gauges[] = {
      {"baton_gpu_utilization_ratio", "GPU utilisation, 0 to 1, as its agent last sampled it.",
       [](const control::GpuMetrics& g) { return g.utilization_pct / 100.0; }},
      {"baton_gpu_memory_used_bytes", "GPU memory in use.",
       [](const control::GpuMetrics& g) { return static_cast<double>(g.memory_used_bytes); }},
      {"baton_gpu_temperature_celsius", "GPU temperature.",
       [](const control::GpuMetrics& g) { return static_cast<double>(g.temperature_c); }},
      {"baton_gpu_power_watts", "GPU power draw.",
       [](const control::GpuMetrics& g) { return static_cast<double>(g.power_w); }},
  };
  for (const Gauge& gauge : gauges) {
    w.Family(gauge.name, "gauge", gauge.help);
    for (const auto& g : m.gpus) {
      if (g.sampled) w.Sample(gauge.name, gpu_labels(g), gauge.value(g));
    }
  }
  w.Family("baton_gpu_memory_total_bytes", "gauge", "GPU memory.");
  for (const auto& g : m.gpus)
    w.Sample("baton_gpu_memory_total_bytes", gpu_labels(g),
             static_cast<double>(g.memory_total_bytes));
}

}  // namespace

std::string RenderMetrics(const control::MetricsSnapshot& m,
                          const control::ControllerLoop::Stats& loop) {
  Writer w;
  w.Family("baton_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, n] : m.jobs_by_state)
    w.Sample("baton_jobs", Label("state", state), static_cast<double>(n));
  w.Family("baton_jobs_submitted_total", "counter", "Jobs submitted since the controller started.");
  w.Sample("baton_jobs_submitted_total", "", static_cast<double>(m.jobs_submitted));
  w.Family("baton_jobs_finished_total", "counter",
           "Jobs that ended, by final state, since the controller started.");
  for (const char* s : {"succeeded", "failed", "cancelled", "timed_out"}) {
    auto it = m.jobs_finished.find(s);
    w.Sample("baton_jobs_finished_total", Label("state", s),
             it == m.jobs_finished.end() ? 0.0 : static_cast<double>(it->second));
  }
  w.Family("baton_preemptions_total", "counter",
           "Running jobs the scheduler preempted since the controller started.");
  w.Sample("baton_preemptions_total", "", static_cast<double>(m.preemptions));
  w.Family("baton_sessions_reclaimed_total", "counter",
           "Idle sessions of interactive pools stopped since the controller started.");
  w.Sample("baton_sessions_reclaimed_total", "", static_cast<double>(m.sessions_reclaimed));
  w.Family("baton_reclaimed_gpu_seconds_total", "counter",
           "GPU-seconds those sessions held and gave back: their GPUs times what was left of "
           "their time limits.");
  w.Sample("baton_reclaimed_gpu_seconds_total", "", m.reclaimed_gpu_seconds);
  w.Histogram("baton_job_wait_seconds", "Time from submit to a job's first start.", m.wait_seconds);
  w.Histogram("baton_scheduling_cycle_duration_seconds",
              "Time the controller took to end a batch: scheduling pass, orders and effects.",
              loop.cycle_seconds);
  w.Family("baton_controller_commands_total", "counter", "Commands the controller applied.");
  w.Sample("baton_controller_commands_total", "", static_cast<double>(loop.commands));
  w.Family("baton_store_commits_total", "counter", "Durable store commits (group commits).");
  w.Sample("baton_store_commits_total", "", static_cast<double>(loop.commits));
  w.Family("baton_events_total", "counter", "Cluster events raised (GET /v1/events).");
  w.Sample("baton_events_total", "", static_cast<double>(m.events));
  w.Family("baton_nodes", "gauge", "Nodes by state.");
  for (const auto& [state, n] : m.nodes_by_state)
    w.Sample("baton_nodes", Label("state", state), static_cast<double>(n));
  WriteGpus(w, m);

  w.Family("baton_project_gpu_seconds_total", "counter",
           "GPU-seconds used by each project's jobs, running ones to now.");
  for (const auto& [p, v] : m.project_gpu_seconds)
    w.Sample("baton_project_gpu_seconds_total", Label("project", p), v);
  w.Family("baton_project_cost_total", "counter",
           "Cost accrued by each project's jobs, in the catalog's currency.");
  for (const auto& [p, v] : m.project_cost)
    w.Sample("baton_project_cost_total", Label("project", p), v);
  return w.Take();
}

}  // namespace baton::api
