// Jobs: what a user asks for (JobSpec), what Baton knows about it (Job), and the job state
// machine. Only the transitions listed in CanTransition are legal; the controller checks
// every change against it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/boxed.h"
#include "core/ids.h"
#include "core/names.h"
#include "core/quantity.h"
#include "core/sizing.h"
#include "core/status.h"
#include "core/time.h"

namespace baton {

enum class Priority { kLow = 0, kNormal = 1, kHigh = 2, kCritical = 3 };
std::string_view PriorityName(Priority p);
Result<Priority> ParsePriority(std::string_view text);

enum class JobState { kPending, kHeld, kRunning, kSucceeded, kFailed, kCancelled, kTimedOut };
std::string_view JobStateName(JobState s);
Result<JobState> ParseJobState(std::string_view text);
bool IsTerminal(JobState s);

// Why a job waits, as squeue's REASON: what stands between it and a start.
//   priority:   jobs ahead of it in the queue go first;
//   resources:  no set of free GPUs (and CPUs, memory) fits it now;
//   quota:      its project or user is at a limit;
//   held:       held by its owner or an admin until released;
//   dependency: a job it runs after has not ended as it needs (or, a singleton, an earlier job
//               of its name and user has not ended);
//   begin_time: it may not start before its begin time;
//   array_limit: its array runs (or queues) as many tasks at once as its throttle allows;
//   schedule:   the next run of a recurring job, waiting for the time its schedule names.
enum class WaitReason {
  kNone,
  kPriority,
  kResources,
  kQuota,
  kHeld,
  kDependency,
  kBeginTime,
  kArrayLimit,
  kSchedule
};
std::string_view WaitReasonName(WaitReason r);  // "" for kNone
Result<WaitReason> ParseWaitReason(std::string_view text);

// Why a running job was preempted for a waiting one: a higher priority class, a project over
// its guarantee while the waiting job's is under its own, or (least attained service) more
// GPU-time run than the waiting job.
enum class PreemptReason { kPriority, kQuota, kService };
std::string_view PreemptReasonName(PreemptReason r);
bool CanTransition(JobState from, JobState to);

// Bounds on every field of a job spec. Submits beyond them are rejected with the field named.
struct SpecLimits {
  static constexpr size_t kNameBytes = 128;
  static constexpr size_t kCommandArgs = 4096;
  static constexpr size_t kCommandBytes = 256 * 1024;
  static constexpr size_t kEnvVars = 512;
  static constexpr size_t kEnvKeyBytes = 256;
  static constexpr size_t kEnvBytes = 256 * 1024;
  static constexpr size_t kPathBytes = 4096;
  static constexpr size_t kLabelBytes = 64;  // project, pool, gpu type
  static constexpr int64_t kMaxMilliGpus = 4096 * 1000;
  static constexpr int kMaxNodes = 1024;
  static constexpr int kMaxCpus = 100'000;
  static constexpr int kMaxRetries = 100;
  static constexpr int kMaxPreemptions = 1000;
  static constexpr size_t kMaxAfter = 256;
  static constexpr size_t kMaxArrayTasks = 10'000;
  static constexpr int kMaxArrayIndex = 1'000'000;
  static constexpr size_t kMaxSweepParams = 64;  // names in one parameter set
  static constexpr int kMaxTasksPerNode = 1024;
  static constexpr size_t kScheduleBytes = 256;
};

struct Resources {
  int64_t milli_gpus = 0;        // total across nodes; fractions (< 1000) only for one GPU
  std::string gpu_type;          // "" = any; matched case-insensitively against the GPU model
  int64_t gpu_memory_bytes = 0;  // minimum memory per GPU (whole GPUs) or share (fractions)
  // 0 (a submit that names none): the fewest whole nodes that hold the GPUs split evenly,
  // chosen at submit (sched/feasibility.h); a stored job always has its nodes.
  int nodes = 1;
  int cpus = 0;              // per node; 0 = no requirement
  int64_t memory_bytes = 0;  // per node; 0 = no requirement
  // Where it may go, as Slurm's --exclusive, --nodelist and --exclude. `exclusive`: its nodes
  // run no other job while it runs (it starts only on nodes that run none), though it holds
  // only the GPUs it asked for. `nodelist`: nodes it must be given (its node count at least
  // theirs; the rest the scheduler picks); `exclude`: nodes it must not be given.
  bool exclusive = false;
  std::vector<std::string> nodelist;
  std::vector<std::string> exclude;
  // Whether any of the three is given: such a job is its own shape to the scheduler.
  bool Constrained() const { return exclusive || !nodelist.empty() || !exclude.empty(); }
  bool operator==(const Resources&) const = default;
};

// A job sized from the model it serves or trains (`baton submit --model`): what it does not
// give of gpus and gpu_memory is filled in at submit from core/sizing.h's estimate.
struct ModelSizing {
  std::string name;   // a model of the catalog (or the configuration's); "" with `params`
  double params = 0;  // else its parameter count
  ModelTask task = ModelTask::kInference;
  Precision precision = Precision::kBf16;
  int64_t seq = 2048;
  int64_t batch = 1;
  Optimizer optimizer = Optimizer::kAdamW;
  int zero = 3;
  bool checkpointing = false;
  bool operator==(const ModelSizing&) const = default;
};

// A session's kind (JobSpec::interactive): none (a batch job), "stdin" or "tty".
enum class Interactive { kNone, kStdin, kTty };
inline constexpr std::array<std::string_view, 3> kInteractiveNames = {"", "stdin", "tty"};
inline std::string_view InteractiveName(Interactive i) { return EnumName(kInteractiveNames, i); }
inline Result<Interactive> ParseInteractive(std::string_view text,
                                            std::string_view field = "interactive") {
  return ParseEnum<Interactive>(kInteractiveNames, field, text);
}

struct JobSpec {
  std::string name;
  std::vector<std::string> command;  // argv; with `shell`, command[0] runs under /bin/sh -c
  bool shell = false;
  Resources resources;
  Priority priority = Priority::kNormal;
  std::string project = "default";
  std::string pool = "default";
  Duration time_limit{0};  // 0 = none
  Duration grace_period = std::chrono::seconds(30);
  // The most output a node keeps of the job (its head and its tail, docs/operations.md "Job
  // output"); 0: its pool's, else the cluster's. At most the cluster's max_output_limit.
  int64_t output_limit = 0;
  int retries = 0;
  // Whether a job whose node is lost, whose GPU fails or that is preempted goes back to the
  // queue (true, as always before) or ends failed with why (false, Slurm's --no-requeue): a job
  // that must never run twice. Not with retries.
  bool requeue = true;
  // How many times it may be preempted (by the scheduler, or its spot node's reclaim notice)
  // and requeued; the next preemption ends it failed. Apart from `retries`: a preemption never
  // spends one. Unset: the policy's scheduling.max_preemptions, else no limit.
  std::optional<int> max_preemptions;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;
  std::vector<JobId> after;        // after-ok: each must succeed first
  std::vector<JobId> after_any;    // each must have ended, however
  std::vector<JobId> after_notok;  // each must have ended other than succeeded
  // As Slurm's --dependency=singleton: it starts only once every job of its user with the
  // same name submitted before it has ended (one at a time, in submit order).
  bool singleton = false;
  std::optional<TimePoint> begin;  // not before (Slurm's --begin)
  // A job array, as Slurm's --array: "0-99%8", "1,5,9", "0-20:5". One task (job) per index,
  // at most `%N` of them queued or running at once. Kept on every task as submitted.
  std::string array;
  // A sweep: one task of an array per parameter set (NAME -> VALUE). Each task gets its set as
  // environment variables, and "{NAME}" in its command words replaced by the value; `array`
  // may then only be a throttle ("%4"). Expanded at submit: tasks do not keep it.
  std::vector<std::vector<std::pair<std::string, std::string>>> sweep;
  // A recurring job, as a line of Slurm's scrontab: a cron schedule ("0 3 * * *", core/cron.h)
  // in the controller's local time. Each run is a job of its own, submitted when the one before
  // ends and waiting (reason schedule) for the next time the schedule names; `begin`, if
  // given, delays the first. Not with an array or a sweep.
  std::string schedule;
  Boxed<ModelSizing> model;  // sized from a model (gpus, gpu_memory filled at submit)
  // The Python environment it runs in, on its nodes: a virtual environment's directory (its
  // bin/ first on PATH, VIRTUAL_ENV set), or a conda environment's name or prefix (run through
  // `conda run`). A node without it fails the launch with the reason. Not both.
  std::string venv;
  std::string conda;
  // A snapshot of the submitter's code (`--code DIR`): the SHA-256 (64 hex digits) of the
  // archive the controller keeps (POST /v1/code). The job runs in its own copy of it on each
  // node, so edits after submit do not reach a queued job. "": none.
  std::string code;
  // A container image the job runs in (`--image`): through podman where its node has it
  // ("docker.io/pytorch/pytorch:2.3.0", "localhost/train:1"), else apptainer (also for a .sif
  // file's absolute path); its GPUs, its directory, working directory and checkpoint directory
  // mounted. A node with neither fails the launch with the reason. Not with venv or conda.
  std::string image;
  // A metric of its metrics file to track (`--best-metric loss:min`): its last value and its
  // best, with the checkpoint of the best. "": none.
  std::string best_metric;
  bool best_max = false;  // higher is better (":max"); else lower
  // Started by `baton run`: the first process's stdin comes from the attached client
  // (kStdin), or the job runs on a terminal of its own (kTty, `baton run -it`: one process on
  // one node) that clients attach to and detach from. kNone: a batch job (stdin is /dev/null).
  Interactive interactive = Interactive::kNone;
  // Whether it may be preempted, in Run:ai's meaning (docs/scheduling.md#preemptible-jobs): a
  // job that is not runs only within its project's guarantee (when the policy sets any), never
  // on a spot node, and is never preempted; a preemptible one may use any idle capacity and
  // spot nodes, and gives them back with notice. Unset: as chosen by Preemptible() (a batch job
  // is, a session is not).
  std::optional<bool> preemptible;
  bool hold = false;
  // One process per GPU (torchrun's nproc_per_node = GPUs), each with its LOCAL_RANK and RANK;
  // false: one process per node.
  bool process_per_gpu = false;
  // An earlier notice, as Slurm's --signal: signal number `signal` (0 = none) `signal_before`
  // ahead of the time limit (the job's or its pool's), then SIGTERM at the limit.
  int signal = 0;
  Duration signal_before{0};
  // Slurm's --signal=B:...: the notice goes to a batch script's shell alone. Without it a batch
  // script's notice (other than TERM, INT or HUP) goes to its steps, the tasks its srun starts,
  // as Slurm's does, and the shell runs on (docs/slurm.md).
  bool signal_shell = false;
  // A batch script, as sbatch runs one (`baton submit train.sh`): its command runs once, on the
  // first node of its allocation; the other nodes hold their share and run the tasks its `srun`
  // starts there. Not with process_per_gpu (srun starts the tasks) or interactive.
  bool batch = false;
  // Slurm's side of a job, for scripts written for Slurm: the SLURM_* variables, and `srun` and
  // `scontrol` on its PATH (its pool may turn this off). Set for batch scripts by the CLI.
  bool slurm_env = false;
  // Slurm's --output/--error: files the batch script's output is also written to, on its first
  // node, as its user; patterns with %j %A %a %x %u %N %%, relative to its working directory.
  // "": the job's log only; error_file "": its errors go with its output.
  std::string output_file;
  std::string error_file;
  // Slurm's --ntasks-per-node: the tasks `srun` starts on each node of a batch job; 0: one.
  int tasks_per_node = 0;
  // An allocation, as salloc makes (`baton alloc`): a batch job (with slurm_env) whose first node
  // runs no command of its own but serves, to its owner, the `srun` commands that
  // `baton run --in ID` sends over the job's step port; it holds its nodes until cancelled or
  // its time limit. Its command is what it runs ("baton-slurm --alloc-host").
  bool alloc = false;
  bool operator==(const JobSpec&) const = default;
};

// Whether `text` names a code snapshot: a SHA-256, 64 lowercase hex digits.
bool IsCodeId(std::string_view text);

// The sizing request of a job's model, on `shape` (its catalog entry, or ShapeFor(params)).
SizingRequest SizingRequestOf(const ModelSizing& m, ModelShape shape);

// A job array's indices and throttle: "0-99%8" (0 to 99, at most 8 at once), "1,5,9",
// "0-20:5" (0, 5, 10, 15, 20). Indices 0 to 1,000,000, at most SpecLimits::kMaxArrayTasks.
struct ArraySpec {
  std::vector<int> indices;  // sorted, each once
  int throttle = 0;          // 0: no limit
};
Result<ArraySpec> ParseArraySpec(std::string_view text, std::string_view field);
// "12" or, for task 7 of array 12, "12_7" (array_index < 0: the job id alone).
std::string TaskName(JobId id, int array_index);
// The indices and throttle of a spec's tasks: its sweep's sets (0..N-1, `array` a throttle
// "%N" or empty), else its array; none when it is neither.
Result<std::optional<ArraySpec>> TasksOf(const JobSpec& spec);
// Task `index` of a sweep: its parameter set in the environment and in "{NAME}" of its command.
JobSpec SweepTask(const JobSpec& spec, size_t index);

// A spec as a submit starts it: what it does not name is the default, and its nodes are left
// to the controller (Resources::nodes 0).
inline JobSpec SubmittedSpec() {
  JobSpec spec;
  spec.resources.nodes = 0;
  return spec;
}

// A job's notice signal, "SIG[@DURATION]" as Slurm's --signal takes it: a name (USR1 or
// SIGUSR1, any case) or a number, and how long before the time limit (default 60 s, as
// Slurm's), after Slurm's "B:" for a batch script's shell alone (JobSpec::signal_shell). Signals
// that cannot be caught (KILL, STOP) are refused.
struct NoticeSignal {
  int signal = 0;
  Duration before{0};
  bool shell = false;
};
Result<NoticeSignal> ParseNoticeSignal(std::string_view text, std::string_view field);
// "USR1@2m", "B:USR1@2m": what ParseNoticeSignal reads back; "" when `signal` is 0.
std::string FormatNoticeSignal(int signal, Duration before, bool shell = false);

// "loss:min", "accuracy:max", or a name alone (lower is better): the metric and whether
// higher is better.
Result<std::pair<std::string, bool>> ParseBestMetric(std::string_view text, std::string_view field);

// Checks every field against SpecLimits and the rules between fields; the message names the
// field ("resources.gpus: ...") so a user can fix the request.
// Whether a job of `spec` may be preempted: as chosen, else a batch job may and a session
// (`baton run`) may not.
inline bool Preemptible(const JobSpec& spec) {
  return spec.preemptible.value_or(spec.interactive == Interactive::kNone);
}

Status ValidateJobSpec(const JobSpec& spec);

// The GPUs a job holds on one node (milli_per_gpu is 1000 for whole GPUs), and how the
// job's process on that node fares.
struct NodeAllocation {
  std::string node;
  std::vector<int> gpus;
  int64_t milli_per_gpu = 1000;
  bool started = false;  // the agent reported the process started
  bool ended = false;    // the agent reported it ended, as below
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool lost = false;  // the node lost it (node failure): requeue, not fail
  // It never started there (no such user, refused, no working directory, no such program):
  // requeued elsewhere without spending a retry.
  bool launch_failed = false;
  // A fractional share's: what caps it on the node, as its agent said at the start: "mps" (the
  // GPU's MPS daemon) or "none" (only the job's CUDA_MPS_* variables); "" for whole GPUs.
  std::string gpu_sharing;
  bool operator==(const NodeAllocation&) const = default;
};

// A pending job's place in the queue: each factor in [0, 1] and the weighted score.
struct QueueFactors {
  double priority = 0;
  double fairshare = 0;
  double age = 0;
  double size = 0;
  double las = 0;  // least attained service: 1 in the first level, 0 in the last
  double score = 0;
  bool operator==(const QueueFactors&) const = default;
};

// A value of a job's tracked metric (JobSpec::best_metric), from a line of its metrics file.
struct MetricPoint {
  double value = 0;
  int64_t step = -1;       // the line's "step"; -1 when it had none
  std::string checkpoint;  // the line's checkpoint, else the latest one reported before it
  TimePoint at{};
  bool operator==(const MetricPoint&) const = default;
};

struct Job {
  JobId id;
  JobSpec spec;
  std::string user;
  JobState state = JobState::kPending;
  WaitReason reason = WaitReason::kNone;  // why pending/held
  std::string reason_detail;              // the same, in words a researcher understands
  int restarts = 0;                       // also the attempt number of the current run
  std::string last_requeue;  // why it last went back to pending ("preempted (priority) for job 9")
  int failures = 0;          // retries used: requeues after a failure (not after a lost node)
  int preemptions = 0;       // requeues after a preemption (JobSpec::max_preemptions)
  TimePoint submitted_at{};
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> finished_at;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  std::vector<NodeAllocation> allocation;
  bool launched = false;           // the agent confirmed the current attempt started
  bool stop_requested = false;     // cancel asked for while running; ends as cancelled
  bool preempt_requested = false;  // preempted while running; goes back to pending
  // A preemption under way (by the scheduler, or a spot node's reclaim notice; not a failed
  // GPU's stop): when its SIGKILL is due. Cleared when the attempt ends.
  std::optional<TimePoint> preempt_deadline;
  std::optional<TimePoint> last_checkpoint;  // the current attempt's last reported checkpoint
  std::optional<TimePoint> estimated_start;  // pending: the scheduler's estimate (not stored)
  // A queued job's place as the last pass that explained it saw it: the jobs ahead of it that
  // did not start (-1: none said), and when that pass ran. ReasonDetail adds them to
  // reason_detail in words when the job is read, so that a pass does not write hundreds of
  // sentences that change with every start ahead.
  int queue_ahead = -1;
  // The controller's small number for the job's (project, user) pair, given on its first
  // pass, that fair share counts by instead of comparing names; and its one copy of the
  // pool's name and of the project's, each shared by every job of the pool or project, that a
  // pass compares by address first.
  // A cache, not state: it is never stored, and two jobs that differ only in it are equal.
  struct AccountCache {
    mutable int32_t id = -1;
    mutable const std::string* pool = nullptr;
    mutable const std::string* project = nullptr;
    bool operator==(const AccountCache&) const { return true; }
  } account;
  TimePoint reason_at{};
  int64_t cost_micros = 0;           // cost of its ended attempts, in millionths of a currency unit
  int64_t cost_per_hour_micros = 0;  // the current (else the last) attempt's price per hour
  double gpu_seconds = 0;  // GPU-seconds its ended attempts ran (the running one not counted)
  int master_port = 0;     // multi-node or multi-process: the current attempt's MASTER_PORT
  // A batch job on several nodes: the port its nodes' step servers take `srun`'s tasks at, and
  // the secret srun shows them (made by the service at submit; kept in the store, never shown).
  int step_port = 0;
  std::string step_key;
  // A task of a job array: the array's id (its first task's) and this task's index.
  JobId array_id{0};
  int array_index = -1;
  // Nodes where it could not start, in order: it is not placed there again. The first
  // `launch_blamed` of them were counted against their nodes when it started elsewhere.
  std::vector<std::string> launch_failed_on;
  int launch_blamed = 0;
  // A run of a recurring job: the id of the series' first run (0: not recurring), and whether
  // the series stops with this run (its schedule deleted) instead of queueing the next.
  JobId cron_id{0};
  bool cron_stopped = false;
  // How submit sized it from its model ("Llama-3-8B finetune in bf16: 2 GPUs of 65.8GiB"); ""
  // when it named no model.
  std::string sized;
  // The tracked metric's latest value and its best, over all attempts.
  Boxed<MetricPoint> metric_last;
  Boxed<MetricPoint> metric_best;
  // Its ended attempts' GPU readings: the sum of each reading's mean utilisation (%), and how many.
  double utilization_sum = 0;
  int64_t utilization_samples = 0;
  bool operator==(const Job&) const = default;
};

// The words a pass adds to a waiting job's reason: "; 3 jobs ahead in the queue" (none for 0)
// and, with an estimate, "; expected start in ~1h (11:00 UTC)" (or "; expected to start now").
std::string QueueWords(int ahead, std::optional<TimePoint> estimated_start, TimePoint now);
// What a researcher reads as a job's reason: reason_detail, and for a job a pass explained
// (queue_ahead >= 0), its QueueWords as of that pass.
std::string ReasonDetail(const Job& job);

// A recurring job as `baton crons` lists it: its series (named by its first run's id), the run
// now waiting for its time or running, and the latest run that ended.
struct CronEntry {
  JobId id;
  int64_t runs = 0;  // runs so far, the current one included
  Job current;
  std::optional<Job> last;
};

}  // namespace baton
