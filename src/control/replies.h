// What the controller answers, one type per kind of answer (commands.h ties each command to
// its own: AnswerOf<C>). Plain values, copies of the controller's state: safe to read on
// another thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/metrics.h"
#include "core/event.h"
#include "core/job.h"
#include "core/node.h"
#include "core/protocol.h"
#include "core/sizing.h"
#include "core/usage.h"
#include "store/store.h"

namespace baton::control {

// SubmitJobs: the jobs it made (created: 201), or found by their Idempotency-Key (200); or,
// for a dry run, the jobs it would make, without ids.
struct Submitted {
  bool created = false;
  bool dry_run = false;
  std::vector<Job> jobs;
};

// JobAction, UpdateJob, OpenTunnel: the job acted on (an array's own record for a whole
// array), as it is after.
struct JobShown {
  Job job;
};

// GetJob: the job; for a pending one its factors and its place in the last full ordering
// (1 = next), when a pass has ordered it.
struct JobDetail {
  Job job;
  std::optional<QueueFactors> factors;
  std::optional<int64_t> queue_position;
};

// ListJobs: a page of jobs by id; `next` is the cursor of the following page, if any.
struct JobPage {
  std::vector<Job> jobs;
  std::optional<int64_t> next;
};

// GetQueue: a page of the waiting jobs in queue order, with their factors (one per job).
struct QueuePage {
  std::vector<Job> jobs;
  std::vector<QueueFactors> factors;
  std::optional<int64_t> next;
};

// ListNodes, DrainNode, InjectFault: every node as users see it.
struct NodeList {
  std::vector<NodeStatus> nodes;
};

// GetEvents: the latest cluster events, oldest first.
struct EventList {
  std::vector<ClusterEvent> events;
};

// CreateToken, RevokeToken, JoinNode: the token's record (never the secret).
struct TokenShown {
  store::Token token;
};

// ListTokens: the tokens the caller may see; RevokeNode: the node's credentials revoked.
struct TokenList {
  std::vector<store::Token> tokens;
};

// GetMetrics: a snapshot taken on the loop's thread.
struct MetricsShown {
  std::shared_ptr<const MetricsSnapshot> metrics;
};

// GetUsage: GPU-seconds and cost by project and by user, in the catalog's currency.
struct UsageReport {
  std::vector<UsageRow> projects, users;
  std::string currency;
  std::optional<NodeCosts> nodes;  // with autoscaled nodes in the window
};

// ListCrons: the recurring jobs still running.
struct CronList {
  std::vector<CronEntry> crons;
};

// DeleteCron: the series deleted.
struct CronShown {
  CronEntry cron;
};

// ListModels: the configuration's models, then the built-in catalog's.
struct ModelList {
  std::vector<ModelShape> models;
};

// AgentPoll: the orders for the agent, or `parked`: none yet, and a Delivery answers the poll
// later (ControllerLoop).
struct PollAnswer {
  std::vector<Order> orders;
  bool parked = false;
};

// SetPolicy, Tick: nothing but that it was done.
struct Acknowledged {};

// AgentReport: done, and how often the agent is to send its GPUs' readings from now on
// (Controller::SampleInterval).
struct ReportAnswer {
  Duration sample_interval{};
};

}  // namespace baton::control
