// Scheduling policy as data: the weights of the queue order, fair-share shares, quotas and
// limits of projects, users and pools, and the switches for backfill and preemption. The
// server's configuration file and `baton sim` fill it in; sched/ reads it and nothing else.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/node.h"
#include "core/sizing.h"
#include "core/time.h"

namespace baton {

inline constexpr int64_t kNoLimit = -1;

// Queue order = sum of weight x factor, each factor in [0, 1] (docs/scheduling.md).
struct Weights {
  double priority = 10'000;  // class: low 0, normal 1/3, high 2/3, critical 1
  double fairshare = 5'000;  // 2^-(usage/share) of the project, refined by the user's
  double age = 1'000;        // time waiting / max_age, capped at 1
  double size = 0;           // GPUs asked / GPUs in the cluster
  double las = 5'000;        // least attained service level (Policy::las_thresholds)
  bool operator==(const Weights&) const = default;
};

// What a project may spend per period (docs/operations.md#budgets). Alerts at 80 % and 100 %;
// with `hard_stop`, new jobs of the project are refused once it is spent.
enum class BudgetPeriod { kDay, kWeek, kMonth, kTotal };

struct Budget {
  double amount = -1;  // in the catalog's currency; < 0: no budget
  BudgetPeriod period = BudgetPeriod::kMonth;
  bool hard_stop = false;
  bool operator==(const Budget&) const = default;
};

struct ProjectPolicy {
  double share = 1;                // relative fair share
  int64_t guaranteed_milli = 0;    // GPUs (milli) it may always claim back by preemption
  int64_t limit_milli = kNoLimit;  // hard cap on GPUs it holds at once
  Budget budget;
  // A Unix group that may read its jobs' checkpoints under the shared checkpoint root
  // (`checkpoint_group:`): they go to ROOT/project:NAME/JOB_ID, 0750 and of this group, instead
  // of the user's own 0700 ROOT/USER/. "": each user's alone.
  std::string checkpoint_group;
  bool operator==(const ProjectPolicy&) const = default;
};

// A GPU model's price per GPU-hour (a fraction of a GPU pays its fraction).
struct GpuPrice {
  double on_demand = 0;
  double spot = -1;  // on spot nodes (NodeInfo::spot); < 0: the on-demand price
  bool operator==(const GpuPrice&) const = default;
};

struct UserPolicy {
  double share = 1;              // relative fair share among the users of a project
  int64_t max_milli = kNoLimit;  // GPUs held at once
  int max_jobs = -1;             // jobs running at once; -1 = no limit
  bool operator==(const UserPolicy&) const = default;
};

struct PoolPolicy {
  Duration default_time_limit{0};  // given to jobs that name none; 0 = none
  Duration max_time_limit{0};      // longest allowed; 0 = no bound
  int64_t max_milli_per_job = kNoLimit;
  int64_t max_milli_per_user = kNoLimit;
  // An interactive (dev) pool: its sessions (`baton run` jobs) get `session_time_limit` when
  // they name none and may not ask for more; a user has at most `max_sessions_per_user` of
  // them waiting or running (0: no limit); and a running session that sits idle (no client
  // attached, and its GPUs below `idle_utilization_pct`) for `idle_timeout` is stopped, warned
  // in its terminal `idle_warning` before.
  bool interactive = false;
  Duration session_time_limit = std::chrono::hours(8);
  int max_sessions_per_user = 0;
  Duration idle_timeout = std::chrono::hours(1);  // 0: sessions are never stopped for idling
  int idle_utilization_pct = 5;
  Duration idle_warning = std::chrono::minutes(5);
  int64_t output_limit = 0;  // the output a node keeps of each job; 0: the cluster's
  // Its jobs that ask get Slurm's variables, srun and scontrol (JobSpec::slurm_env); false: none.
  bool slurm = true;
  bool operator==(const PoolPolicy&) const = default;
};

// A kind of node an autoscaling provider can start (`autoscaling.templates:`,
// docs/operations.md "Elastic capacity"): what each one has, what it costs, how many of it
// autoscaling keeps at least and at most.
struct NodeTemplate {
  std::string name;
  std::string pool = "default";
  std::string gpu_spec;  // as `baton agent --gpus` takes it: "8xH100-80GB"; "" for none
  int gpus = 0;
  std::string gpu_model;  // "H100-80GB"
  int64_t gpu_memory_bytes = 0;
  int cpus = 0;
  int64_t memory_bytes = 0;
  double price_per_hour = 0;  // the whole node's
  // The same node on demand, an hour: what a fixed cluster of it would pay (a spot template's
  // `on_demand_price`, else the cheapest on-demand template of its GPUs, else its own price).
  double on_demand_price = -1;
  bool spot = false;
  int min = 0;
  int max = 0;
  bool operator==(const NodeTemplate&) const = default;
};

// What autoscaling asks its provider, a verb and what it concerns (the JSON on the provider's
// stdin, codec EncodeProviderRequest), and the nodes it names in its answer.
enum class ProviderVerb { kResume, kSuspend, kList };
inline constexpr std::array<std::string_view, 3> kProviderVerbNames = {"resume", "suspend", "list"};
inline std::string_view ProviderVerbName(ProviderVerb v) { return EnumName(kProviderVerbNames, v); }

// A node as a provider names it: ours, its own id for it ("i-0abc..."), its template.
struct ProvidedNode {
  std::string name;
  std::string id;
  std::string template_name;
  bool operator==(const ProvidedNode&) const = default;
};

struct ProviderRequest {
  ProviderVerb verb = ProviderVerb::kList;
  NodeTemplate node_template;       // resume: of what
  std::vector<ProvidedNode> nodes;  // resume: the names to give them; suspend: which
  std::vector<JobId> jobs;          // resume: the waiting jobs they are for
  std::string reason;               // why, as the event said it
  bool operator==(const ProviderRequest&) const = default;
};

// Autoscaling through a provider (`autoscaling:`): an executable called with a verb (resume,
// suspend, list) and JSON on its stdin, answering JSON on its stdout. Without a provider or
// templates it is off.
struct AutoscalingPolicy {
  std::vector<std::string> provider;  // the executable and its own arguments; empty: off
  Duration provider_timeout = std::chrono::seconds(60);  // then it is killed (its process group)
  std::vector<NodeTemplate> templates;
  Duration scan_interval = std::chrono::seconds(10);
  Duration idle_time = std::chrono::minutes(10);       // a node idle so long is suspended
  Duration resume_timeout = std::chrono::minutes(10);  // a node not registered by then failed
  int resume_rate = 20;                                // nodes resumed a minute, at most
  int suspend_rate = 20;                               // nodes suspended a minute, at most
  bool on() const { return !provider.empty() && !templates.empty(); }
  bool operator==(const AutoscalingPolicy&) const = default;
};

struct Policy {
  Weights weights;
  Duration fairshare_half_life = std::chrono::hours(24 * 7);
  Duration max_age = std::chrono::hours(24 * 7);
  bool backfill = true;
  int reservations = 8;  // waiting jobs that get a reservation each full pass
  // When running jobs have no time limits, no reservation can say when a waiting job starts;
  // then the first such job of each pool (one node, two or more GPUs) holds the node it fits
  // on soonest as it empties (else small jobs that fit in the gaps could pass it for ever).
  bool untimed_reservation = true;
  bool preemption = true;
  Duration preempt_grace = std::chrono::seconds(30);  // SIGTERM -> SIGKILL for victims
  // A job's budget of preemptions when it sets none (JobSpec::max_preemptions); none: no limit.
  std::optional<int> max_preemptions;
  // After a spot node's reclaim notice, the pool's other spot nodes take no new jobs this long
  // (a reclaim comes in waves); 0: they go on at once.
  Duration reclaim_cooloff = std::chrono::minutes(5);
  // MIG on demand (issue 42): how often the queue's waiting MIG requests are gathered and the
  // instances of GPUs whose agents re-plan MIG changed to meet them (control/mig_desk.h).
  Duration mig_window = std::chrono::seconds(30);
  // Least attained service (Tiresias' two-dimensional LAS): a job's service is the GPU-seconds
  // it has run (GPUs x time, over all its attempts); these ascending thresholds split jobs into
  // levels, and the `las` factor is 1 in the first level and falls to 0 in the last. With
  // `las_preemption`, a waiting job may preempt a running job of a later level (more service).
  // By default one threshold, 10 GPU-hours, with LAS preemption (issue 41: no user starves on
  // a busy cluster): a job that has run past it may yield its GPUs to one that has not, at most
  // `las_preemption_budget` times.
  std::vector<double> las_thresholds = {36'000};  // GPU-seconds
  bool las_preemption = true;
  // A job preempted this many times (for any reason) is no longer a victim of LAS preemption:
  // it runs on unless a higher class or a guarantee needs its GPUs. None: no limit.
  std::optional<int> las_preemption_budget = 1;
  std::map<std::string, ProjectPolicy> projects;  // unnamed projects get `default_project`
  ProjectPolicy default_project;
  std::map<std::string, UserPolicy> users;
  UserPolicy default_user;
  std::map<std::string, PoolPolicy> pools;
  // The GPU catalog: prices by model name ("H100-80GB") or by a prefix a job's gpu_type could
  // name ("H100"); a model found in neither costs nothing.
  std::map<std::string, GpuPrice> prices;
  std::string currency = "USD";
  // Models of one's own for LLM-aware sizing (`models:` in the configuration), found before
  // the built-in catalog's (core/sizing.h).
  std::vector<ModelShape> models;
  // What a node keeps of a job's output at most, its first half and its last (`output_limit:`,
  // per pool too, and per job up to `max_output_limit:`); with `stop_at_output_limit:` a job
  // that passes it is also stopped.
  int64_t output_limit = int64_t{1} << 30;
  int64_t max_output_limit = int64_t{64} << 30;
  bool stop_at_output_limit = false;
  // A directory every node mounts at the same path (`checkpoint_root:`): a job's
  // BATON_CHECKPOINT_DIR is ROOT/USER/JOB_ID on every node and attempt, so a job requeued to
  // another node resumes from its checkpoints (ROOT/project:NAME/JOB_ID for a project with a
  // checkpoint_group). "": a directory per node in the job's.
  std::string checkpoint_root;
  AutoscalingPolicy autoscaling;
  bool operator==(const Policy&) const = default;

  const ProjectPolicy& Project(const std::string& name) const {
    auto it = projects.find(name);
    return it == projects.end() ? default_project : it->second;
  }
  const UserPolicy& User(const std::string& name) const {
    auto it = users.find(name);
    return it == users.end() ? default_user : it->second;
  }
  // The price of `gpu`: its model's own entry, else the entry it matches as a gpu_type would
  // (the model's prefix before a '-', ignoring case; a MIG instance's profile); null when the
  // catalog has neither.
  const GpuPrice* Price(const Gpu& gpu) const;
  // What `gpu` costs an hour (the spot price for `spot`, when the catalog has one). A MIG
  // instance the catalog does not name pays its share of its GPU's price: its compute slices
  // ("3g.40gb" of an A100-80GB: 3 of 7; "2g.12gb" of an A30: 2 of 4). None when the catalog
  // prices neither.
  std::optional<double> HourlyPrice(const Gpu& gpu, bool spot) const;
  const PoolPolicy* Pool(const std::string& name) const {
    auto it = pools.find(name);
    return it == pools.end() ? nullptr : &it->second;
  }
  // The output limit of a job of `spec_limit` (0: none of its own) in `pool`.
  int64_t OutputLimit(int64_t spec_limit, const std::string& pool) const {
    if (spec_limit > 0) return spec_limit;
    const PoolPolicy* p = Pool(pool);
    return p != nullptr && p->output_limit > 0 ? p->output_limit : output_limit;
  }
};

// The start of the budget period holding `t` (UTC: the day, the week from Monday, the
// calendar month); the epoch for kTotal. And the start of the next one (far future for kTotal).
TimePoint PeriodStart(BudgetPeriod period, TimePoint t);
TimePoint NextPeriodStart(BudgetPeriod period, TimePoint t);
std::string_view BudgetPeriodName(BudgetPeriod period);

}  // namespace baton
