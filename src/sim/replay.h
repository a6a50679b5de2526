// The replay of a trace behind `baton sim` (sim/simulator.h): simulated agents that speak the
// agent protocol's commands in process to the real Controller, batch by batch, on a virtual
// clock. Its parts by file: simulator.cc the replay itself (agents, jobs, batches, the run and
// its summary), replay_scaling.cc the simulator as autoscaling's provider, replay_mig.cc the
// agents of nodes whose MIG GPUs are re-planned. Internal to src/sim.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "control/batch.h"
#include "control/controller.h"
#include "sim/simulator.h"

namespace baton::sim::replay {

inline double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

// A fixed epoch: the same trace gives the same decisions and the same report.
inline const TimePoint kEpoch = FromMillis(1'700'000'000'000);

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

// A node's devices: its GPUs and MIG instances, not the vacant places of an agent that
// re-plans MIG (core/node.h MigPlaces).
inline int64_t Devices(const NodeInfo& info) {
  return std::count_if(info.gpus.begin(), info.gpus.end(), [](const Gpu& g) { return !g.vacant; });
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

}  // namespace baton::sim::replay
