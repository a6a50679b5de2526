#include "core/job.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <csignal>
#include <set>

#include "core/cron.h"
#include "core/names.h"
#include "core/node.h"

namespace baton {

namespace {
constexpr std::array<std::string_view, 4> kPriorityNames = {"low", "normal", "high", "critical"};
constexpr std::array<std::string_view, 7> kStateNames = {
    "pending", "held", "running", "succeeded", "failed", "cancelled", "timed_out"};
constexpr std::array<std::string_view, 9> kWaitReasonNames = {
    "",           "priority",   "resources",   "quota",   "held",
    "dependency", "begin_time", "array_limit", "schedule"};
constexpr std::array<std::string_view, 3> kPreemptReasonNames = {"priority", "quota", "service"};

Status FieldError(std::string_view field, std::string why) {
  return InvalidArgument(std::string(field) + ": " + why);
}

bool IsLabel(std::string_view s) {
  if (s.empty() || s.size() > SpecLimits::kLabelBytes) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

bool IsEnvKey(std::string_view k) {
  if (k.empty() || k.size() > SpecLimits::kEnvKeyBytes) return false;
  if (k[0] >= '0' && k[0] <= '9') return false;
  for (char c : k) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}
}  // namespace

std::string_view PriorityName(Priority p) { return kPriorityNames[static_cast<int>(p)]; }

Result<Priority> ParsePriority(std::string_view text) {
  for (size_t i = 0; i < kPriorityNames.size(); ++i) {
    if (text == kPriorityNames[i]) return static_cast<Priority>(i);
  }
  return Err(InvalidArgument("priority: must be one of low, normal, high, critical (got \"" +
                             std::string(text.substr(0, 32)) + "\")"));
}

std::string_view JobStateName(JobState s) { return kStateNames[static_cast<int>(s)]; }

Result<JobState> ParseJobState(std::string_view text) {
  for (size_t i = 0; i < kStateNames.size(); ++i) {
    if (text == kStateNames[i]) return static_cast<JobState>(i);
  }
  return Err(
      InvalidArgument("state: must be one of pending, held, running, succeeded, failed, "
                      "cancelled, timed_out (got \"" +
                      std::string(text.substr(0, 32)) + "\")"));
}

std::string_view WaitReasonName(WaitReason r) { return EnumName(kWaitReasonNames, r); }

Result<WaitReason> ParseWaitReason(std::string_view text) {
  return ParseEnum<WaitReason>(kWaitReasonNames, "reason", text);
}

std::string_view PreemptReasonName(PreemptReason r) { return EnumName(kPreemptReasonNames, r); }

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kTimedOut;
}

bool CanTransition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kPending:
      return to == S::kHeld || to == S::kRunning || to == S::kCancelled ||
             to == S::kFailed;  // failed: dependency can never be met
    case S::kHeld:
      return to == S::kPending || to == S::kCancelled;
    case S::kRunning:
      return to == S::kPending || to == S::kSucceeded || to == S::kFailed || to == S::kCancelled ||
             to == S::kTimedOut;
    default:
      return false;  // terminal states are final
  }
}

namespace {

// The steps of ValidateJobSpec, in the order it checks; each returns the first problem found.

Status ValidateNameAndCommand(const JobSpec& spec) {
  if (spec.name.size() > SpecLimits::kNameBytes) {
    return FieldError("name", "longer than " + std::to_string(SpecLimits::kNameBytes) + " bytes");
  }
  if (HasNul(spec.name)) return FieldError("name", "contains a NUL byte");
  if (spec.command.empty()) return FieldError("command", "must not be empty");
  if (spec.command.size() > SpecLimits::kCommandArgs) {
    return FieldError("command",
                      "more than " + std::to_string(SpecLimits::kCommandArgs) + " arguments");
  }
  if (spec.shell && spec.command.size() != 1) {
    return FieldError("command", "a shell command is a single string");
  }
  size_t command_bytes = 0;
  for (const auto& arg : spec.command) {
    command_bytes += arg.size();
    if (HasNul(arg)) return FieldError("command", "an argument contains a NUL byte");
  }
  if (spec.command[0].empty()) return FieldError("command", "the program name is empty");
  if (command_bytes > SpecLimits::kCommandBytes) {
    return FieldError("command",
                      "longer than " + std::to_string(SpecLimits::kCommandBytes) + " bytes");
  }
  return Status::Ok();
}

Status ValidateResources(const Resources& r) {
  if (r.milli_gpus < 0 || r.milli_gpus > SpecLimits::kMaxMilliGpus) {
    return FieldError("resources.gpus", "must be between 0 and 4096");
  }
  if (r.milli_gpus > 1000 && r.milli_gpus % 1000 != 0) {
    return FieldError("resources.gpus", "a fraction of a GPU is possible only below one GPU (got " +
                                            FormatMilli(r.milli_gpus) + ")");
  }
  if (r.nodes < 0 || r.nodes > SpecLimits::kMaxNodes) {
    return FieldError("resources.nodes", "must be between 1 and " +
                                             std::to_string(SpecLimits::kMaxNodes) +
                                             " (or 0: the fewest that hold the GPUs)");
  }
  if (r.nodes > 1) {
    if (r.milli_gpus % 1000 != 0 || (r.milli_gpus / 1000) % r.nodes != 0) {
      return FieldError("resources.gpus",
                        "must divide evenly across " + std::to_string(r.nodes) + " nodes");
    }
  }
  if (r.cpus < 0 || r.cpus > SpecLimits::kMaxCpus)
    return FieldError("resources.cpus", "must be between 0 and 100000");
  if (r.memory_bytes < 0 || r.memory_bytes > kMaxBytes)
    return FieldError("resources.memory", "out of range");
  if (r.gpu_memory_bytes < 0 || r.gpu_memory_bytes > kMaxBytes)
    return FieldError("resources.gpu_memory", "out of range");
  if (!r.gpu_type.empty() && !IsLabel(r.gpu_type)) {
    return FieldError("resources.gpu_type", "letters, digits, '-', '_' and '.' only, at most 64");
  }
  if ((r.gpu_memory_bytes > 0 || !r.gpu_type.empty()) && r.milli_gpus == 0) {
    return FieldError("resources.gpus", "a GPU type or memory needs at least some GPU");
  }
  for (const auto* list : {&r.nodelist, &r.exclude}) {
    const std::string field = list == &r.nodelist ? "resources.nodelist" : "resources.exclude";
    if (list->size() > static_cast<size_t>(SpecLimits::kMaxNodes))
      return FieldError(field, "at most " + std::to_string(SpecLimits::kMaxNodes) + " nodes");
    std::set<std::string_view> seen;
    for (const std::string& name : *list) {
      if (!IsValidNodeName(name)) {
        return FieldError(field, "\"" + name.substr(0, 64) +
                                     "\" is not a node name (letters, digits, '-', '_', '.')");
      }
      if (!seen.insert(name).second) return FieldError(field, name + " given twice");
    }
  }
  for (const std::string& name : r.nodelist) {
    if (std::find(r.exclude.begin(), r.exclude.end(), name) != r.exclude.end())
      return FieldError("resources.exclude", name + " is also in resources.nodelist");
  }
  if (r.nodes > 0 && static_cast<size_t>(r.nodes) < r.nodelist.size()) {
    return FieldError("resources.nodelist",
                      std::to_string(r.nodelist.size()) + " nodes named for a job of " +
                          std::to_string(r.nodes) + (r.nodes == 1 ? " node" : " nodes"));
  }
  return Status::Ok();
}

// Project, pool, time limit, grace period and retries.
Status ValidateAccountAndLimits(const JobSpec& spec) {
  if (!IsLabel(spec.project))
    return FieldError("project", "letters, digits, '-', '_' and '.' only, 1 to 64");
  if (!IsLabel(spec.pool))
    return FieldError("pool", "letters, digits, '-', '_' and '.' only, 1 to 64");
  if (spec.time_limit < Duration(0) || spec.time_limit > kMaxDuration)
    return FieldError("time_limit", "out of range");
  if (spec.grace_period < Duration(0) || spec.grace_period > std::chrono::hours(1)) {
    return FieldError("grace_period", "must be between 0 and 1h");
  }
  if (spec.signal != 0 && spec.time_limit.count() > 0 && spec.signal_before >= spec.time_limit) {
    return FieldError("signal", FormatDuration(spec.signal_before) +
                                    " before the time limit is no earlier than the start (" +
                                    "time limit " + FormatDuration(spec.time_limit) + ")");
  }
  if (spec.retries < 0 || spec.retries > SpecLimits::kMaxRetries) {
    return FieldError("retries",
                      "must be between 0 and " + std::to_string(SpecLimits::kMaxRetries));
  }
  if (!spec.requeue && spec.retries > 0) {
    return FieldError("retries", "a job that is never requeued (requeue: false) has no retries");
  }
  if (spec.max_preemptions &&
      (*spec.max_preemptions < 0 || *spec.max_preemptions > SpecLimits::kMaxPreemptions)) {
    return FieldError("max_preemptions",
                      "must be between 0 and " + std::to_string(SpecLimits::kMaxPreemptions));
  }
  return Status::Ok();
}

Status ValidateEnv(const JobSpec& spec) {
  if (spec.env.size() > SpecLimits::kEnvVars) {
    return FieldError("env", "more than " + std::to_string(SpecLimits::kEnvVars) + " variables");
  }
  size_t env_bytes = 0;
  std::set<std::string_view> keys;
  for (const auto& [k, v] : spec.env) {
    if (!IsEnvKey(k))
      return FieldError("env", "\"" + k.substr(0, 64) + "\" is not a valid variable name");
    if (!keys.insert(k).second) return FieldError("env", "\"" + k + "\" given twice");
    if (HasNul(v)) return FieldError("env." + k, "contains a NUL byte");
    if (k.starts_with("BATON_")) return FieldError("env." + k, "BATON_ variables are set by Baton");
    env_bytes += k.size() + v.size();
  }
  if (env_bytes > SpecLimits::kEnvBytes) {
    return FieldError("env", "larger than " + std::to_string(SpecLimits::kEnvBytes) + " bytes");
  }
  return Status::Ok();
}

Status ValidateEnvironment(const JobSpec& spec) {
  if (spec.venv.size() > SpecLimits::kPathBytes || HasNul(spec.venv))
    return FieldError("venv", "too long or contains a NUL byte");
  if (!spec.venv.empty() && spec.venv[0] != '/')
    return FieldError("venv", "must be an absolute path (the environment's directory)");
  if (spec.conda.size() > SpecLimits::kPathBytes || HasNul(spec.conda))
    return FieldError("conda", "too long or contains a NUL byte");
  if (!spec.conda.empty() && spec.conda[0] != '/' &&
      !std::all_of(spec.conda.begin(), spec.conda.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      })) {
    return FieldError("conda", "an environment's name (letters, digits, _ - .) or its prefix path");
  }
  if (!spec.best_metric.empty() &&
      (spec.best_metric.size() > 64 ||
       !std::all_of(spec.best_metric.begin(), spec.best_metric.end(), [](char c) {
         return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
                c == '/';
       }))) {
    return FieldError("best_metric", "a metric's name of at most 64 letters, digits, _ - . /");
  }
  if (!spec.venv.empty() && !spec.conda.empty())
    return FieldError("conda", "a job runs in a venv or a conda environment, not both");
  if (!spec.image.empty()) {
    if (spec.image.size() > 512 ||
        std::any_of(spec.image.begin(), spec.image.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == 0; }) ||
        spec.image[0] == '-')
      return FieldError("image", "an image's name (no spaces, at most 512 bytes) or a .sif path");
    if (!spec.venv.empty() || !spec.conda.empty())
      return FieldError("image", "a job runs in an image or a venv or conda environment, not two");
  }
  if (!spec.code.empty()) {
    if (!IsCodeId(spec.code))
      return FieldError("code", "a code snapshot's id: 64 lowercase hex digits (POST /v1/code)");
    if (!spec.workdir.empty())
      return FieldError("code", "the job runs in its copy of the code: not with workdir");
  }
  return Status::Ok();
}

}  // namespace

bool IsCodeId(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

namespace {

// `baton run`'s jobs: one job, and a terminal only for one process on one node.
Status ValidateInteractive(const JobSpec& spec) {
  if (spec.interactive == Interactive::kNone) return Status::Ok();
  if (!spec.array.empty() || !spec.sweep.empty() || !spec.schedule.empty())
    return FieldError("interactive", "a session is one job: not an array, sweep or schedule");
  if (spec.interactive == Interactive::kTty && (spec.resources.nodes > 1 || spec.process_per_gpu))
    return FieldError("interactive", "a terminal is for one process on one node");
  return Status::Ok();
}

Status ValidateBatch(const JobSpec& spec) {
  for (const auto& [field, path] :
       {std::pair{"output_file", &spec.output_file}, std::pair{"error_file", &spec.error_file}}) {
    if (path->size() > SpecLimits::kPathBytes || HasNul(*path))
      return FieldError(field, "too long or contains a NUL byte");
    if (!path->empty() && !spec.batch)
      return FieldError(field, "is a batch script's (batch: true), as sbatch's --output");
  }
  if (spec.tasks_per_node < 0 || spec.tasks_per_node > SpecLimits::kMaxTasksPerNode)
    return FieldError("tasks_per_node", "from 0 to 1024");
  if (spec.alloc && (!spec.batch || !spec.slurm_env))
    return FieldError("alloc", "an allocation is a batch job with slurm_env (baton alloc)");
  if (spec.alloc && (!spec.array.empty() || !spec.sweep.empty() || !spec.schedule.empty()))
    return FieldError("alloc", "an allocation is one job: not an array, a sweep or recurring");
  if (!spec.batch) return Status::Ok();
  if (spec.process_per_gpu)
    return FieldError("batch", "a batch script starts its tasks with srun, not process_per_gpu");
  if (spec.interactive != Interactive::kNone)
    return FieldError("batch", "a batch script is not an interactive session");
  if (!spec.image.empty())
    return FieldError("batch",
                      "a batch script does not run in a container image (yet): its "
                      "srun runs on the node");
  return Status::Ok();
}

Status ValidateWorkdirAndAfter(const JobSpec& spec) {
  if (spec.workdir.size() > SpecLimits::kPathBytes || HasNul(spec.workdir)) {
    return FieldError("workdir", "too long or contains a NUL byte");
  }
  if (!spec.workdir.empty() && spec.workdir[0] != '/')
    return FieldError("workdir", "must be an absolute path");
  for (const auto& [field, ids] :
       {std::pair{"after", &spec.after}, std::pair{"after_any", &spec.after_any},
        std::pair{"after_notok", &spec.after_notok}}) {
    if (ids->size() > SpecLimits::kMaxAfter) return FieldError(field, "more than 256 dependencies");
    for (JobId id : *ids) {
      if (id.value <= 0) return FieldError(field, "job ids are positive integers");
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Signals a job may ask for as its notice: those whose default action a handler replaces.
struct SignalName {
  std::string_view name;
  int number;
};
constexpr SignalName kNoticeSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CONT", SIGCONT},
    {"URG", SIGURG},   {"XCPU", SIGXCPU}, {"WINCH", SIGWINCH}, {"PWR", SIGPWR},
};

std::optional<int> NoticeSignalNumber(std::string_view text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view name = upper;
  if (name.starts_with("SIG")) name.remove_prefix(3);
  for (const SignalName& s : kNoticeSignals) {
    if (s.name == name) return s.number;
  }
  if (name.empty() || name.size() > 2 ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int n = std::stoi(std::string(name));
  for (const SignalName& s : kNoticeSignals) {
    if (s.number == n) return n;
  }
  return std::nullopt;
}

}  // namespace

Result<NoticeSignal> ParseNoticeSignal(std::string_view text, std::string_view field) {
  const bool shell = text.starts_with("B:");
  if (shell) text.remove_prefix(2);
  size_t at = text.find('@');
  std::string_view sig = text.substr(0, at);
  std::optional<int> number = NoticeSignalNumber(sig);
  if (!number) {
    return Err(FieldError(field, "\"" + std::string(sig.substr(0, 16)) +
                                     "\" is no signal a job can catch (use e.g. USR1, USR2, "
                                     "INT, HUP or TERM; KILL and STOP cannot be caught)"));
  }
  NoticeSignal out{.signal = *number, .before = std::chrono::seconds(60), .shell = shell};
  if (at != std::string_view::npos) {
    auto before = ParseDuration(text.substr(at + 1), field);
    if (!before) return Err(before.error());
    if (*before <= Duration(0) || *before > std::chrono::hours(24))
      return Err(FieldError(field, "the time after @ must be between 1s and 24h"));
    out.before = *before;
  }
  return out;
}

SizingRequest SizingRequestOf(const ModelSizing& m, ModelShape shape) {
  return SizingRequest{.model = std::move(shape),
                       .task = m.task,
                       .precision = m.precision,
                       .seq = m.seq,
                       .batch = m.batch,
                       .optimizer = m.optimizer,
                       .zero = m.zero,
                       .checkpointing = m.checkpointing};
}

Result<std::pair<std::string, bool>> ParseBestMetric(std::string_view text,
                                                     std::string_view field) {
  size_t colon = text.rfind(':');
  std::string name(text.substr(0, colon));
  std::string_view goal = colon == std::string_view::npos ? "min" : text.substr(colon + 1);
  if (goal != "min" && goal != "max")
    return Err(FieldError(field, "\"" + std::string(text.substr(0, 80)) +
                                     "\": NAME:min (lower is better) or NAME:max"));
  if (name.empty()) return Err(FieldError(field, "names no metric (e.g. loss:min)"));
  return std::pair{name, goal == "max"};
}

std::string FormatNoticeSignal(int signal, Duration before, bool shell) {
  if (signal == 0) return "";
  std::string name = std::to_string(signal);
  for (const SignalName& s : kNoticeSignals) {
    if (s.number == signal) name = s.name;
  }
  return (shell ? "B:" : "") + name + "@" + FormatDuration(before);
}

Status ValidateJobSpec(const JobSpec& spec) {
  RETURN_IF_ERROR(ValidateNameAndCommand(spec));
  RETURN_IF_ERROR(ValidateResources(spec.resources));
  RETURN_IF_ERROR(ValidateAccountAndLimits(spec));
  RETURN_IF_ERROR(ValidateEnv(spec));
  for (const auto& set : spec.sweep) {
    if (set.size() > SpecLimits::kMaxSweepParams)
      return FieldError("sweep", "more than 64 parameters in a set");
    for (const auto& [k, v] : set) {
      if (!IsEnvKey(k) || k.rfind("BATON_", 0) == 0)
        return FieldError("sweep", "\"" + k.substr(0, 64) + "\" is not a variable name");
      if (v.size() > SpecLimits::kPathBytes || HasNul(v))
        return FieldError("sweep", "the value of " + k + " is too long or has a NUL byte");
    }
  }
  if (auto tasks = TasksOf(spec); !tasks) return tasks.error();
  if (spec.model) {
    const ModelSizing& m = *spec.model;
    if (m.name.empty() == (m.params == 0))
      return FieldError("model",
                        "name a model (name) or its parameter count (params), one of them");
    if (m.name.size() > SpecLimits::kLabelBytes || HasNul(m.name))
      return FieldError("model.name", "longer than 64 bytes or contains a NUL byte");
    // The shape is checked at submit, where the catalog is known; here the rest.
    SizingRequest r = SizingRequestOf(m, m.name.empty() ? ShapeFor(m.params) : ShapeFor(7e9));
    if (Status st = ValidateSizing(r); !st.ok()) return FieldError("model", st.message());
  }
  if (!spec.schedule.empty()) {
    if (spec.schedule.size() > SpecLimits::kScheduleBytes || HasNul(spec.schedule))
      return FieldError("schedule", "longer than 256 bytes or contains a NUL byte");
    if (auto cron = ParseCron(spec.schedule, "schedule"); !cron) return cron.error();
    if (!spec.array.empty() || !spec.sweep.empty())
      return FieldError("schedule", "a recurring job cannot be an array or a sweep");
  }
  RETURN_IF_ERROR(ValidateEnvironment(spec));
  RETURN_IF_ERROR(ValidateInteractive(spec));
  RETURN_IF_ERROR(ValidateBatch(spec));
  return ValidateWorkdirAndAfter(spec);
}

Result<std::optional<ArraySpec>> TasksOf(const JobSpec& spec) {
  if (spec.sweep.empty()) {
    if (spec.array.empty()) return std::optional<ArraySpec>();
    ASSIGN_OR_RETURN(ArraySpec a, ParseArraySpec(spec.array, "array"));
    return std::optional<ArraySpec>(std::move(a));
  }
  if (spec.sweep.size() > SpecLimits::kMaxArrayTasks)
    return Err(FieldError("sweep", "more than 10000 parameter sets"));
  ArraySpec out;
  if (!spec.array.empty()) {
    // A throttle only: "%4".
    auto throttle = spec.array[0] == '%' ? ParseArraySpec("0" + spec.array, "array")
                                         : Result<ArraySpec>(Err(InvalidArgument("")));
    if (!throttle) {
      return Err(FieldError("array",
                            "with a sweep, only a throttle such as \"%4\" (the sweep "
                            "names the tasks)"));
    }
    out.throttle = throttle->throttle;
  }
  for (size_t i = 0; i < spec.sweep.size(); ++i) out.indices.push_back(static_cast<int>(i));
  return std::optional<ArraySpec>(std::move(out));
}

JobSpec SweepTask(const JobSpec& spec, size_t index) {
  JobSpec task = spec;
  task.sweep.clear();
  task.array = "0-" + std::to_string(spec.sweep.size() - 1) + spec.array;
  for (const auto& [k, v] : spec.sweep.at(index)) {
    std::erase_if(task.env, [&](const auto& e) { return e.first == k; });
    task.env.emplace_back(k, v);
    const std::string mark = "{" + k + "}";
    for (std::string& word : task.command) {
      for (size_t at = word.find(mark); at != std::string::npos; at = word.find(mark, at)) {
        word.replace(at, mark.size(), v);
        at += v.size();
      }
    }
  }
  return task;
}

std::string TaskName(JobId id, int array_index) {
  return id.ToString() + (array_index >= 0 ? "_" + std::to_string(array_index) : "");
}

Result<ArraySpec> ParseArraySpec(std::string_view text, std::string_view field) {
  auto bad = [&](std::string why) {
    return Err(InvalidArgument(std::string(field) + ": \"" + std::string(text.substr(0, 64)) +
                               "\" " + why + " (e.g. 0-99%8, 1,5,9 or 0-20:5)"));
  };
  auto number = [](std::string_view s, long* out) {
    if (s.empty() || s.size() > 9) return false;
    long v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  ArraySpec out;
  std::string_view list = text;
  if (size_t pct = text.find('%'); pct != std::string_view::npos) {
    long n = 0;
    if (!number(text.substr(pct + 1), &n) || n < 1) return bad("has a bad throttle after %");
    out.throttle = static_cast<int>(std::min<long>(n, SpecLimits::kMaxArrayTasks));
    list = text.substr(0, pct);
  }
  if (list.empty()) return bad("names no index");
  std::set<int> indices;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (comma != std::string_view::npos && list.empty()) return bad("ends with a comma");
    long step = 1;
    if (size_t colon = item.find(':'); colon != std::string_view::npos) {
      if (!number(item.substr(colon + 1), &step) || step < 1) return bad("has a bad step");
      item = item.substr(0, colon);
    }
    long lo = 0, hi = 0;
    size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      if (!number(item, &lo)) return bad("is not a list of indices and ranges");
      hi = lo;
    } else if (!number(item.substr(0, dash), &lo) || !number(item.substr(dash + 1), &hi) ||
               hi < lo) {
      return bad("is not a list of indices and ranges");
    }
    if (hi > SpecLimits::kMaxArrayIndex)
      return bad("has an index over " + std::to_string(SpecLimits::kMaxArrayIndex));
    for (long i = lo; i <= hi; i += step) {
      indices.insert(static_cast<int>(i));
      if (indices.size() > SpecLimits::kMaxArrayTasks)
        return bad("has more than " + std::to_string(SpecLimits::kMaxArrayTasks) + " tasks");
    }
  }
  out.indices.assign(indices.begin(), indices.end());
  return out;
}

std::string QueueWords(int ahead, std::optional<TimePoint> estimated_start, TimePoint now) {
  std::string words;
  if (ahead > 0)
    words = "; " + std::to_string(ahead) + (ahead == 1 ? " job" : " jobs") + " ahead in the queue";
  if (!estimated_start) return words;
  if (*estimated_start <= now) return words + "; expected to start now";
  // Rounded up to the second: "in ~0s" would read as now.
  auto wait = std::chrono::duration_cast<std::chrono::seconds>(*estimated_start - now +
                                                               std::chrono::milliseconds(999));
  // The time of day, with the date when it is not today's (UTC): "(20:53 UTC)",
  // "(2026-11-29 20:53 UTC)".
  std::string at = FormatRfc3339(*estimated_start);
  bool today = at.substr(0, 10) == FormatRfc3339(now).substr(0, 10);
  return words + "; expected start in ~" + FormatDuration(wait) + " (" +
         (today ? "" : at.substr(0, 10) + " ") + at.substr(11, 5) + " UTC)";
}

std::string ReasonDetail(const Job& job) {
  if (job.queue_ahead < 0) return job.reason_detail;
  return job.reason_detail + QueueWords(job.queue_ahead, job.estimated_start, job.reason_at);
}

}  // namespace baton
