// The controller: a deterministic state machine over jobs and nodes. Commands go in through
// Apply (each answered at once), EndBatch closes a batch of them (scheduling, orders for the
// agents) and returns the Effects the caller must carry out: make the store batch durable,
// then send the replies and deliveries. Time is always a parameter; nothing here reads a
// clock, does I/O or starts a thread. One owner calls it; it is not thread-safe.
// control::RunBatch (batch.h) is the one way to drive it.
//
// It owns the jobs and their runs, the scheduler's view and usage ledger, and these parts:
//   nodes_   (NodeTable,       node_table.h):  nodes, sessions, outboxes, parked polls;
//   queue_   (sched::JobQueue, job_queue.h):   the waiting jobs and the planning of passes;
//   budgets_ (BudgetBook,      budget_book.h): budgets' periods, spending and alerts;
//   events_  (EventRing,       event_ring.h):  the latest cluster events;
//   tokens_  (TokenBook,       token_book.h):  the API tokens' records;
//   gate_    (DependencyGate,  dependency_gate.h): pending jobs held back, and why;
//   feasibility_ (FeasibilityCache, feasibility_cache.h): what could ever hold a request;
//   idle_sessions_ (IdleSessions, idle_sessions.h): idle sessions' clocks and verdicts;
//   counters_ (Counters,       metrics.h):     what GET /metrics counts since the start;
//   crons_   (CronBook,        cron_book.h):   recurring jobs' series and the runs owed;
//   keys_    (IdempotencyKeys, idempotency_keys.h): submits' keys and the jobs they made;
//   utilization_ (AttemptUtilization, attempt_utilization.h): running attempts' GPU readings;
//   numbers_ (AccountNumbers,  account_numbers.h): a pass's numbers for accounts and pools;
//   failure_alerts_ (FailureAlerts, failure_alerts.h): job_failed alerts, an array's as one;
//   blame_   (LaunchBlame,     launch_blame.h): launch failures proven elsewhere, and drains;
//   watch_   (NodeWatch,       node_watch.h): silent nodes, their fences, jobs due back.
// controller.cc: restore, users' commands, job bookkeeping and runs; controller_schedule.cc:
// a pass's input and what its result does; controller_agents.cc: agents, nodes and drains;
// controller_cost.cc: prices and costs; controller_metrics.cc and controller_tokens.cc: the
// read-outs and token commands; controller_waiting.cc: dependencies, begin times, array
// throttles; controller_crons.cc: recurring jobs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/account_numbers.h"
#include "control/attempt_utilization.h"
#include "control/budget_book.h"
#include "control/commands.h"
#include "control/cron_book.h"
#include "control/dependency_gate.h"
#include "control/event_ring.h"
#include "control/failure_alerts.h"
#include "control/feasibility_cache.h"
#include "control/idempotency_keys.h"
#include "control/idle_sessions.h"
#include "control/launch_blame.h"
#include "control/node_table.h"
#include "control/node_watch.h"
#include "control/running_jobs.h"
#include "control/token_book.h"
#include "core/policy.h"
#include "sched/cluster_view.h"
#include "sched/fair_share.h"
#include "sched/feasibility.h"
#include "sched/job_queue.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace baton::control {

// Where the processes of a multi-node or multi-process job meet: rank 0's node, at a port from
// torchrun's 29500 up. A job's port is DefaultMasterPort (29500 + id mod 10000) unless another
// running job already meets at that port on the same rank-0 node (by Baton's choice or its own
// MASTER_PORT); then the next free one, wrapping within the range. A job's own MASTER_PORT
// always wins in its environment.
constexpr int kFirstMasterPort = 29500;
constexpr int kMasterPorts = 10000;
int DefaultMasterPort(JobId id);
// Whether the job's processes meet over the network: more than one node, or one process per
// GPU on more than one GPU.
bool MeetsOverNetwork(const Job& job);

struct ControllerOptions {
  Duration node_timeout = std::chrono::seconds(60);  // silent agent -> node lost
  // An agent that has not reached a controller for node_timeout stops its jobs (its fence):
  // SIGTERM, and SIGKILL this long after. A lost node's jobs are requeued only once both have
  // surely happened (NodeWatch::FenceEnds), so that a job never runs twice.
  Duration fence_grace = std::chrono::seconds(10);
  Duration poll_timeout = std::chrono::seconds(20);       // longest an agent's poll is held
  Duration full_pass_interval = std::chrono::seconds(2);  // re-order the queue (age, usage)
  // A node where this many jobs in a row could not start, and then started elsewhere, is
  // drained with the reason (a black hole would fail the whole queue); 0: never.
  int drain_after_launch_failures = 3;
  // Waiting jobs a full pass gives a reason to (Job::reason_detail and the place in the
  // queue), the first in order; the decisions are the same for any number. Passes that are
  // not full always explain sched::kExplainedWaits: the re-pass rule reads their reasons.
  int explained_waits = sched::kExplainedWaits;
  Policy policy;
};

// A job that could not start on this many nodes fails for good: the fault is its own.
inline constexpr size_t kLaunchNodesTried = 3;

class Controller {
 public:
  explicit Controller(ControllerOptions options = {});

  // Rebuilds the state a store snapshot describes. REQUIRES: called once, before any Apply.
  void Restore(store::Snapshot snapshot, TimePoint now);

  Reply Apply(const Command& command, TimePoint now);
  Effects EndBatch(TimePoint now);

  // Replaces each job with the current record as GET shows it: the running attempt's cost
  // included. A job the controller does not know is left as it is.
  void ShowAsNow(std::vector<Job>& jobs, TimePoint now) const;
  void ShowAsNow(Job& job, TimePoint now) const;

  // Read-only views for tests and the simulator.
  const Job* FindJob(JobId id) const;
  // Task `array_index` of array `id`; with array_index < 0, job `id` itself.
  const Job* FindJob(JobId id, int array_index) const;
  const std::map<JobId, Job>& jobs() const { return jobs_; }
  const sched::ClusterView& cluster() const { return view_; }
  size_t queue_length() const { return queue_.size(); }
  const sched::UsageLedger& usage() const { return usage_; }
  const Policy& policy() const { return options_.policy; }

 private:
  Result<Submitted> Submit(const SubmitJobs& c, TimePoint now);
  // A submit with an Idempotency-Key seen before: the jobs it made then.
  std::optional<Submitted> Repeated(const SubmitJobs& c) const;
  // The request of `spec` as it will run (its nodes chosen when it named none), or why no set
  // of its pool's nodes can ever hold it (feasibility_).
  Result<Resources> Feasible(const JobSpec& spec, const std::string& user);
  Result<Resources> Admit(const JobSpec& spec, const std::string& user, TimePoint now);
  // A spec that names a model (JobSpec::model): fills the gpus and gpu_memory it does not give
  // from the model's estimate on its pool's GPU models (controller_sizing.cc); `note` says how.
  Status SizeByModel(JobSpec& spec, std::string* note);
  // Sizes the specs of a submit that name a model: `own` becomes their copy, sized, and
  // `sized` says how each was (both left empty when none names one).
  Status SizeModels(const std::vector<JobSpec>& specs, std::vector<JobSpec>* own,
                    std::vector<std::string>* sized);
  Result<JobShown> Act(const JobAction& c, TimePoint now);
  // `baton update` (controller_update.cc): the job's spec with the fields changed, checked as a
  // submit checks it; and putting it in place (the queue, the nodes of a running job).
  Result<JobShown> Update(const UpdateJob& c, TimePoint now);
  Result<JobSpec> Patched(const Job& job, const UpdateJob& c, TimePoint now);
  void ApplyPatch(Job& job, JobSpec spec, TimePoint now);
  Status ActOn(Job& job, JobAction::Kind kind, const Caller& caller, TimePoint now);
  // A copy of `job` as users see it at `now`.
  static Job JobAsShown(const Job& job, TimePoint now);
  Result<JobDetail> Get(const GetJob& c, TimePoint now) const;
  JobPage List(const ListJobs& c, TimePoint now) const;
  NodeList Nodes() const;
  QueuePage Queue(const GetQueue& c) const;
  Result<NodeList> Drain(const DrainNode& c);
  Result<NodeList> Inject(const InjectFault& c);
  Result<TokenShown> Tokens(const CreateToken& c, TimePoint now);
  Result<TokenShown> Tokens(const RevokeToken& c);
  Result<TokenShown> Tokens(const JoinNode& c, TimePoint now);
  Result<TokenList> Tokens(const RevokeNode& c);
  TokenList Tokens(const ListTokens& c) const;
  MetricsShown Metrics(TimePoint now) const;
  UsageReport Usage(const GetUsage& c, TimePoint now) const;
  EventList Events(const GetEvents& c) const;
  Result<JobMetrics> JobMetricsOf(const GetJobMetrics& c, TimePoint now) const;
  // Sessions (controller_sessions.cc): tunnels to them; an interactive pool's limits at
  // submit; its idle sessions warned, then stopped.
  Result<JobShown> Tunnel(const OpenTunnel& c, TimePoint now);
  Status AdmitSession(const JobSpec& spec, const PoolPolicy& pool, const std::string& user) const;
  void ReclaimIdleSessions(TimePoint now);
  void StopIdleSession(Job& job, const PoolPolicy& pool, Duration idle_for, TimePoint now);
  CronList Crons(const ListCrons& c, TimePoint now) const;
  Result<CronShown> Crons(const DeleteCron& c, TimePoint now);
  Result<RegisterReply> Register(const AgentRegister& c, TimePoint now);
  Result<PollAnswer> Poll(const AgentPoll& c, TimePoint now);
  Result<Acknowledged> Report(const AgentReport& c, TimePoint now);
  void OnTick(TimePoint now);

  void Schedule(TimePoint now);
  // The pass's view of a waiting job, and of a running one.
  sched::PendingJob PendingOf(const Job& j) const;
  sched::RunningJob RunningOf(const Job& j, TimePoint now) const;
  // The same, as RunningJobs keeps it (the time-dependent parts as of the job's start).
  RunningJobs::Kept KeptOf(const Job& j) const;
  // Makes the records of the running jobs changed in this batch (dirty_) again: before each
  // pass, and at the batch's end for what the last pass's decisions changed.
  void KeepRunningRecords();
  // A waiting job's factors as shown (GetJob, GetQueue): a pass leaves out the fair-share
  // factor where the policy does not weigh it, and it is worked out here, from the usage now.
  sched::ShownFairShare FairShareShown() const {
    return sched::ShownFairShare(&usage_, &options_.policy);
  }
  void ShowFactors(QueueFactors& f, const Job& j, sched::ShownFairShare& shown) const;
  // Takes in a pass's decisions: reasons, preemptions, starts; whether an arrival that waits
  // could preempt (the re-pass rule, sched/job_queue.h).
  // `given`: the plan's jobs, by index into `in.pending`; empty when the pass was given the
  // queue (then found by id).
  bool ApplyPass(sched::PassResult& pass, const sched::PassInput& in,
                 const std::vector<const Job*>& given, bool partial, TimePoint now);
  // Whether a full pass needs only the head of the queue (strict order by class; see
  // Schedule), and how long a head it is given first.
  bool HeadIsEnough() const;
  // Strict order: the last full pass's blocker cannot start on what is free now.
  bool BlockerIsStuck() const;
  static constexpr size_t kStrictHead = sched::kExplainedWaits + 64;
  // The lowest priority class among the running jobs (above kCritical when none runs).
  int LowestRunningClass() const;
  // Whether the re-pass rule could find an arrival that may preempt among a pass's waits (a
  // project has a guarantee, or a waiting job's class is above a running one's).
  bool RepassMayFollow() const;
  // Starts `j` on its allocation: the view, its state, the launch orders.
  void StartJob(Job& j, TimePoint now);
  // Sends the launch orders of the job's current attempt (only rank `only_rank`'s if given).
  void Launch(Job& job, std::optional<size_t> only_rank = std::nullopt);
  void HandleEvent(NodeRecord& node, const JobEvent& e, TimePoint now);
  void NoteMetric(Job& job, const JobEvent& e, TimePoint now);
  void StopParts(Job& job, StopReason reason, Duration grace, TimePoint now);
  void Finish(Job& job, TimePoint now);
  // Launch failures (a job that never started on a node): the job goes back to the queue to
  // start elsewhere, or fails when no other node could hold it; a node whose failures the
  // job's start elsewhere proves to be its own is drained after
  // ControllerOptions::drain_after_launch_failures of them in a row.
  // Adds the nodes it could not start on to the job's; whether it may try another node.
  bool LaunchElsewhere(Job& job);
  // The job's program ran on its nodes (an exit of its own, or still running after
  // kProvenAfter): the nodes it could not start on before are counted against, and drained
  // at the limit.
  void BlameLaunchFailures(Job& job, TimePoint now);
  void MarkLost(NodeRecord& node, TimePoint now);
  void NoteOutputLimit(Job& job, const NodeRecord& node, const JobEvent& e, TimePoint now);
  void NoteLogsDropped(const AgentReport& c, TimePoint now);
  void RequeueFenced(TimePoint now);
  // Acts on what the agent says of its GPUs' health: fences failed GPUs and requeues their
  // jobs, turns hardware faults into drains, brings recovered GPUs back.
  void ApplyHealth(NodeRecord& node, const std::vector<GpuHealth>& health, TimePoint now);
  bool GpuUsable(const NodeRecord& node, int gpu) const;
  // Running jobs with a live process on GPU `gpu` of `node`.
  std::vector<JobId> JobsOnGpu(const std::string& node, int gpu) const;
  void Raise(ClusterEvent event, TimePoint now);
  void RebuildNodeSlots(const NodeRecord& node);

  void SetState(Job& job, JobState to, TimePoint now);
  void ChargeRate(const Job& job, int sign, TimePoint now);
  // GPU-seconds the running attempt of `job` has had by `now`.
  static double Service(const Job& job, TimePoint now);
  // GPU-seconds of all of `job`'s attempts by `now`, the running one included.
  static double AllService(const Job& job, TimePoint now) {
    return job.gpu_seconds + (job.state == JobState::kRunning ? Service(job, now) : 0);
  }
  // Costs and budgets (controller_cost.cc). A job's price per hour is fixed when it is placed,
  // from the catalog's price of each GPU it holds; its cost grows while it runs.
  int64_t PricePerHour(const Job& job) const;
  static int64_t AttemptCost(const Job& job, TimePoint now);
  static int64_t AllCost(const Job& job, TimePoint now) {
    return job.cost_micros + (job.state == JobState::kRunning ? AttemptCost(job, now) : 0);
  }
  // Called as an attempt ends: its cost and utilisation join the job's.
  void CloseAttempt(Job& job, TimePoint now);
  // The GPUs' readings of a report, counted towards the running jobs on them.
  void ObserveUtilization(const NodeRecord& node, const std::vector<GpuSample>& samples);
  // Budgets (control/budget_book.h): the running attempts' cost by budgeted project, a recount
  // (restore, new policy; `quiet`: alert levels reached count as alerted), and the alerts.
  // `all`: every project's, else the budgeted ones' only.
  BudgetBook::RunningCost RunningCostByProject(TimePoint now, bool all = false) const;
  void RecountBudgets(TimePoint now, bool quiet);
  void CheckBudgets(TimePoint now);
  void Enqueue(Job& job, TimePoint now);
  void Dequeue(Job& job);
  void OnTerminal(const Job& job, TimePoint now);
  // The job_failed alert of a job that ended (`to`), if any (failure_alerts_).
  void AlertEnded(const Job& job, JobState to, TimePoint now);
  // Looks again at blocked jobs that may go now; those that can enter the queue
  // (controller_waiting.cc, with the DependencyGate gate_).
  void Recheck(const std::vector<JobId>& ids, TimePoint now);
  // The blocked jobs whose begin time has come.
  void ReleaseBegun(TimePoint now);
  // A task of a throttled array gives up its place: the waiting tasks that may, take it.
  void LeaveGate(const Job& job, TimePoint now);
  // A new job of `spec` as a submit at `now` makes it, its resources `resources`, before it
  // has an id; and the job given its id, kept.
  Job Draft(const JobSpec& spec, const Resources& resources, const std::string& user,
            TimePoint now) const;
  Job& Add(Job job, TimePoint now);
  // Recurring jobs (controller_crons.cc, with the CronBook crons_): when a run ends (unless its
  // series was deleted) the next is queued at the batch's end, waiting for the next time its
  // schedule names.
  void QueueNextRuns(TimePoint now);
  CronEntry EntryOf(JobId series, TimePoint now) const;
  void SendOrder(const std::string& node, Order order);
  NodeRecord* FindNode(const std::string& name);
  // The node, added to the table and (unschedulable) to the view if it was not known.
  NodeRecord& EnsureNode(const std::string& name);
  void MarkDirty(const Job& job) { dirty_.insert(job.id); }

  ControllerOptions options_;
  std::map<JobId, Job> jobs_;
  mutable AccountNumbers numbers_;  // a pass's numbers for (project, user) and pools
  int64_t next_id_ = 1;
  bool next_id_dirty_ = false;
  IdempotencyKeys keys_;  // the submits' Idempotency-Keys

  sched::JobQueue queue_;  // pending jobs whose dependencies are met; pass planning
  DependencyGate gate_;    // pending jobs held back: dependencies, a time, an array's throttle
  FailureAlerts failure_alerts_;  // job_failed alerts: an array's counted, said at its end
  CronBook crons_;                // recurring jobs: their series and the next runs owed
  LaunchBlame blame_;             // running after launch failures elsewhere: to prove and blame
  RunningJobs running_;           // jobs_ never drops a job, and map nodes do not move
  std::vector<sched::Reservation> claims_;  // GPUs preemption freed, held for their claimers
  sched::UsageLedger usage_;

  NodeTable nodes_;
  FeasibilityCache feasibility_;  // what could ever hold a request, by the known nodes
  NodeWatch watch_;               // silent nodes, their fences, the lost nodes' jobs due back
  std::pair<JobId, TimePoint> last_log_drop_{};  // the last log_dropped alert: of what, when
  sched::ClusterView view_;
  sched::ClusterView pass_view_;                 // scratch for passes, kept for its buffers
  std::vector<sched::PendingJob> pass_pending_;  // the same, for passes given the queue
  std::vector<sched::RunningJob> pass_running_;  // ... and for every pass's running jobs

  std::set<JobId> dirty_;
  std::vector<store::Drain> new_drains_;
  EventRing events_;
  TokenBook tokens_;
  Counters counters_;               // for GET /metrics, since this controller started
  IdleSessions idle_sessions_;      // the clocks of idle sessions (controller_sessions.cc)
  AttemptUtilization utilization_;  // the running attempts' GPU readings
  BudgetBook budgets_;
};

}  // namespace baton::control
