#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>

#include "control/autoscaler.h"
#include "core/node.h"
#include "core/quantity.h"
#include "sim/replay.h"

namespace baton::sim {
namespace replay {
namespace {

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

// The q-quantile by nearest rank.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(
      v.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0))];
}

control::ControllerOptions SimControllerOptions(const Policy& policy) {
  control::ControllerOptions options;
  options.node_timeout = kMaxDuration;  // simulated agents never go silent
  options.poll_timeout = kMaxDuration;
  // No report says why a job waits: full passes write no reasons (the same decisions, and
  // a walk that stops at the last job that could start or hold GPUs instead of the 256th).
  options.explained_waits = 0;
  options.node_charge_detail = kMaxDuration;  // a summary's money is exact for any window
  options.store_jobs = false;                 // no store: the batches' copies of jobs unmade
  options.policy = policy;
  return options;
}

}  // namespace

Replay::Replay(const std::vector<TraceJob>& trace, const Policy& policy, const SimOptions& options)
    : trace_(trace),
      policy_(policy),
      sim_options_(options),
      options_(SimControllerOptions(policy)),
      c_(options_),
      id_of_(trace.size()),
      first_start_(trace.size(), -1),
      done_(trace.size(), Duration(0)) {
  c_.Restore(store::Snapshot{}, kEpoch);
  arrival_.resize(trace.size());
  for (size_t i = 0; i < arrival_.size(); ++i) arrival_[i] = i;
  std::stable_sort(arrival_.begin(), arrival_.end(),
                   [&](size_t a, size_t b) { return trace[a].submit < trace[b].submit; });
}

void Replay::LogNode(const char* verb, const std::string& node) {
  if (!sim_options_.decisions) return;
  char at[32];
  std::snprintf(at, sizeof at, "%.3f", Seconds(now_ - kEpoch));
  result_.decisions.push_back(std::string(at) + " " + verb + " " + node);
}

void Replay::Log(const char* verb, JobId job, int attempt, size_t agent,
                 const std::string& detail) {
  if (!sim_options_.decisions) return;
  char at[32];
  std::snprintf(at, sizeof at, "%.3f", Seconds(now_ - kEpoch));
  result_.decisions.push_back(std::string(at) + " " + verb + " " + job.ToString() + " a" +
                              std::to_string(attempt) + " " + agents_[agent].name +
                              (detail.empty() ? "" : " " + detail));
}

Status Replay::RegisterNodes(const std::vector<SimNode>& nodes) {
  std::vector<control::Command> registers;
  std::vector<NodeInfo> infos;  // of nodes whose MIG is re-planned: they register again
  for (const SimNode& n : nodes) {
    auto spec = ParseGpuSpec(n.gpus);
    if (!spec) return InvalidArgument("node " + n.name + ": " + spec.error().message());
    NodeInfo info;
    info.name = n.name;
    info.gpus = SimulatedGpus(*spec, n.name);
    info.cpus = 256;
    info.memory_bytes = int64_t{2} << 40;
    info.gpu_backend = GpuBackendKind::kSimulated;
    info.topology = spec->topology;
    info.pool = n.pool;
    info.mps = n.mps;
    if (n.mig_reconfigure) {
      if (spec->mig.empty())
        return InvalidArgument("node " + n.name +
                               ": mig_reconfigure: its GPUs are not in MIG mode");
      for (int i = 0; i < spec->count; ++i) {
        info.mig_gpus.push_back(
            MigParent{.physical = i, .model = spec->model, .memory_bytes = spec->memory_bytes});
      }
      info.gpus = MigPlaces(info.gpus, info.mig_gpus);
      mig_gpus_ += spec->count;
    }
    total_milli_ += Devices(info) * 1000;
    infos.push_back(n.mig_reconfigure ? info : NodeInfo{});
    registers.push_back(control::AgentRegister{RegisterRequest{.node = info}});
  }
  control::BatchResult b = control::RunBatch(c_, registers, now_);
  events_ += static_cast<int64_t>(registers.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const control::Reply& r = b.replies[i];
    if (!r.status.ok()) return InvalidArgument("node " + nodes[i].name + ": " + r.status.message());
    agents_.push_back(Agent{.name = nodes[i].name,
                            .session = std::get<RegisterReply>(r.value).session,
                            .mig_delay = nodes[i].mig_delay});
    agents_.back().info = std::move(infos[i]);
    agent_of_[nodes[i].name] = agents_.size() - 1;
  }
  AnswerCalls(b.effects.provider_calls);  // the autoscaler's first `list`
  mig_fragmentation_ = MigFragmentationNow();
  return Status::Ok();
}

void Replay::Queue(control::Command command, Pending pending) {
  batch_.push_back(std::move(command));
  pending_.push_back(pending);
}

void Replay::Poll(size_t agent) {
  const Agent& a = agents_[agent];
  ++poll_id_;
  Queue(
      control::AgentPoll{
          .node = a.name, .session = a.session, .after = a.acked, .poll_id = poll_id_},
      Pending{.kind = Sent::kPoll, .index = agent, .poll_id = poll_id_, .session = a.session});
}

void Replay::WakeAtThresholds(const LaunchOrder& l, const TraceJob& t, Duration run) {
  const Job* job = c_.FindJob(l.job);
  double gpus = static_cast<double>(t.resources.milli_gpus) / 1000.0;
  for (double threshold : policy_.las_thresholds) {
    double left = threshold - (job != nullptr ? job->gpu_seconds : 0);
    if (left <= 0 || gpus <= 0) continue;
    auto until = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(left / gpus));
    if (until < run) wakes_.push(now_ + until + options_.full_pass_interval);
  }
}

void Replay::Launch(size_t agent, const LaunchOrder& l) {
  auto key = std::make_tuple(l.job.value, l.attempt, agent);
  if (parts_.count(key)) return;  // a launch resent: already running
  auto it = index_of_.find(l.job.value);
  if (it == index_of_.end()) return;
  const TraceJob& t = trace_[it->second];
  Duration run = std::max(Duration(1), t.duration - done_[it->second]);
  bool timed_out = false;
  if (l.time_limit.count() > 0 && l.time_limit < run) {
    run = l.time_limit;  // the agent ends it at its limit
    timed_out = true;
  }
  int64_t milli = static_cast<int64_t>(l.gpus.size()) * l.milli_per_gpu;
  parts_[key] = Part{.alive = true, .milli = milli};
  if (sim_options_.decisions) {
    std::string gpus;
    for (int g : l.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    Log("start", l.job, l.attempt, agent,
        "gpus=" + gpus + (l.milli_per_gpu < 1000 ? " share=" + FormatMilli(l.milli_per_gpu) : ""));
  }
  busy_milli_ += milli;
  if (first_start_[it->second] < 0) first_start_[it->second] = Seconds(now_ - kEpoch);
  if (attempt_start_.emplace(std::make_pair(l.job.value, l.attempt), now_).second &&
      policy_.las_preemption) {
    WakeAtThresholds(l, t, run);
  }
  agents_[agent].outbox.push_back(
      JobEvent{.job = l.job, .attempt = l.attempt, .kind = JobEvent::Kind::kStarted, .at = now_});
  exits_.push(Exit{.at = now_ + run,
                   .seq = ++seq_,
                   .agent = agent,
                   .job = l.job,
                   .attempt = l.attempt,
                   .timed_out = timed_out});
}

void Replay::Stop(size_t agent, const StopOrder& s) {
  auto it = parts_.find(std::make_tuple(s.job.value, s.attempt, agent));
  if (it == parts_.end() || !it->second.alive) return;
  // A simulated job checkpoints at its notice (SIGTERM) and stops at once.
  it->second.alive = false;
  Log("stop", s.job, s.attempt, agent, std::string(StopReasonName(s.reason)));
  if (auto a = attempt_start_.find(std::make_pair(s.job.value, s.attempt));
      a != attempt_start_.end()) {
    if (auto row = index_of_.find(s.job.value); row != index_of_.end())
      done_[row->second] += now_ - a->second;
    attempt_start_.erase(a);
  }
  busy_milli_ -= it->second.milli;
  if (s.reason == StopReason::kPreempt) ++result_.summary.preemptions;
  agents_[agent].outbox.push_back(JobEvent{.job = s.job,
                                           .attempt = s.attempt,
                                           .kind = JobEvent::Kind::kExited,
                                           .at = now_,
                                           .signal = SIGTERM});
}

void Replay::HandleOrders(size_t agent, const std::vector<Order>& orders) {
  Agent& a = agents_[agent];
  for (const Order& o : orders) {
    a.acked = std::max(a.acked, o.seq);
    if (o.kind == Order::Kind::kLaunch) {
      Launch(agent, o.launch);
    } else if (o.kind == Order::Kind::kStop) {
      Stop(agent, o.stop);
    } else if (o.kind == Order::Kind::kMig) {
      mig_due_.push_back(MigDue{.at = now_ + a.mig_delay, .agent = agent, .order = o.mig});
    }
  }
}

Status Replay::TakeReply(const Pending& p, const control::Reply& r, std::vector<size_t>& repoll) {
  switch (p.kind) {
    case Sent::kSubmit: {
      const TraceJob& tj = trace_[p.index];
      if (r.status.code() == Code::kInvalidArgument) {
        // The trace's rows are valid specs (the reader checked them): what the controller
        // refuses can never run on this cluster.
        refused_[p.index] = r.status.message();
        return Status::Ok();
      }
      if (!r.status.ok()) {
        return InvalidArgument("trace line " + std::to_string(tj.line) + ": " + r.status.message());
      }
      const JobId id = std::get<control::Submitted>(r.value).jobs.at(0).id;
      id_of_[p.index] = id;
      index_of_[id.value] = p.index;
      return Status::Ok();
    }
    case Sent::kPoll: {
      // An agent polls until its poll is parked (nothing more to do now).
      if (!r.status.ok()) return Status::Ok();
      const auto& poll = std::get<control::PollAnswer>(r.value);
      if (poll.parked) {
        parked_[p.poll_id] = {p.index, p.session};
      } else if (!poll.orders.empty()) {
        HandleOrders(p.index, poll.orders);
        repoll.push_back(p.index);
      }
      return Status::Ok();
    }
    case Sent::kRegister: {
      Agent& a = agents_[p.index];
      if (!r.status.ok()) {
        return Internal("autoscaled node " + a.name + " could not register: " + r.status.message());
      }
      a.session = std::get<RegisterReply>(r.value).session;
      a.acked = 0;
      repoll.push_back(p.index);
      return Status::Ok();
    }
    case Sent::kReport:
    case Sent::kProvider:
      return Status::Ok();
  }
  return Status::Ok();
}

Status Replay::RunOneBatch(bool* progressed) {
  bool reported = false;
  for (size_t ai = 0; ai < agents_.size(); ++ai) {
    Agent& a = agents_[ai];
    if (a.outbox.empty()) continue;
    Queue(control::AgentReport{ReportRequest{
              .node = a.name, .session = a.session, .events = a.outbox}},
          Pending{.kind = Sent::kReport, .index = ai});
    a.outbox.clear();
    reported = true;
  }
  const TimePoint scanned = c_.autoscaler().last_scan();
  const bool commands = !batch_.empty();
  control::BatchResult b = control::RunBatch(c_, batch_, now_, {.tick = true});
  // A scan at the batch's end (after its pass) saw what the batch did; else a scan is owed
  // for anything it did (a submit, a report, a node up, a provider's answer, a job placed).
  if (c_.autoscaler().last_scan() != scanned) {
    unseen_ = false;
  } else if (commands || !b.effects.deliveries.empty()) {
    unseen_ = true;
  }
  events_ += static_cast<int64_t>(batch_.size()) + 1;
  std::vector<size_t> repoll;
  for (size_t i = 0; i < pending_.size(); ++i) {
    RETURN_IF_ERROR(TakeReply(pending_[i], b.replies[i], repoll));
  }
  batch_.clear();
  pending_.clear();
  bool delivered = false;
  for (const control::Delivery& d : b.effects.deliveries) {
    auto it = parked_.find(d.poll_id);
    if (it == parked_.end()) continue;
    const auto [ai, session] = it->second;
    parked_.erase(it);
    // A poll of a session the agent has left (it registered again: a MIG change) is answered
    // empty by the registration; the agent polls in its new session already.
    if (session != agents_[ai].session) continue;
    HandleOrders(ai, d.orders);
    repoll.push_back(ai);
    delivered |= !d.orders.empty();
  }
  AnswerCalls(b.effects.provider_calls);  // suspends first: a node gone polls no more
  for (size_t ai : repoll) {
    if (agents_[ai].up) Poll(ai);
  }
  *progressed = reported || delivered || !batch_.empty();
  return Status::Ok();
}

Status Replay::Settle() {
  for (int round = 0; round < 1000; ++round) {
    bool progressed = false;
    RETURN_IF_ERROR(RunOneBatch(&progressed));
    if (!progressed) return Status::Ok();
  }
  return Status::Ok();
}

void Replay::SubmitArrivals() {
  while (next_arrival_ < arrival_.size() &&
         kEpoch + trace_[arrival_[next_arrival_]].submit <= now_) {
    size_t i = arrival_[next_arrival_++];
    nudged_scan_ = now_ + control::Autoscaler::kNudgeGap;
    control::SubmitJobs submit;  // built step by step: GCC 12 misreads the aggregate (bug 107919)
    submit.caller.user = trace_[i].user;
    submit.specs.push_back(trace_[i].Spec());
    Queue(std::move(submit), Pending{.kind = Sent::kSubmit, .index = i});
  }
}

void Replay::EndExits() {
  while (!exits_.empty() && exits_.top().at <= now_) {
    Exit e = exits_.top();
    exits_.pop();
    auto it = parts_.find(std::make_tuple(e.job.value, e.attempt, e.agent));
    if (it == parts_.end() || !it->second.alive) continue;  // stopped before its end
    it->second.alive = false;
    attempt_start_.erase(std::make_pair(e.job.value, e.attempt));
    Log("end", e.job, e.attempt, e.agent, e.timed_out ? "timed_out" : "");
    busy_milli_ -= it->second.milli;
    agents_[e.agent].outbox.push_back(JobEvent{.job = e.job,
                                               .attempt = e.attempt,
                                               .kind = JobEvent::Kind::kExited,
                                               .at = now_,
                                               .timed_out = e.timed_out});
  }
}

std::optional<TimePoint> Replay::NextEvent() {
  std::optional<TimePoint> t;
  if (next_arrival_ < arrival_.size()) t = kEpoch + trace_[arrival_[next_arrival_]].submit;
  if (!exits_.empty() && (!t || exits_.top().at < *t)) t = exits_.top().at;
  while (!wakes_.empty() && wakes_.top() <= now_) wakes_.pop();
  if (!wakes_.empty() && (!t || wakes_.top() < *t)) t = wakes_.top();
  if (Scaling()) {
    for (const Boot& b : boots_) {
      if (!t || b.at < *t) t = b.at;
    }
    // The autoscaler's scans: the next one due after anything that changed what a scan sees,
    // and the first one due at or after its next decision (an idle time running out, a
    // resume's timeout, a rate's minute). Those between would plan what the last one did.
    const control::Autoscaler& as = c_.autoscaler();
    std::optional<TimePoint> scan;
    if (unseen_) scan = as.next_scan();
    if (std::optional<TimePoint> d = as.NextDecision()) {
      const TimePoint at = std::max(*d, as.next_scan());
      if (!scan || at < *scan) scan = at;
    }
    if (scan && (!t || *scan < *t)) t = std::max(*scan, now_);
    if (nudged_scan_ > now_ && (!t || nudged_scan_ < *t)) t = nudged_scan_;
  }
  for (const MigDue& d : mig_due_) {
    if (!t || d.at < *t) t = d.at;
  }
  // The next MIG window, while jobs wait: the controller may cut what they wait for. When
  // nothing else will happen, only until two windows in a row changed nothing.
  if (mig_gpus_ > 0 && c_.queue_length() > 0 && (t || quiet_windows_ < 2)) {
    const TimePoint window = std::max(mig_window_, now_);
    if (!t || window < *t) t = window;
  }
  return t;
}

Result<SimResult> Replay::Run(const std::vector<SimNode>& nodes) {
  RETURN_IF_ERROR(RegisterNodes(nodes));
  for (size_t ai = 0; ai < agents_.size(); ++ai) Poll(ai);
  RETURN_IF_ERROR(Settle());
  bool idle_tick_done = false;
  while (true) {
    std::optional<TimePoint> t = NextEvent();
    if (!t) {
      // Nothing will happen by itself: give the queue one full pass (a tick two seconds on),
      // in case jobs deep in it can run; then stop.
      if (c_.queue_length() == 0 || idle_tick_done) break;
      idle_tick_done = true;
      t = now_ + options_.full_pass_interval;
    } else {
      idle_tick_done = false;
    }
    gpu_seconds_ += static_cast<double>(busy_milli_) / 1000.0 * Seconds(*t - now_);
    capacity_seconds_ += static_cast<double>(total_milli_) / 1000.0 * Seconds(*t - now_);
    if (c_.queue_length() > 0) {
      idle_waiting_ +=
          static_cast<double>(total_milli_ - busy_milli_) / 1000.0 * Seconds(*t - now_);
      waiting_s_ += Seconds(*t - now_);
      waiting_capacity_s_ += static_cast<double>(total_milli_) / 1000.0 * Seconds(*t - now_);
    }
    mig_fragmentation_s_ += mig_fragmentation_ * Seconds(*t - now_);
    now_ = std::max(now_, *t);
    if (mig_gpus_ > 0 && now_ >= mig_window_) {
      quiet_windows_ = mig_changes_ == mig_changes_at_window_ ? quiet_windows_ + 1 : 0;
      mig_changes_at_window_ = mig_changes_;
      mig_window_ = now_ + policy_.mig_window;
    }
    SubmitArrivals();
    EndExits();
    BootNodes();
    MakeMigChanges();
    RETURN_IF_ERROR(Settle());
    result_.timeline.emplace_back(Seconds(now_ - kEpoch), static_cast<double>(busy_milli_) / 1000.0,
                                  static_cast<int64_t>(c_.queue_length()));
  }
  Summarize(result_);
  if (Scaling()) {
    // What the autoscaled nodes cost from the trace's first submit, as GET /v1/usage says.
    std::vector<control::Command> usage = {control::GetUsage{
        .since = arrival_.empty() ? kEpoch : kEpoch + trace_[arrival_[0]].submit}};
    control::BatchResult b = control::RunBatch(c_, usage, now_);
    if (b.replies[0].status.ok())
      result_.summary.nodes = std::get<control::UsageReport>(b.replies[0].value).nodes;
    result_.summary.resumed_nodes = resumed_;
  }
  return std::move(result_);
}

void Replay::Summarize(SimResult& result) const {
  // What became of each job.
  Summary& s = result.summary;
  s.jobs = static_cast<int64_t>(trace_.size());
  s.events = events_;
  std::vector<double> jcts, waits;
  std::map<std::string, std::pair<double, int>> slowdown;  // user -> (sum, count)
  double first_submit = -1, last_end = 0;
  for (size_t i = 0; i < trace_.size(); ++i) {
    const TraceJob& tj = trace_[i];
    JobOutcome o;
    o.name = tj.name;
    o.user = tj.user;
    o.project = tj.project;
    o.milli_gpus = tj.resources.milli_gpus;
    o.submit = Seconds(tj.submit);
    o.start = first_start_[i];
    if (first_submit < 0 || o.submit < first_submit) first_submit = o.submit;
    if (auto refused = refused_.find(i); refused != refused_.end()) {
      o.state = "refused";
      if (s.unrunnable_jobs.size() < 10)
        s.unrunnable_jobs.push_back(Unrunnable{tj.name, tj.line, refused->second});
      ++s.unrunnable;
    } else if (const Job* j = id_of_[i].value != 0 ? c_.FindJob(id_of_[i]) : nullptr) {
      o.id = j->id.value;
      o.restarts = j->restarts;
      s.preempted_jobs += j->preemptions > 0 ? 1 : 0;
      s.max_job_preemptions = std::max(s.max_job_preemptions, j->preemptions);
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
  s.avg_jct_s = Mean(jcts);
  s.p50_jct_s = Quantile(jcts, 0.5);
  s.p95_jct_s = Quantile(jcts, 0.95);
  s.avg_wait_s = Mean(waits);
  s.makespan_s = first_submit >= 0 && last_end > first_submit ? last_end - first_submit : 0;
  s.gpu_utilization =
      s.makespan_s > 0 && total_milli_ > 0
          ? gpu_seconds_ / (static_cast<double>(total_milli_) / 1000.0 * s.makespan_s)
          : 0;
  s.idle_while_waiting =
      waiting_s_ > 0 && total_milli_ > 0
          ? idle_waiting_ / (static_cast<double>(total_milli_) / 1000.0 * waiting_s_)
          : 0;
  if (Scaling()) {  // the GPUs up come and go: over what the nodes up offered
    s.gpu_utilization = capacity_seconds_ > 0 ? gpu_seconds_ / capacity_seconds_ : 0;
    s.idle_while_waiting = waiting_capacity_s_ > 0 ? idle_waiting_ / waiting_capacity_s_ : 0;
  }
  double sum = 0, squares = 0;
  s.max_user_slowdown = slowdown.empty() ? 1 : 0;
  for (const auto& [user, acc] : slowdown) {
    double x = acc.first / acc.second;
    sum += x;
    squares += x * x;
    s.max_user_slowdown = std::max(s.max_user_slowdown, x);
  }
  s.jain_fairness = squares > 0 ? sum * sum / (static_cast<double>(slowdown.size()) * squares) : 1;
  s.mig_gpus = mig_gpus_;
  s.mig_changes = mig_changes_;
  const double span = Seconds(now_ - kEpoch);
  s.mig_fragmentation = span > 0 ? mig_fragmentation_s_ / span : mig_fragmentation_;
}

}  // namespace replay

Result<Policy> NamedPolicy(const std::string& name, const Policy& configured) {
  Policy p = configured;
  // The named policies other than `las` and `default` do not count service at all.
  auto only = [&](double priority, double fairshare, double age) {
    p.weights =
        Weights{.priority = priority, .fairshare = fairshare, .age = age, .size = 0, .las = 0};
    p.las_thresholds.clear();
    p.las_preemption = false;
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
    const Policy defaults;
    const std::vector<double> thresholds = configured.las_thresholds;
    only(10'000, 0, 0);
    p.weights.las = 1'000;
    // Tiresias' own: 1 and 10 GPU-hours, no budget, unless the file sets others.
    p.las_thresholds = thresholds == defaults.las_thresholds || thresholds.empty()
                           ? std::vector<double>{3600, 36'000}
                           : thresholds;
    if (p.las_preemption_budget == defaults.las_preemption_budget) p.las_preemption_budget.reset();
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
                           const Policy& policy, const SimOptions& options) {
  replay::Replay replay(trace, policy, options);
  return replay.Run(nodes);
}

}  // namespace baton::sim
