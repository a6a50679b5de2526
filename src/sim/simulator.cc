#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "control/autoscaler.h"
#include "control/batch.h"
#include "control/controller.h"
#include "core/node.h"
#include "core/quantity.h"
#include "sched/mig_plan.h"

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
  bool up = true;                // an autoscaled node suspended is not (until resumed again)
  // A node whose MIG GPUs are re-planned: what it registers (its instances as they are now),
  // and how long a change takes.
  NodeInfo info;
  Duration mig_delay{0};
};

// A MIG change ordered to a node, registered at `at`.
struct MigDue {
  TimePoint at;
  size_t agent = 0;
  MigOrder order;
};

// An autoscaled node the simulator (its provider) was asked to resume: it registers at `at`.
struct Boot {
  TimePoint at;
  std::string name;
  std::string template_name;
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

// One replay of a trace. The simulated agents speak the agent protocol's commands in process;
// every batch goes through control::RunBatch, as the server's loop runs it, so the decisions
// are the production controller's.
class Replay {
 public:
  Replay(const std::vector<TraceJob>& trace, const Policy& policy, const SimOptions& options);

  Result<SimResult> Run(const std::vector<SimNode>& nodes);

 private:
  // A command waiting for the next batch, and what its reply is for.
  enum class Sent { kSubmit, kPoll, kReport, kRegister, kProvider };
  struct Pending {
    Sent kind;
    size_t index;          // trace row (kSubmit) or agent (kPoll, kReport)
    uint64_t poll_id = 0;  // kPoll
    uint64_t session = 0;  // kPoll: the agent's session when it polled
  };

  Status RegisterNodes(const std::vector<SimNode>& nodes);
  void Queue(control::Command command, Pending pending);
  // Applies the waiting commands, the agents' reports and a tick as one batch.
  Status RunOneBatch(bool* progressed);
  // Runs batches at `now_` until nothing more happens: reports, a tick, the batch's end,
  // orders to the agents, their new polls.
  Status Settle();
  // Takes in a reply; adds an agent that should poll again to `repoll`.
  Status TakeReply(const Pending& p, const control::Reply& r, std::vector<size_t>& repoll);
  void Poll(size_t agent);
  void HandleOrders(size_t agent, const std::vector<Order>& orders);
  void Launch(size_t agent, const LaunchOrder& l);
  void Stop(size_t agent, const StopOrder& s);
  void WakeAtThresholds(const LaunchOrder& l, const TraceJob& t, Duration run);
  // MIG on demand: the changes whose delay has passed made on their nodes, which register
  // again with their new instances and the jobs they run.
  void MakeMigChanges();
  // The mean fragmentation of the re-planned GPUs' free memory slices now.
  double MigFragmentationNow() const;
  void SubmitArrivals();
  void EndExits();
  // Autoscaling, the simulator as the provider: answers the batch's calls (a resume boots its
  // nodes, a suspend stops them at once, a list names what is up or booting), and registers
  // the nodes whose boot is done.
  void AnswerCalls(const std::vector<control::ProviderCall>& calls);
  void BootNodes();
  NodeInfo TemplateNode(const NodeTemplate& t, const std::string& name) const;
  bool Scaling() const { return policy_.autoscaling.on(); }
  const NodeTemplate* TemplateNamed(const std::string& name) const {
    for (const NodeTemplate& t : policy_.autoscaling.templates) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
  // When the next thing happens by itself; none when nothing will.
  std::optional<TimePoint> NextEvent();
  void Summarize(SimResult& result) const;
  // "TIME VERB JOB aATTEMPT NODE[ DETAIL]", a line of the decision log.
  void Log(const char* verb, JobId job, int attempt, size_t agent, const std::string& detail = "");
  void LogNode(const char* verb, const std::string& node);

  const std::vector<TraceJob>& trace_;
  const Policy& policy_;
  SimOptions sim_options_;
  control::ControllerOptions options_;
  control::Controller c_;
  SimResult result_;
  int64_t events_ = 0;
  TimePoint now_ = kEpoch;

  std::vector<Agent> agents_;
  int64_t total_milli_ = 0;
  std::vector<control::Command> batch_;
  std::vector<Pending> pending_;
  std::vector<size_t> arrival_;
  size_t next_arrival_ = 0;
  std::unordered_map<int64_t, size_t> index_of_;  // job id -> trace row
  std::vector<JobId> id_of_;
  std::unordered_map<size_t, std::string> refused_;  // trace row -> why it can never run
  std::vector<double> first_start_;
  // Work done by earlier attempts: a simulated job checkpoints when preempted and resumes there.
  std::vector<Duration> done_;
  std::map<std::pair<int64_t, int>, TimePoint> attempt_start_;  // (job, attempt) -> when it began
  // Times a running job crosses a least-attained-service threshold: the controller should look
  // then (a live one looks every 2 s; here nothing else would wake it).
  std::priority_queue<TimePoint, std::vector<TimePoint>, std::greater<>> wakes_;
  std::priority_queue<Exit, std::vector<Exit>, std::greater<>> exits_;
  std::map<std::tuple<int64_t, int, size_t>, Part> parts_;
  uint64_t seq_ = 0, poll_id_ = 0;
  // poll id -> the agent and its session then (a poll of an earlier session is not repeated)
  std::unordered_map<uint64_t, std::pair<size_t, uint64_t>> parked_;
  int64_t busy_milli_ = 0;
  double gpu_seconds_ = 0;
  double idle_waiting_ = 0;  // GPU-seconds free while the queue was not empty
  double waiting_s_ = 0;     // ... and for how long it was not
  // Autoscaling: nodes booting, each autoscaled node's agent, whether a scan is owed, the
  // GPU-seconds the nodes up offered.
  std::vector<Boot> boots_;
  std::map<std::string, size_t> agent_of_;
  std::map<std::string, std::string> booted_;  // autoscaled node -> its template
  bool unseen_ = true;              // a batch changed something no scan has looked at since
  TimePoint nudged_scan_ = kEpoch;  // a submit's scan: at most a second after it
  double capacity_seconds_ = 0;     // GPU-seconds of the nodes up
  double waiting_capacity_s_ = 0;   // ... while the queue was not empty
  int64_t resumed_ = 0;
  // MIG on demand: the GPUs re-planned, the changes ordered and not yet made, those made, the
  // fragmentation now and its integral over time; the simulator's windows, which wake the
  // controller every mig_window while jobs wait (its own windows fall within them), the
  // changes made when the last began, and how many windows in a row changed nothing. When
  // nothing else will happen, two quiet windows in a row (the controller planned in one of
  // them on the same state) end the waiting.
  int64_t mig_gpus_ = 0;
  std::vector<MigDue> mig_due_;
  int64_t mig_changes_ = 0;
  double mig_fragmentation_ = 0;
  double mig_fragmentation_s_ = 0;
  TimePoint mig_window_ = kEpoch;
  int64_t mig_changes_at_window_ = 0;
  int quiet_windows_ = 0;
};

control::ControllerOptions SimControllerOptions(const Policy& policy) {
  control::ControllerOptions options;
  options.node_timeout = kMaxDuration;  // simulated agents never go silent
  options.poll_timeout = kMaxDuration;
  // No report says why a job waits: full passes write no reasons (the same decisions, and
  // a walk that stops at the last job that could start or hold GPUs instead of the 256th).
  options.explained_waits = 0;
  options.node_charge_detail = kMaxDuration;  // a summary's money is exact for any window
  options.policy = policy;
  return options;
}

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
    total_milli_ += static_cast<int64_t>(std::count_if(info.gpus.begin(), info.gpus.end(),
                                                       [](const Gpu& g) { return !g.vacant; })) *
                    1000;
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

double Replay::MigFragmentationNow() const {
  if (mig_gpus_ == 0) return 0;
  double sum = 0;
  for (const Agent& a : agents_) {
    for (const MigParent& p : a.info.mig_gpus) {
      std::vector<sched::MigInstance> layout;
      for (const Gpu& g : a.info.gpus) {
        if (!g.vacant && g.physical == p.physical)
          layout.push_back(sched::MigInstance{.profile = g.mig_profile, .start = g.mig_start});
      }
      sum += sched::MigFragmentation(layout, p.memory_bytes);
    }
  }
  return sum / static_cast<double>(mig_gpus_);
}

void Replay::MakeMigChanges() {
  std::vector<MigDue> due;
  std::erase_if(mig_due_, [&](const MigDue& d) {
    if (d.at > now_) return false;
    due.push_back(d);
    return true;
  });
  std::set<size_t> registering;
  for (const MigDue& d : due) {
    Agent& a = agents_[d.agent];
    const MigParent* parent = nullptr;
    for (const MigParent& p : a.info.mig_gpus) {
      if (p.physical == d.order.physical) parent = &p;
    }
    if (parent == nullptr) continue;
    // The GPU's instances after the change: those destroyed gone, those created made as an
    // agent's Discover would report them.
    std::vector<Gpu> instances;
    Gpu like;
    for (const Gpu& g : a.info.gpus) {
      if (g.physical == d.order.physical) like = g;
      const bool destroyed = !g.vacant && g.physical == d.order.physical &&
                             std::find(d.order.destroy.begin(), d.order.destroy.end(),
                                       MigSlice{.profile = g.mig_profile, .start = g.mig_start}) !=
                                 d.order.destroy.end();
      if (!g.vacant && !destroyed) instances.push_back(g);
    }
    std::vector<sched::MigInstance> layout;
    for (const Gpu& g : instances) {
      if (g.physical == d.order.physical)
        layout.push_back(sched::MigInstance{.profile = g.mig_profile, .start = g.mig_start});
    }
    for (const MigSlice& c : d.order.create) {
      layout.push_back(sched::MigInstance{.profile = c.profile, .start = c.start});
      Gpu m = like;
      m.vacant = false;
      m.uuid = "MIG-" + a.name + "-" + std::to_string(d.order.physical) + "-" +
               std::to_string(c.start) + "-" + c.profile;
      m.mig_profile = c.profile;
      m.mig_start = c.start;
      m.model = MigModel(parent->model, c.profile);
      auto name = ParseMigProfile(c.profile);
      m.memory_bytes = name ? int64_t{name->memory_gb} << 30 : 0;
      m.island = 1'000'000 - 1 - d.order.physical;  // as SimulatedGpus places instances
      instances.push_back(std::move(m));
    }
    // The hardware refuses what it cannot hold: the node registers as it was.
    if (sched::CheckMigLayout(layout, parent->memory_bytes).ok()) {
      const auto before = std::count_if(a.info.gpus.begin(), a.info.gpus.end(),
                                        [](const Gpu& g) { return !g.vacant; });
      a.info.gpus = MigPlaces(instances, a.info.mig_gpus);
      const auto after = std::count_if(a.info.gpus.begin(), a.info.gpus.end(),
                                       [](const Gpu& g) { return !g.vacant; });
      total_milli_ += static_cast<int64_t>(after - before) * 1000;
      ++mig_changes_;
      mig_fragmentation_ = MigFragmentationNow();
    }
    LogNode("mig", a.name);
    registering.insert(d.agent);
  }
  // One registration a node, however many of its GPUs changed: each would start a session
  // (and a poll) of its own.
  for (size_t agent : registering) {
    Agent& a = agents_[agent];
    RegisterRequest req{.node = a.info};
    for (const auto& [key, part] : parts_) {
      const auto& [job, attempt, index] = key;
      if (index != agent || !part.alive) continue;
      auto started = attempt_start_.find(std::make_pair(job, attempt));
      req.jobs.push_back(JobEvent{.job = JobId{job},
                                  .attempt = attempt,
                                  .kind = JobEvent::Kind::kStarted,
                                  .at = started != attempt_start_.end() ? started->second : now_});
    }
    // Ends not reported yet go with the registration, as an agent's would.
    for (JobEvent& e : a.outbox) req.jobs.push_back(std::move(e));
    a.outbox.clear();
    Queue(control::AgentRegister{std::move(req)}, Pending{.kind = Sent::kRegister, .index = agent});
  }
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

NodeInfo Replay::TemplateNode(const NodeTemplate& t, const std::string& name) const {
  NodeInfo info;
  info.name = name;
  if (auto spec = ParseGpuSpec(t.gpu_spec)) {
    info.gpus = SimulatedGpus(*spec, name);
    info.topology = spec->topology;
  }
  info.cpus = t.cpus > 0 ? t.cpus : 256;
  info.memory_bytes = t.memory_bytes > 0 ? t.memory_bytes : int64_t{2} << 40;
  info.gpu_backend = GpuBackendKind::kSimulated;
  info.pool = t.pool;
  info.spot = t.spot;
  return info;
}

void Replay::AnswerCalls(const std::vector<control::ProviderCall>& calls) {
  for (const control::ProviderCall& call : calls) {
    control::ProviderAnswer answer{.call = call.id};
    switch (call.request.verb) {
      case ProviderVerb::kList:  // what is booting, and the autoscaled nodes up
        for (const Boot& b : boots_) {
          answer.nodes.push_back(
              {.name = b.name, .id = "sim-" + b.name, .template_name = b.template_name});
        }
        for (const auto& [name, template_name] : booted_) {
          if (agents_[agent_of_.at(name)].up)
            answer.nodes.push_back(
                {.name = name, .id = "sim-" + name, .template_name = template_name});
        }
        break;
      case ProviderVerb::kResume:
        for (const ProvidedNode& n : call.request.nodes) {
          boots_.push_back(Boot{.at = now_ + sim_options_.boot_delay,
                                .name = n.name,
                                .template_name = call.request.node_template.name});
          answer.nodes.push_back(
              {.name = n.name, .id = "sim-" + n.name, .template_name = n.template_name});
          ++resumed_;
          LogNode("resume", n.name);
        }
        break;
      case ProviderVerb::kSuspend:
        for (const ProvidedNode& n : call.request.nodes) {
          std::erase_if(boots_, [&](const Boot& b) { return b.name == n.name; });
          auto it = agent_of_.find(n.name);
          if (it == agent_of_.end() || !agents_[it->second].up) continue;
          Agent& a = agents_[it->second];
          a.up = false;
          a.outbox.clear();
          std::erase_if(parked_, [&](const auto& p) { return p.second.first == it->second; });
          if (const auto t = booted_.find(n.name); t != booted_.end()) {
            if (const NodeTemplate* tmpl = TemplateNamed(t->second))
              total_milli_ -= int64_t{tmpl->gpus} * 1000;
          }
          LogNode("suspend", n.name);
        }
        break;
    }
    Queue(std::move(answer), Pending{.kind = Sent::kProvider, .index = 0});
  }
}

void Replay::BootNodes() {
  std::vector<Boot> due;
  std::erase_if(boots_, [&](const Boot& b) {
    if (b.at > now_) return false;
    due.push_back(b);
    return true;
  });
  for (const Boot& b : due) {
    const NodeTemplate* t = TemplateNamed(b.template_name);
    if (t == nullptr) continue;
    size_t ai;
    if (auto it = agent_of_.find(b.name); it != agent_of_.end()) {
      ai = it->second;
      agents_[ai].up = true;
    } else {
      agents_.push_back(Agent{.name = b.name});
      ai = agents_.size() - 1;
      agent_of_[b.name] = ai;
    }
    booted_[b.name] = b.template_name;
    total_milli_ += int64_t{t->gpus} * 1000;
    LogNode("register", b.name);
    Queue(control::AgentRegister{RegisterRequest{.node = TemplateNode(*t, b.name)}},
          Pending{.kind = Sent::kRegister, .index = ai});
  }
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

}  // namespace

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
  Replay replay(trace, policy, options);
  return replay.Run(nodes);
}

}  // namespace baton::sim
