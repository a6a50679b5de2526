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
  Caller caller;
  JobId id;
  int array_index = -1;
  JobSpec fields;
  std::set<std::string> set;
};

struct GetJob {
  Caller caller;
  JobId id;
  int array_index = -1;  // >= 0: the task of array `id` with this index
};

struct ListJobs {
  Caller caller;
  std::vector<JobState> states;  // empty = all
  std::string user;              // "" = all
  std::string project;           // "" = all
  int64_t array = 0;             // 0 = all; else the tasks of this job array
  int limit = 100;
  int64_t after = 0;  // ids greater than this
};

struct ListNodes {};

// The models LLM-aware sizing knows: the configuration's, then the built-in catalog's.
struct ListModels {};

// Recurring jobs (JobSpec::schedule): every series still running, or one user's.
struct ListCrons {
  std::string user;  // "" = all
};

// Deletes a recurring job's schedule: its waiting run is cancelled, a running one runs to its
// end, and no run follows. The owner or an admin.
struct DeleteCron {
  Caller caller;
  JobId id;  // the series' first run
};

// Drain (no new jobs; running ones go on) or undrain a node, or some of its GPUs.
struct DrainNode {
  Caller caller;
  std::string node;
  std::vector<int> gpus;  // empty = the whole node
  std::string reason;
  bool drain = true;  // false = undrain
};

struct GetQueue {
  Caller caller;
  int limit = 100;
  int64_t offset = 0;  // position in the queue to start at
};

// Injects a fault into a GPU of a node whose GPUs are simulated (tests, failure drills).
struct InjectFault {
  Caller caller;
  std::string node;
  FaultInjection fault;
};

// API tokens (users and tokens). The service makes the secret and hashes it; the controller
// keeps the record durable. An admin creates tokens for anyone with any role; a user only
// `user` tokens for themself.
struct CreateToken {
  Caller caller;
  std::string user;
  Role role = Role::kUser;
  std::string name;
  std::string hash;  // SHA-256 of the secret, hex
};

struct RevokeToken {
  Caller caller;
  int64_t id = 0;
};

// An agent joining with a join token (`join_token`: its id; 0 for the data directory's
// agent.token, which may be used again; a stored one is used up) gets a credential for node
// `node` (`hash`: its SHA-256), refused while the node has one that works.
struct JoinNode {
  std::string node;
  int64_t join_token = 0;
  std::string hash;
};

// Revokes every credential of node `node` (admin).
struct RevokeNode {
  Caller caller;
  std::string node;
};

struct ListTokens {
  Caller caller;  // an admin sees every token; a user their own
};

// The latest cluster events, oldest first.
struct GetEvents {
  int64_t after = 0;  // events with a greater seq
  int limit = 1000;
};

// A new scheduling policy from the configuration file, reloaded on SIGHUP. Jobs keep what
// they were given at submit (time limits); the next pass orders and places by the new one.
struct SetPolicy {
  Policy policy;
};

// GET /v1/usage: GPU-seconds and cost by project and by user. With a window, only the jobs
// that were in the system in it (submitted before `until`, not ended before `since`) count.
struct GetUsage {
  std::optional<TimePoint> since, until;
};

// GET /v1/jobs/{id}/metrics: the job's GPUs with their last readings, its cost so far.
struct GetJobMetrics {
  Caller caller;
  JobId id;
  int array_index = -1;
};

// Asks the agent of a running job's first node to open tunnel `tunnel` (api/relay.h) to the
// job's session (port 0: `baton run`'s stdin or terminal) or to a TCP port the job listens on
// there. The job's owner or an admin; answered with the job.
struct OpenTunnel {
  Caller caller;
  JobId id;
  int array_index = -1;
  std::string tunnel;
  int port = 0;
  bool step = false;  // to the allocation's host at its step port (`baton run --in`)
};

// A snapshot of what GET /metrics shows (control/metrics.h).
struct GetMetrics {};

struct AgentRegister {
  RegisterRequest request;
};

struct AgentPoll {
  std::string node;
  uint64_t session = 0;
  uint64_t after = 0;    // orders up to here are acknowledged
  uint64_t poll_id = 0;  // names this poll if it has to wait
};

struct AgentReport {
  ReportRequest report;
  // Log bytes of the report the server did not keep (api::LogStore: the disk reserve, or past
  // the largest log), and why: raised as a log_dropped alert.
  int64_t log_bytes_dropped = 0;
  JobId dropped_job;
  std::string dropped_why;
};

struct Tick {};  // time passed; look at timeouts

using Command =
    std::variant<SubmitJobs, JobAction, UpdateJob, GetJob, ListJobs, ListNodes, GetQueue, DrainNode,
                 InjectFault, GetEvents, CreateToken, RevokeToken, JoinNode, RevokeNode, ListTokens,
                 GetMetrics, SetPolicy, GetUsage, GetJobMetrics, ListCrons, DeleteCron, ListModels,
                 OpenTunnel, AgentRegister, AgentPoll, AgentReport, Tick>;

struct Reply {
  Status status;
  bool created = false;   // a submit made new jobs (201), or found them by key (200)
  bool dry_run = false;   // a submit's dry run: `jobs` are what it would make, without ids
  std::vector<Job> jobs;  // copies, safe to read on another thread
  std::vector<QueueFactors>
      factors;  // GetQueue: one per job, in queue order; GetJob: a pending job's
  std::optional<int64_t>
      queue_position;  // GetJob: a pending job's place in the last full ordering (1 = next)
  std::optional<int64_t> next;  // paging cursor for ListJobs
  std::vector<NodeStatus> nodes;
  RegisterReply registration;
  std::vector<Order> orders;
  bool parked = false;               // an AgentPoll that waits; a Delivery answers it later
  std::vector<ClusterEvent> events;  // GetEvents
  std::vector<store::Token> tokens;  // CreateToken, RevokeToken: the one; ListTokens: all shown
  std::shared_ptr<const MetricsSnapshot> metrics;     // GetMetrics
  std::vector<UsageRow> usage_projects, usage_users;  // GetUsage
  std::optional<JobMetrics> job_metrics;              // GetJobMetrics
  std::string currency;                               // GetUsage: the catalog's
  std::vector<CronEntry> crons;                       // ListCrons; DeleteCron: the one
  std::vector<ModelShape> models;                     // ListModels
};

// A reply that only says what went wrong.
inline Reply ErrorReply(Status s) {
  Reply r;
  r.status = std::move(s);
  return r;
}

// Answers a parked AgentPoll.
struct Delivery {
  uint64_t poll_id = 0;
  std::vector<Order> orders;
};

struct Effects {
  store::Batch store;  // must be durable before any reply of this batch is sent
  std::vector<Delivery> deliveries;
  std::vector<ClusterEvent> events;  // raised in this batch: to the log, and alerts to their hooks
};

}  // namespace baton::control
