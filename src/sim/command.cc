#include "sim/command.h"

#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "codec/json_codec.h"
#include "core/quantity.h"
#include "core/text.h"
#include "sim/alibaba_nodes.h"
#include "sim/report.h"
#include "sim/sacct.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace baton::sim {
namespace {

namespace fs = std::filesystem;

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Err(NotFound(path + ": cannot be read"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> SplitPolicies(const std::string& list) {
  std::vector<std::string> out;
  for (std::string_view one : SplitTrimmed(list, ',')) {
    if (!one.empty()) out.emplace_back(one);
  }
  return out;
}

double ClusterGpus(const std::vector<SimNode>& nodes) {
  double gpus = 0;
  for (const SimNode& n : nodes) {
    if (auto spec = ParseGpuSpec(n.gpus)) gpus += spec->count;
  }
  return gpus;
}

// The process's peak resident memory so far, in MiB (getrusage: the replay and what it keeps).
double PeakRssMib() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// With autoscaling: the same trace on a fixed cluster of the autoscaled run's peak (its own
// nodes, and as many of each template's as were ever up at once, all up from the start): the
// waiting and the money autoscaling traded.
struct FixedRun {
  Summary summary;
  int64_t nodes = 0;  // the templates' nodes it has
};

Result<FixedRun> RunFixed(const SimCluster& c, const std::vector<TraceJob>& trace,
                          const Policy& policy, const NodeCosts& costs) {
  std::vector<SimNode> nodes = c.nodes;
  std::set<std::string> names;  // a file's own node may have a template node's name
  for (const SimNode& n : nodes) names.insert(n.name);
  for (const NodeCostRow& row : costs.templates) {
    for (const NodeTemplate& t : policy.autoscaling.templates) {
      if (t.name != row.template_name) continue;
      for (int i = 1, k = 1; i <= row.peak_nodes; ++i, ++k) {
        while (names.count(t.name + "-" + std::to_string(k)) != 0) ++k;
        const std::string name = t.name + "-" + std::to_string(k);
        names.insert(name);
        nodes.push_back(SimNode{.name = name, .gpus = t.gpu_spec, .pool = t.pool});
      }
    }
  }
  Policy fixed = policy;
  fixed.autoscaling = AutoscalingPolicy{};
  ASSIGN_OR_RETURN(SimResult r, Simulate(nodes, trace, fixed));
  return FixedRun{.summary = r.summary,
                  .nodes = static_cast<int64_t>(nodes.size() - c.nodes.size())};
}

std::string Fixed(double x, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << x;
  return o.str();
}

std::string Money(double x, const std::string& currency) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << x << " " << currency;
  return o.str();
}

// "  autoscaling: ..." and "  a fixed cluster of the peak ...": a run with autoscaling.
std::string ScalingText(const Summary& s, const FixedRun& fixed, const std::string& currency) {
  const NodeCosts& n = *s.nodes;
  std::ostringstream out;
  out << std::setprecision(6);
  out << "\n  autoscaling: " << s.resumed_nodes << " nodes resumed; " << std::fixed
      << std::setprecision(1) << n.node_seconds / 3600 << " node-hours cost "
      << Money(n.cost, currency) << " (" << Money(n.idle_cost, currency)
      << " with no job on them); wait avg " << s.avg_wait_s << " s"
      << "\n  a fixed cluster of the peak (" << fixed.nodes
      << " nodes up from the start, on demand)"
      << " would cost " << Money(n.fixed_cost, currency) << "; wait avg "
      << fixed.summary.avg_wait_s << " s; autoscaling saved " << Money(n.saved(), currency);
  if (n.fixed_cost > 0)
    out << " (" << std::setprecision(1) << 100 * n.saved() / n.fixed_cost << "%)";
  return out.str();
}

std::string SummaryJson(const std::string& policy, const Summary& s, double wall_s,
                        const FixedRun* fixed = nullptr) {
  std::ostringstream out;
  out << std::setprecision(6);
  out << "{\"policy\": " << codec::EncodeString(policy) << ", \"jobs\": " << s.jobs
      << ", \"finished\": " << s.finished << ", \"makespan_s\": " << s.makespan_s
      << ", \"avg_jct_s\": " << s.avg_jct_s << ", \"p50_jct_s\": " << s.p50_jct_s
      << ", \"p95_jct_s\": " << s.p95_jct_s << ", \"avg_wait_s\": " << s.avg_wait_s
      << ", \"gpu_utilization\": " << s.gpu_utilization
      << ", \"idle_while_waiting\": " << s.idle_while_waiting
      << ", \"preemptions\": " << s.preemptions << ", \"preemptions_per_job\": "
      << (s.jobs > 0 ? static_cast<double>(s.preemptions) / static_cast<double>(s.jobs) : 0)
      << ", \"preempted_jobs\": " << s.preempted_jobs
      << ", \"max_job_preemptions\": " << s.max_job_preemptions
      << ", \"jain_fairness\": " << s.jain_fairness
      << ", \"max_user_slowdown\": " << s.max_user_slowdown << ", \"events\": " << s.events
      << ", \"wall_s\": " << wall_s
      << ", \"events_per_s\": " << (wall_s > 0 ? static_cast<double>(s.events) / wall_s : 0)
      << ", \"peak_rss_mib\": " << PeakRssMib() << ", \"unrunnable\": " << s.unrunnable
      << ", \"unrunnable_jobs\": [";
  const std::string mig = s.mig_gpus == 0
                              ? ""
                              : ", \"mig\": {\"gpus\": " + std::to_string(s.mig_gpus) +
                                    ", \"changes\": " + std::to_string(s.mig_changes) +
                                    ", \"fragmentation\": " + Fixed(s.mig_fragmentation, 4) + "}";
  for (size_t i = 0; i < s.unrunnable_jobs.size(); ++i) {
    const Unrunnable& u = s.unrunnable_jobs[i];
    out << (i ? ", " : "") << "{\"name\": " << codec::EncodeString(u.name)
        << ", \"line\": " << u.line << ", \"reason\": " << codec::EncodeString(u.reason) << "}";
  }
  out << "]" << mig;
  if (s.nodes && fixed != nullptr) {
    const NodeCosts& n = *s.nodes;
    out << ", \"autoscaling\": {\"resumed_nodes\": " << s.resumed_nodes
        << ", \"node_hours\": " << n.node_seconds / 3600 << ", \"cost\": " << n.cost
        << ", \"idle_cost\": " << n.idle_cost << ", \"fixed_nodes\": " << fixed->nodes
        << ", \"fixed_cost\": " << n.fixed_cost << ", \"saved\": " << n.saved()
        << ", \"fixed_finished\": " << fixed->summary.finished
        << ", \"fixed_avg_wait_s\": " << fixed->summary.avg_wait_s
        << ", \"fixed_avg_jct_s\": " << fixed->summary.avg_jct_s << "}";
  }
  out << "}";
  return out.str();
}

std::string SummaryText(const std::string& policy, const Summary& s, size_t nodes, double wall_s) {
  std::ostringstream out;
  out << std::setprecision(6);
  out << "policy " << policy << ": " << s.jobs << " jobs (" << s.finished << " finished) on "
      << nodes << " nodes\n"
      << "  makespan " << s.makespan_s << " s, JCT avg " << s.avg_jct_s << " s, p50 " << s.p50_jct_s
      << " s, p95 " << s.p95_jct_s << " s\n"
      << "  wait avg " << s.avg_wait_s << " s, GPU utilisation " << s.gpu_utilization
      << ", idle while jobs waited " << s.idle_while_waiting << ", preemptions " << s.preemptions
      << " of " << s.preempted_jobs << " jobs (the most of one job " << s.max_job_preemptions << ")"
      << ", Jain fairness (users) " << s.jain_fairness << ", worst user's mean slowdown "
      << s.max_user_slowdown << "\n"
      << "  " << s.events << " controller commands in " << wall_s << " s, peak memory "
      << PeakRssMib() << " MiB";
  if (s.mig_gpus > 0) {
    out << "\n  MIG: " << s.mig_gpus << " GPUs re-planned, " << s.mig_changes
        << " changes, free slices' fragmentation " << Fixed(s.mig_fragmentation, 4)
        << " (time-weighted mean)";
  }
  if (s.unrunnable > 0) {
    out << "\n  " << s.unrunnable << " jobs can never run on this cluster (refused at submit)";
    for (const Unrunnable& u : s.unrunnable_jobs) {
      out << "\n    line " << u.line << (u.name.empty() ? "" : " (" + u.name + ")") << ": "
          << u.reason;
    }
    if (s.unrunnable > static_cast<int64_t>(s.unrunnable_jobs.size()))
      out << "\n    ... and " << s.unrunnable - static_cast<int64_t>(s.unrunnable_jobs.size())
          << " more";
  }
  return out.str();
}

struct Run {
  std::string policy;
  SimResult result;
  double wall_s = 0;
  std::optional<FixedRun> fixed;  // with autoscaling
};

Status WriteFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  f.close();
  if (!f.good()) return Internal(path + ": cannot be written");
  return Status::Ok();
}

// DIR/jobs.csv (a row per job and policy), DIR/summary.json (a line per policy) and the
// pictures: utilisation.svg, queue.svg, jct_cdf.svg.
Status WriteReport(const std::string& dir, const std::vector<Run>& runs, double gpus) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal(dir + ": cannot be created: " + ec.message());
  auto num = [](double x) {
    if (x < 0) return std::string();
    std::ostringstream o;
    o << std::fixed << std::setprecision(3) << x;
    return o.str();
  };
  auto quote = [](const std::string& x) {
    if (x.find_first_of(",\"\n") == std::string::npos) return x;
    std::string q = "\"";
    for (char ch : x) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::ostringstream csv, summary;
  csv << "id,name,user,project,gpus,submit_time,start_time,end_time,restarts,state,policy\n";
  std::vector<ReportRun> pictures;
  for (const Run& run : runs) {
    for (const auto& j : run.result.jobs) {
      csv << j.id << ',' << quote(j.name) << ',' << quote(j.user) << ',' << quote(j.project) << ','
          << FormatMilli(j.milli_gpus) << ',' << num(j.submit) << ',' << num(j.start) << ','
          << num(j.end) << ',' << j.restarts << ',' << j.state << ',' << quote(run.policy) << '\n';
    }
    summary << SummaryJson(run.policy, run.result.summary, run.wall_s,
                           run.fixed ? &*run.fixed : nullptr)
            << '\n';
    pictures.push_back(ReportRun{.policy = run.policy, .result = &run.result, .gpus = gpus});
  }
  for (const auto& [name, content] :
       {std::pair{"jobs.csv", csv.str()}, std::pair{"summary.json", summary.str()},
        std::pair{"utilisation.svg", UtilisationSvg(pictures)},
        std::pair{"queue.svg", QueueSvg(pictures)},
        std::pair{"jct_cdf.svg", JctCdfSvg(pictures)}}) {
    if (Status st = WriteFile(dir + "/" + name, content); !st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace

Result<SimCluster> LoadCluster(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  SimCluster c;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos &&
      std::string_view(text).substr(first).starts_with("sn,cpu_milli,memory_mib,gpu")) {
    ASSIGN_OR_RETURN(c.nodes, ParseAlibabaNodes(text, path));
    return c;
  }
  ASSIGN_OR_RETURN(codec::ClusterFile file, codec::DecodeClusterFile(text, path));
  for (const auto& g : file.groups) {
    for (int i = 0; i < g.count; ++i) {
      c.nodes.push_back(
          SimNode{.name = g.count == 1 ? g.name : g.name + "-" + std::to_string(i + 1),
                  .gpus = g.gpus,
                  .pool = g.pool,
                  .mps = g.mps,
                  .mig_reconfigure = g.mig_reconfigure,
                  .mig_delay = g.mig_delay});
    }
  }
  c.policy = std::move(file.policy);
  c.boot_delay = file.boot_delay;
  return c;
}

int RunSim(const SimFlags& f, std::ostream& out, std::ostream& err) {
  auto fail = [&](const Status& st, int code) {
    err << "baton: " << st.message() << std::endl;
    return code;
  };
  auto trace_text = ReadWholeFile(f.trace);
  if (!trace_text) return fail(trace_text.error(), 2);
  auto trace = ParseTrace(*trace_text, f.trace);
  if (!trace) return fail(trace.error(), 2);
  if (!f.convert.empty()) {
    // A site's own history (sacct, or any known trace) as the plain CSV, to edit and replay.
    if (Status st = WriteFile(f.convert, TraceCsv(*trace)); !st.ok()) return fail(st, 1);
    out << trace->size() << " jobs written to " << f.convert << std::endl;
    return 0;
  }
  if (f.cluster.empty())
    return fail(InvalidArgument("--cluster is required (unless --convert)"), 2);
  auto cluster = LoadCluster(f.cluster);
  if (!cluster) return fail(cluster.error(), 2);
  std::vector<std::string> names = SplitPolicies(f.policy);
  if (names.empty()) return fail(InvalidArgument("--policy: name one or more policies"), 2);
  std::vector<Policy> policies;
  for (const std::string& name : names) {
    auto policy = NamedPolicy(name, cluster->policy);
    if (!policy) return fail(policy.error(), 2);
    policies.push_back(std::move(*policy));
  }
  std::vector<Run> runs;
  for (size_t i = 0; i < names.size(); ++i) {
    auto wall = std::chrono::steady_clock::now();
    auto result = Simulate(cluster->nodes, *trace, policies[i],
                           SimOptions{.boot_delay = cluster->boot_delay});
    if (!result) return fail(result.error(), 2);
    double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    std::optional<FixedRun> fixed;
    if (result->summary.nodes) {
      auto ran = RunFixed(*cluster, *trace, policies[i], *result->summary.nodes);
      if (!ran) return fail(ran.error(), 2);
      fixed = std::move(*ran);
    }
    if (f.json) {
      out << SummaryJson(names[i], result->summary, wall_s, fixed ? &*fixed : nullptr);
    } else {
      out << SummaryText(names[i], result->summary, cluster->nodes.size(), wall_s);
      if (fixed) out << ScalingText(result->summary, *fixed, policies[i].currency);
    }
    out << std::endl;
    runs.push_back(Run{.policy = names[i],
                       .result = std::move(*result),
                       .wall_s = wall_s,
                       .fixed = std::move(fixed)});
  }
  if (!f.report.empty()) {
    if (Status st = WriteReport(f.report, runs, ClusterGpus(cluster->nodes)); !st.ok())
      return fail(st, 1);
  }
  return 0;
}

}  // namespace baton::sim
