// What the controller is asked to do (commands), what it answers (replies), and what it asks
// the outside world to do afterwards (effects). Plain values: the same commands come from the
// HTTP API, the agents, timers and `baton sim`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "control/metrics.h"
#include "control/replies.h"
#include "core/event.h"
#include "core/job.h"
#include "core/node.h"
#include "core/policy.h"
#include "core/protocol.h"
#include "core/usage.h"
#include "store/store.h"

namespace baton::control {

struct Caller {
  std::string user;
  bool admin = false;
};

struct SubmitJobs {
  using Answer = Submitted;
  Caller caller;
  std::vector<JobSpec> specs;   // one, or a batch: all are created or none
  std::string idempotency_key;  // "" = none
  // A batch script's step key (Job::step_key), made by the service: one for each spec of
  // `specs` (the tasks of an array share theirs); none, or "": made by none.
  std::vector<std::string> step_keys;
  // Checks everything a submit checks and answers the jobs it would make (without ids),
  // changing nothing (POST /v1/jobs?dry_run=true).
  bool dry_run = false;
};

// `id` with `array_index` >= 0 names a task of array `id` ("12_7"). An action on an array's id
// alone acts on every task of the array, as Slurm's scancel 12 does.
struct JobAction {
  using Answer = JobShown;
  enum class Kind { kCancel, kHold, kRelease };
  Caller caller;
  JobId id;
  Kind kind = Kind::kCancel;
  int array_index = -1;
};

// PATCH /v1/jobs/{id} (`baton update`, as scontrol update): the fields named in `set` take
// their values from `fields` (codec/job_patch.h). A waiting job changes any of them; a running
// one its time limit (within its pool's maximum) and name. An array's id alone changes every
// task that can take the change, or none.
struct UpdateJob {
  using Answer = JobShown;
  Caller caller;
  JobId id;
  int array_index = -1;
  JobSpec fields;
  std::set<std::string> set;
};

struct GetJob {
  using Answer = JobDetail;
  Caller caller;
  JobId id;
  int array_index = -1;  // >= 0: the task of array `id` with this index
};

struct ListJobs {
  using Answer = JobPage;
  Caller caller;
  std::vector<JobState> states;  // empty = all
  std::string user;              // "" = all
  std::string project;           // "" = all
  int64_t array = 0;             // 0 = all; else the tasks of this job array
  int limit = 100;
  int64_t after = 0;  // ids greater than this
};

struct ListNodes {
  using Answer = NodeList;
};

// The models LLM-aware sizing knows: the configuration's, then the built-in catalog's.
struct ListModels {
  using Answer = ModelList;
};

// Recurring jobs (JobSpec::schedule): every series still running, or one user's.
struct ListCrons {
  using Answer = CronList;
  std::string user;  // "" = all
};

// Deletes a recurring job's schedule: its waiting run is cancelled, a running one runs to its
// end, and no run follows. The owner or an admin.
struct DeleteCron {
  using Answer = CronShown;
  Caller caller;
  JobId id;  // the series' first run
};

// Drain (no new jobs; running ones go on) or undrain a node, or some of its GPUs.
struct DrainNode {
  using Answer = NodeList;
  Caller caller;
  std::string node;
  std::vector<int> gpus;  // empty = the whole node
  std::string reason;
  bool drain = true;  // false = undrain
};

struct GetQueue {
  using Answer = QueuePage;
  Caller caller;
  int limit = 100;
  int64_t offset = 0;  // position in the queue to start at
};

// Injects a fault into a GPU of a node whose GPUs are simulated (tests, failure drills).
struct InjectFault {
  using Answer = NodeList;
  Caller caller;
  std::string node;
  FaultInjection fault;
};

// API tokens (users and tokens). The service makes the secret and hashes it; the controller
// keeps the record durable. An admin creates tokens for anyone with any role; a user only
// `user` tokens for themself.
struct CreateToken {
  using Answer = TokenShown;
  Caller caller;
  std::string user;
  Role role = Role::kUser;
  std::string name;
  std::string hash;  // SHA-256 of the secret, hex
};

struct RevokeToken {
  using Answer = TokenShown;
  Caller caller;
  int64_t id = 0;
};

// An agent joining with a join token (`join_token`: its id; 0 for the data directory's
// agent.token, which may be used again; a stored one is used up) gets a credential for node
// `node` (`hash`: its SHA-256), refused while the node has one that works.
struct JoinNode {
  using Answer = TokenShown;
  std::string node;
  int64_t join_token = 0;
  std::string hash;
};

// Revokes every credential of node `node` (admin).
struct RevokeNode {
  using Answer = TokenList;
  Caller caller;
  std::string node;
};

struct ListTokens {
  using Answer = TokenList;
  Caller caller;  // an admin sees every token; a user their own
};

// The latest cluster events, oldest first.
struct GetEvents {
  using Answer = EventList;
  int64_t after = 0;  // events with a greater seq
  int limit = 1000;
};

// A new scheduling policy from the configuration file, reloaded on SIGHUP. Jobs keep what
// they were given at submit (time limits); the next pass orders and places by the new one.
struct SetPolicy {
  using Answer = Acknowledged;
  Policy policy;
};

// GET /v1/usage: GPU-seconds and cost by project and by user. With a window, only the jobs
// that were in the system in it (submitted before `until`, not ended before `since`) count.
struct GetUsage {
  using Answer = UsageReport;
  std::optional<TimePoint> since, until;
};

// GET /v1/jobs/{id}/metrics: the job's GPUs with their last readings, its cost so far.
struct GetJobMetrics {
  using Answer = JobMetrics;
  Caller caller;
  JobId id;
  int array_index = -1;
};

// Asks the agent of a running job's first node to open tunnel `tunnel` (api/relay.h) to the
// job's session (port 0: `baton run`'s stdin or terminal) or to a TCP port the job listens on
// there. The job's owner or an admin; answered with the job.
struct OpenTunnel {
  using Answer = JobShown;
  Caller caller;
  JobId id;
  int array_index = -1;
  std::string tunnel;
  int port = 0;
  bool step = false;  // to the allocation's host at its step port (`baton run --in`)
};

// A snapshot of what GET /metrics shows (control/metrics.h).
struct GetMetrics {
  using Answer = MetricsShown;
};

struct AgentRegister {
  using Answer = RegisterReply;
  RegisterRequest request;
};

struct AgentPoll {
  using Answer = PollAnswer;
  std::string node;
  uint64_t session = 0;
  uint64_t after = 0;    // orders up to here are acknowledged
  uint64_t poll_id = 0;  // names this poll if it has to wait
};

struct AgentReport {
  using Answer = ReportAnswer;
  ReportRequest report;
  // Log bytes of the report the server did not keep (api::LogStore: the disk reserve, or past
  // the largest log), and why: raised as a log_dropped alert.
  int64_t log_bytes_dropped = 0;
  JobId dropped_job;
  std::string dropped_why;
};

// What autoscaling asks its provider (Policy::autoscaling), an effect the server's provider
// runner carries out (server/provider_runner.h), answered by a ProviderAnswer with its `id`.
struct ProviderCall {
  uint64_t id = 0;
  std::vector<std::string> argv;  // the provider and its own arguments; the verb follows
  Duration timeout{0};
  ProviderRequest request;
};

// The provider's answer to call `call`: done, with the nodes it names (resume: those it is
// starting; list: every node it has), or why not (it exited non-zero, hung, said nonsense).
struct ProviderAnswer {
  using Answer = Acknowledged;
  uint64_t call = 0;
  Status status;
  std::vector<ProvidedNode> nodes;
};

// Time passed; look at timeouts.
struct Tick {
  using Answer = Acknowledged;
};

using Command =
    std::variant<SubmitJobs, JobAction, UpdateJob, GetJob, ListJobs, ListNodes, GetQueue, DrainNode,
                 InjectFault, GetEvents, CreateToken, RevokeToken, JoinNode, RevokeNode, ListTokens,
                 GetMetrics, SetPolicy, GetUsage, GetJobMetrics, ListCrons, DeleteCron, ListModels,
                 OpenTunnel, AgentRegister, AgentPoll, AgentReport, ProviderAnswer, Tick>;

// Every answer a command has (replies.h).
using ReplyValue =
    std::variant<Acknowledged, Submitted, JobShown, JobDetail, JobPage, QueuePage, NodeList,
                 EventList, TokenShown, TokenList, MetricsShown, UsageReport, JobMetrics, CronList,
                 CronShown, ModelList, RegisterReply, PollAnswer, ReportAnswer>;

// The answer a command of type C has: C::Answer, one of ReplyValue's.
template <typename C>
using AnswerOf = typename C::Answer;

// What Apply answers a command C: whether it was done, and when it was, C's answer.
struct Reply {
  Status status;
  ReplyValue value;
};

// A reply that only says what went wrong.
inline Reply ErrorReply(Status s) { return Reply{std::move(s), Acknowledged{}}; }

// A reply read as command C's (a Reply to C holds AnswerOf<C> when its status is ok): its
// status, and its answer (a default one when the status is not ok). `->` reaches into it: on a
// temporary, a range-for must name `.value` (`for (x : Run(c).value.jobs)`), which the
// temporary outlives, where `Run(c)->jobs` would dangle.
template <typename C>
struct Answered {
  Answered() = default;
  explicit Answered(Reply r) : status(std::move(r.status)) {
    if (status.ok()) value = std::get<AnswerOf<C>>(std::move(r.value));
  }
  AnswerOf<C>* operator->() { return &value; }
  const AnswerOf<C>* operator->() const { return &value; }

  Status status;
  AnswerOf<C> value{};
};

// Answers a parked AgentPoll.
struct Delivery {
  uint64_t poll_id = 0;
  std::vector<Order> orders;
};

struct Effects {
  store::Batch store;  // must be durable before any reply of this batch is sent
  std::vector<Delivery> deliveries;
  std::vector<ClusterEvent> events;  // raised in this batch: to the log, and alerts to their hooks
  std::vector<ProviderCall> provider_calls;  // for the provider runner, once the batch is durable
};

}  // namespace baton::control
