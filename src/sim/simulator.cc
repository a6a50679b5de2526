#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <queue>
#include <unordered_map>

#include "control/controller.h"
#include "core/node.h"
#include "core/quantity.h"

namespace baton::sim {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

// A fixed epoch: the same trace gives the same decisions and the same report.
const TimePoint kEpoch = FromMillis(1'700'000'000'000);

struct Agent {
  std::string name;
  uint64_t session = 0;
  uint64_t acked = 0;
  std::vector<JobEvent> outbox;  // to report in the next batch
};

// One node's part of one attempt of a job, while it runs.
struct Part {
  bool alive = true;
  int64_t milli = 0;  // GPU capacity it holds on the node
};

struct Exit {
  TimePoint at;
  uint64_t seq = 0;
  size_t agent = 0;
  JobId job;
  int attempt = 0;
  bool timed_out = false;
  bool operator>(const Exit& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

}  // namespace

Result<Policy> NamedPolicy(const std::string& name, const Policy& configured) {
  Policy p = configured;
  auto only = [&](double priority, double fairshare, double age) {
    p.weights = Weights{.priority = priority, .fairshare = fairshare, .age = age, .size = 0};
  };
  if (name == "default") return p;
  if (name == "fifo") {
    only(0, 0, 0);  // every score equal: submit order
    p.backfill = false;
    p.preemption = false;
  } else if (name == "priority") {
    only(10'000, 0, 0);
    p.backfill = false;
    p.preemption = false;
  } else if (name == "fairshare") {
    only(0, 10'000, 0);
    p.backfill = false;
    p.preemption = false;
  } else if (name == "backfill") {
    only(0, 0, 0);
    p.backfill = true;
    p.preemption = false;
  } else if (name == "las") {
    // Tiresias' discretised two-dimensional LAS: within a priority class, the job with the
    // least GPU-time so far goes first (submit order within a level); a job that crossed into
    // a later level yields its GPUs to waiting jobs of an earlier one. Work-conserving: a job
    // that fits starts even if one ahead waits.
    only(10'000, 0, 0);
    p.weights.las = 1'000;
    if (p.las_thresholds.empty()) p.las_thresholds = {3600, 36'000};  // 1 and 10 GPU-hours
    p.las_preemption = true;
    p.preemption = true;
    p.backfill = true;
  } else {
    return Err(
        InvalidArgument("--policy: \"" + name.substr(0, 32) +
                        "\" is not a policy (fifo, priority, fairshare, backfill, las, default)"));
  }
  return p;
}

Result<SimResult> Simulate(const std::vector<SimNode>& nodes, const std::vector<TraceJob>& trace,
                           const Policy& policy, const SimOptions& sim_options) {
  control::ControllerOptions options;
  options.node_timeout = kMaxDuration;  // simulated agents never go silent
  options.poll_timeout = kMaxDuration;
  options.policy = policy;
  control::Controller c(options);
  c.Restore(store::Snapshot{}, kEpoch);
  SimResult result;
  int64_t events = 0;
  auto apply = [&](const control::Command& cmd, TimePoint now) {
    ++events;
    return c.Apply(cmd, now);
  };

  std::vector<Agent> agents;
  std::unordered_map<std::string, size_t> agent_of;
  int64_t total_milli = 0;
  for (const SimNode& n : nodes) {
    auto spec = ParseGpuSpec(n.gpus);
    if (!spec) return Err(InvalidArgument("node " + n.name + ": " + spec.error().message()));
    NodeInfo info;
    info.name = n.name;
    info.gpus = SimulatedGpus(*spec, n.name);
    info.cpus = 256;
    info.memory_bytes = int64_t{2} << 40;
    info.gpu_backend = "simulated";
    info.topology = spec->topology;
    info.pool = n.pool;
    total_milli += static_cast<int64_t>(info.gpus.size()) * 1000;
    control::Reply r = apply(control::AgentRegister{RegisterRequest{.node = info}}, kEpoch);
    if (!r.status.ok()) return Err(InvalidArgument("node " + n.name + ": " + r.status.message()));
    agent_of[n.name] = agents.size();
    agents.push_back(Agent{.name = n.name, .session = r.registration.session});
  }

  std::vector<size_t> arrival(trace.size());
  for (size_t i = 0; i < arrival.size(); ++i) arrival[i] = i;
  std::stable_sort(arrival.begin(), arrival.end(),
                   [&](size_t a, size_t b) { return trace[a].submit < trace[b].submit; });
  std::unordered_map<int64_t, size_t> index_of;  // job id -> trace row
  std::vector<JobId> id_of(trace.size());
  std::vector<double> first_start(trace.size(), -1);
  // Work done by earlier attempts: a simulated job checkpoints when preempted and resumes there.
  std::vector<Duration> done(trace.size(), Duration(0));
  std::map<std::pair<int64_t, int>, TimePoint> attempt_start;  // (job, attempt) -> when it began
  // Times a running job crosses a least-attained-service threshold: the controller should look
  // then (a live one looks every 2 s; here nothing else would wake it).
  std::priority_queue<TimePoint, std::vector<TimePoint>, std::greater<>> wakes;

  std::priority_queue<Exit, std::vector<Exit>, std::greater<>> exits;
  std::map<std::tuple<int64_t, int, size_t>, Part> parts;
  uint64_t seq = 0, poll_id = 0;
  std::unordered_map<uint64_t, size_t> parked;  // poll id -> agent
  int64_t busy_milli = 0;
  double gpu_seconds = 0;
  double idle_waiting = 0;  // GPU-seconds free while the queue was not empty
  double waiting_s = 0;     // ... and for how long it was not
  TimePoint now = kEpoch;

  // "TIME VERB JOB aATTEMPT NODE[ DETAIL]", a line of the decision log.
  auto log = [&](const char* verb, JobId job, int attempt, size_t ai,
                 const std::string& detail = "") {
    if (!sim_options.decisions) return;
    char at[32];
    std::snprintf(at, sizeof at, "%.3f", Seconds(now - kEpoch));
    result.decisions.push_back(std::string(at) + " " + verb + " " + job.ToString() + " a" +
                               std::to_string(attempt) + " " + agents[ai].name +
                               (detail.empty() ? "" : " " + detail));
  };
  auto handle_orders = [&](size_t ai, const std::vector<Order>& orders) {
    Agent& a = agents[ai];
    for (const Order& o : orders) {
      a.acked = std::max(a.acked, o.seq);
      if (o.kind == Order::Kind::kLaunch) {
        const LaunchOrder& l = o.launch;
        auto key = std::make_tuple(l.job.value, l.attempt, ai);
        if (parts.count(key)) continue;  // a launch resent: already running
        auto it = index_of.find(l.job.value);
        if (it == index_of.end()) continue;
        const TraceJob& t = trace[it->second];
        Duration run = std::max(Duration(1), t.duration - done[it->second]);
        bool timed_out = false;
        if (l.time_limit.count() > 0 && l.time_limit < run) {
          run = l.time_limit;  // the agent ends it at its limit
          timed_out = true;
        }
        int64_t milli = static_cast<int64_t>(l.gpus.size()) * l.milli_per_gpu;
        parts[key] = Part{.alive = true, .milli = milli};
        if (sim_options.decisions) {
          std::string gpus;
          for (int g : l.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
          log("start", l.job, l.attempt, ai,
              "gpus=" + gpus +
                  (l.milli_per_gpu < 1000 ? " share=" + FormatMilli(l.milli_per_gpu) : ""));
        }
        busy_milli += milli;
        if (first_start[it->second] < 0) first_start[it->second] = Seconds(now - kEpoch);
        if (attempt_start.emplace(std::make_pair(l.job.value, l.attempt), now).second &&
            policy.las_preemption) {
          const Job* job = c.FindJob(l.job);
          double gpus = static_cast<double>(t.resources.milli_gpus) / 1000.0;
          for (double threshold : policy.las_thresholds) {
            double left = threshold - (job != nullptr ? job->gpu_seconds : 0);
            if (left <= 0 || gpus <= 0) continue;
            auto until =
                std::chrono::duration_cast<Duration>(std::chrono::duration<double>(left / gpus));
            if (until < run) wakes.push(now + until + options.full_pass_interval);
          }
        }
        a.outbox.push_back(JobEvent{
            .job = l.job, .attempt = l.attempt, .kind = JobEvent::Kind::kStarted, .at = now});
        exits.push(Exit{.at = now + run,
                        .seq = ++seq,
                        .agent = ai,
                        .job = l.job,
                        .attempt = l.attempt,
                        .timed_out = timed_out});
      } else if (o.kind == Order::Kind::kStop) {
        const StopOrder& s = o.stop;
        auto it = parts.find(std::make_tuple(s.job.value, s.attempt, ai));
        if (it == parts.end() || !it->second.alive) continue;
        // A simulated job checkpoints on SIGUSR1 and stops at once.
        it->second.alive = false;
        log("stop", s.job, s.attempt, ai, std::string(StopReasonName(s.reason)));
        if (auto a = attempt_start.find(std::make_pair(s.job.value, s.attempt));
            a != attempt_start.end()) {
          if (auto row = index_of.find(s.job.value); row != index_of.end())
            done[row->second] += now - a->second;
          attempt_start.erase(a);
        }
        busy_milli -= it->second.milli;
        if (s.reason == StopReason::kPreempt) ++result.summary.preemptions;
        a.outbox.push_back(JobEvent{.job = s.job,
                                    .attempt = s.attempt,
                                    .kind = JobEvent::Kind::kExited,
                                    .at = now,
                                    .signal = 10});
      }
    }
  };
  auto poll = [&](size_t ai) {
    // An agent polls until its poll is parked (nothing more to do now).
    for (;;) {
      Agent& a = agents[ai];
      control::Reply r = apply(
          control::AgentPoll{
              .node = a.name, .session = a.session, .after = a.acked, .poll_id = ++poll_id},
          now);
      if (r.parked) {
        parked[poll_id] = ai;
        return;
      }
      if (!r.status.ok() || r.orders.empty()) return;
      handle_orders(ai, r.orders);
    }
  };
  // Runs batches at `now` until nothing more happens: reports, a tick, the batch's end,
  // orders to the agents, their new polls.
  auto settle = [&] {
    for (int round = 0; round < 1000; ++round) {
      bool reported = false;
      for (Agent& a : agents) {
        if (a.outbox.empty()) continue;
        (void)apply(control::AgentReport{ReportRequest{
                        .node = a.name, .session = a.session, .events = a.outbox}},
                    now);
        a.outbox.clear();
        reported = true;
      }
      (void)apply(control::Tick{}, now);
      control::Effects fx = c.EndBatch(now);
      bool delivered = false;
      for (const control::Delivery& d : fx.deliveries) {
        auto it = parked.find(d.poll_id);
        if (it == parked.end()) continue;
        size_t ai = it->second;
        parked.erase(it);
        handle_orders(ai, d.orders);
        poll(ai);
        delivered |= !d.orders.empty();
      }
      if (!reported && !delivered) return;
    }
  };

  for (size_t ai = 0; ai < agents.size(); ++ai) poll(ai);
  settle();

  size_t next = 0;
  bool idle_tick_done = false;
  while (true) {
    std::optional<TimePoint> t;
    if (next < arrival.size()) t = kEpoch + trace[arrival[next]].submit;
    if (!exits.empty() && (!t || exits.top().at < *t)) t = exits.top().at;
    while (!wakes.empty() && wakes.top() <= now) wakes.pop();
    if (!wakes.empty() && (!t || wakes.top() < *t)) t = wakes.top();
    if (!t) {
      // Nothing will happen by itself: give the queue one full pass (a tick two seconds on),
      // in case jobs deep in it can run; then stop.
      if (c.queue_length() == 0 || idle_tick_done) break;
      idle_tick_done = true;
      t = now + options.full_pass_interval;
    } else {
      idle_tick_done = false;
    }
    gpu_seconds += static_cast<double>(busy_milli) / 1000.0 * Seconds(*t - now);
    if (c.queue_length() > 0) {
      idle_waiting += static_cast<double>(total_milli - busy_milli) / 1000.0 * Seconds(*t - now);
      waiting_s += Seconds(*t - now);
    }
    now = std::max(now, *t);
    while (next < arrival.size() && kEpoch + trace[arrival[next]].submit <= now) {
      size_t i = arrival[next++];
      const TraceJob& tj = trace[i];
      control::SubmitJobs submit;  // built step by step: GCC 12 misreads the aggregate (bug 107919)
      submit.caller.user = tj.user;
      submit.specs.push_back(tj.Spec());
      control::Reply r = apply(submit, now);
      if (!r.status.ok() || r.jobs.empty()) {
        return Err(
            InvalidArgument("trace line " + std::to_string(tj.line) + ": " + r.status.message()));
      }
      id_of[i] = r.jobs[0].id;
      index_of[r.jobs[0].id.value] = i;
    }
    while (!exits.empty() && exits.top().at <= now) {
      Exit e = exits.top();
      exits.pop();
      auto it = parts.find(std::make_tuple(e.job.value, e.attempt, e.agent));
      if (it == parts.end() || !it->second.alive) continue;  // stopped before its end
      it->second.alive = false;
      attempt_start.erase(std::make_pair(e.job.value, e.attempt));
      log("end", e.job, e.attempt, e.agent, e.timed_out ? "timed_out" : "");
      busy_milli -= it->second.milli;
      agents[e.agent].outbox.push_back(JobEvent{.job = e.job,
                                                .attempt = e.attempt,
                                                .kind = JobEvent::Kind::kExited,
                                                .at = now,
                                                .timed_out = e.timed_out});
    }
    settle();
    result.timeline.emplace_back(Seconds(now - kEpoch), static_cast<double>(busy_milli) / 1000.0,
                                 static_cast<int64_t>(c.queue_length()));
  }

  // What became of each job.
  Summary& s = result.summary;
  s.jobs = static_cast<int64_t>(trace.size());
  s.events = events;
  std::vector<double> jcts, waits;
  std::map<std::string, std::pair<double, int>> slowdown;  // user -> (sum, count)
  double first_submit = -1, last_end = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceJob& tj = trace[i];
    JobOutcome o;
    o.name = tj.name;
    o.user = tj.user;
    o.project = tj.project;
    o.milli_gpus = tj.resources.milli_gpus;
    o.submit = Seconds(tj.submit);
    o.start = first_start[i];
    if (first_submit < 0 || o.submit < first_submit) first_submit = o.submit;
    if (const Job* j = id_of[i].value != 0 ? c.FindJob(id_of[i]) : nullptr) {
      o.id = j->id.value;
      o.restarts = j->restarts;
      o.state = std::string(JobStateName(j->state));
      if (IsTerminal(j->state) && j->finished_at) o.end = Seconds(*j->finished_at - kEpoch);
    }
    if (o.end >= 0) {
      ++s.finished;
      double jct = o.end - o.submit;
      jcts.push_back(jct);
      last_end = std::max(last_end, o.end);
      auto& [sum, n] = slowdown[o.user];
      sum += jct / std::max(1.0, Seconds(tj.duration));
      n += 1;
    }
    if (o.start >= 0) waits.push_back(o.start - o.submit);
    result.jobs.push_back(std::move(o));
  }
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  auto quantile = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(
        v.size() - 1,
        static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0))];
  };
  s.avg_jct_s = mean(jcts);
  s.p50_jct_s = quantile(jcts, 0.5);
  s.p95_jct_s = quantile(jcts, 0.95);
  s.avg_wait_s = mean(waits);
  s.makespan_s = first_submit >= 0 && last_end > first_submit ? last_end - first_submit : 0;
  s.gpu_utilization = s.makespan_s > 0 && total_milli > 0
                          ? gpu_seconds / (static_cast<double>(total_milli) / 1000.0 * s.makespan_s)
                          : 0;
  s.idle_while_waiting =
      waiting_s > 0 && total_milli > 0
          ? idle_waiting / (static_cast<double>(total_milli) / 1000.0 * waiting_s)
          : 0;
  double sum = 0, squares = 0;
  s.max_user_slowdown = slowdown.empty() ? 1 : 0;
  for (const auto& [user, acc] : slowdown) {
    double x = acc.first / acc.second;
    sum += x;
    squares += x * x;
    s.max_user_slowdown = std::max(s.max_user_slowdown, x);
  }
  s.jain_fairness = squares > 0 ? sum * sum / (static_cast<double>(slowdown.size()) * squares) : 1;
  return result;
}

}  // namespace baton::sim
