#include "cli/spec_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <sstream>
#include <tuple>

#include "cli/parser.h"
#include "cli/sbatch.h"
#include "cli/submit.h"
#include "core/hostlist.h"
#include "core/quantity.h"
#include "core/text.h"

namespace baton::cli {

bool LooksLikeShell(const std::vector<std::string>& cmd) {
  if (cmd.size() != 1) return false;
  return cmd[0].find_first_of(" \t;|&$<>(){}*?`'\"\n") != std::string::npos;
}

namespace {

// A memory size typed on the command line: a number alone is MiB, as Slurm's --mem reads it
// (`--memory 4000` is 4000 MiB, never 4000 bytes).
Result<int64_t> ParseMemoryFlag(std::string text, std::string_view flag) {
  if (!text.empty() && text.find_first_not_of("0123456789.") == std::string::npos) text += "MiB";
  return ParseSize(text, flag);
}

// Slurm's sizes per node, per task, per GPU and per CPU, in the job's totals: --gpus-per-node
// [TYPE:]N (N x its nodes, one unless given), --gpus-per-task, --ntasks, --ntasks-per-node,
// --cpus-per-task, --mem-per-gpu, --mem-per-cpu.
Status ApplyPerNodeFlags(const SubmitFlags& f, const std::set<std::string>* given, JobSpec* spec) {
  auto use = [&](const char* flag) { return given == nullptr || given->count(flag) > 0; };
  Resources& r = spec->resources;
  auto nodes = [&] { return std::max(r.nodes, 1); };
  if (use("--ntasks") && f.ntasks > 0) spec->tasks_per_node = (f.ntasks + nodes() - 1) / nodes();
  if (use("--ntasks-per-node") && f.tasks_per_node > 0) spec->tasks_per_node = f.tasks_per_node;
  std::string gres;
  if (use("--gres") && !f.gres.empty()) {
    ASSIGN_OR_RETURN(gres, GresGpus(f.gres));
  }
  for (const auto& [flag, text, per] :
       {std::tuple{"--gres", &std::as_const(gres), 1},
        std::tuple{"--gpus-per-node", &f.gpus_per_node, 1},
        std::tuple{"--gpus-per-task", &f.gpus_per_task, std::max(spec->tasks_per_node, 1)}}) {
    if (!use(flag) || text->empty()) continue;
    std::string count = *text;
    if (size_t colon = count.rfind(':'); colon != std::string::npos) {
      r.gpu_type = count.substr(0, colon);
      count = count.substr(colon + 1);
    }
    ASSIGN_OR_RETURN(int64_t milli, ParseMilli(count, flag, SpecLimits::kMaxMilliGpus));
    if (r.nodes == 0) r.nodes = 1;
    r.milli_gpus = milli * per * r.nodes;
  }
  if (use("--cpus-per-task") && f.cpus_per_task > 0)
    r.cpus = f.cpus_per_task * std::max(spec->tasks_per_node, 1);
  if (use("--mem-per-gpu") && !f.mem_per_gpu.empty()) {
    ASSIGN_OR_RETURN(int64_t each, ParseMemoryFlag(f.mem_per_gpu, "--mem-per-gpu"));
    r.memory_bytes = each * std::max<int64_t>(1, r.milli_gpus / 1000 / nodes());
  }
  if (use("--mem-per-cpu") && !f.mem_per_cpu.empty()) {
    ASSIGN_OR_RETURN(int64_t each, ParseMemoryFlag(f.mem_per_cpu, "--mem-per-cpu"));
    r.memory_bytes = each * std::max(r.cpus, 1);
  }
  return Status::Ok();
}

Status ApplyResourceFlags(const SubmitFlags& f, const std::set<std::string>* given, JobSpec* spec) {
  auto use = [&](const char* flag) { return given == nullptr || given->count(flag) > 0; };
  if (use("--gpus")) {
    if (f.gpus.starts_with("-")) {
      return InvalidArgument("--gpus: GPUs must be positive, or 0 for a job without GPUs (got \"" +
                             f.gpus.substr(0, 32) + "\")");
    }
    ASSIGN_OR_RETURN(spec->resources.milli_gpus,
                     ParseMilli(f.gpus, "--gpus", SpecLimits::kMaxMilliGpus));
  }
  if (use("--gpu-type")) spec->resources.gpu_type = f.gpu_type;
  if (use("--gpu-memory") && !f.gpu_memory.empty()) {
    ASSIGN_OR_RETURN(spec->resources.gpu_memory_bytes,
                     ParseMemoryFlag(f.gpu_memory, "--gpu-memory"));
  }
  if (use("--memory") && !f.memory.empty()) {
    ASSIGN_OR_RETURN(spec->resources.memory_bytes, ParseMemoryFlag(f.memory, "--memory"));
  }
  if (use("--nodes")) spec->resources.nodes = f.nodes;
  if (use("--cpus")) spec->resources.cpus = f.cpus;
  if (use("--exclusive")) spec->resources.exclusive = f.exclusive;
  for (const char* flag : {"--nodelist", "--exclude"}) {
    const bool named = std::string_view(flag) == "--nodelist";
    if (!use(flag)) continue;
    const std::string& text = named ? f.nodelist : f.exclude;
    std::vector<std::string>& names = named ? spec->resources.nodelist : spec->resources.exclude;
    names.clear();
    if (text.empty()) continue;
    auto expanded = ExpandHostList(text, SpecLimits::kMaxNodes);
    if (!expanded) return InvalidArgument(std::string(flag) + ": " + expanded.error().message());
    names = std::move(*expanded);
  }
  return ApplyPerNodeFlags(f, given, spec);
}

Status ApplyTimeFlags(const SubmitFlags& f, const std::set<std::string>* given, JobSpec* spec) {
  auto use = [&](const char* flag) { return given == nullptr || given->count(flag) > 0; };
  if (use("--time") && !f.time.empty()) {
    // A number alone is minutes, as Slurm's --time reads it (the API's is seconds).
    bool minutes = f.time.find_first_not_of("0123456789") == std::string::npos;
    ASSIGN_OR_RETURN(spec->time_limit, ParseDuration(minutes ? f.time + "m" : f.time, "--time"));
  }
  if (use("--signal") && !f.signal.empty()) {
    ASSIGN_OR_RETURN(NoticeSignal notice, ParseNoticeSignal(f.signal, "--signal"));
    spec->signal = notice.signal;
    spec->signal_before = notice.before;
    spec->signal_shell = notice.shell;
  }
  if (use("--grace") && !f.grace.empty()) {
    ASSIGN_OR_RETURN(spec->grace_period, ParseDuration(f.grace, "--grace"));
  }
  if (use("--output-limit") && !f.output_limit.empty()) {
    ASSIGN_OR_RETURN(spec->output_limit, ParseSize(f.output_limit, "--output-limit"));
  }
  return Status::Ok();
}

// --model NAME or --params 7B, with --task, --precision, --seq, --batch: a spec sized from
// the model (the controller fills the GPUs and GPU memory not given).
Status ApplyModelFlags(const SubmitFlags& f, const std::set<std::string>* given, JobSpec* spec) {
  auto use = [&](const char* flag) { return given == nullptr || given->count(flag) > 0; };
  bool named = (use("--model") && !f.model.empty()) || (use("--params") && !f.params.empty());
  if (!named && !spec->model) {
    for (const char* flag : {"--task", "--precision", "--seq", "--batch"}) {
      if (f.given.count(flag) > 0) {
        return InvalidArgument(std::string(flag) +
                               ": sizes a job from its model: give --model NAME or --params 7B "
                               "too");
      }
    }
    return Status::Ok();
  }
  ModelSizing m = spec->model.value_or(ModelSizing{});
  if (use("--model") && !f.model.empty()) {
    m.name = f.model;
    m.params = 0;
  }
  if (use("--params") && !f.params.empty()) {
    ASSIGN_OR_RETURN(m.params, ParseParams(f.params, "--params"));
    m.name.clear();
  }
  if (!f.model.empty() && !f.params.empty() && use("--model") && use("--params"))
    return InvalidArgument("--model and --params: one or the other");
  if (use("--task") && !f.task.empty()) {
    ASSIGN_OR_RETURN(m.task, ParseModelTask(f.task, "--task"));
  }
  if (use("--precision") && !f.precision.empty()) {
    ASSIGN_OR_RETURN(m.precision, ParsePrecision(f.precision, "--precision"));
  }
  if (use("--seq") && f.seq > 0) m.seq = f.seq;
  if (use("--batch") && f.batch > 0) m.batch = f.batch;
  spec->model = m;
  return Status::Ok();
}

}  // namespace

Status ApplyFlags(const SubmitFlags& f, const std::set<std::string>* given, JobSpec* spec) {
  auto use = [&](const char* flag) { return given == nullptr || given->count(flag) > 0; };
  RETURN_IF_ERROR(ApplyResourceFlags(f, given, spec));
  RETURN_IF_ERROR(ApplyTimeFlags(f, given, spec));
  RETURN_IF_ERROR(ApplyModelFlags(f, given, spec));
  if (use("--priority")) {
    ASSIGN_OR_RETURN(spec->priority, ParsePriority(f.priority));
  }
  if (use("--project")) spec->project = f.project;
  if (use("--pool")) spec->pool = f.pool;
  if (use("--name")) spec->name = f.name;
  if (use("--retries")) spec->retries = f.retries;
  if (use("--max-preemptions") && f.max_preemptions != SubmitFlags::kNotGiven)
    spec->max_preemptions = f.max_preemptions;
  if (use("--env")) {
    for (const std::string& kv : f.env) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return InvalidArgument("--env: expected KEY=VALUE, got \"" + kv + "\"");
      std::erase_if(spec->env, [&](const auto& e) { return e.first == kv.substr(0, eq); });
      spec->env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  // With --code the job runs in its copy of the code, not in a directory of the node.
  if (!f.code.empty() && f.given.count("--workdir") > 0) {
    return InvalidArgument("--code: the job runs in its copy of the code: not with workdir");
  }
  if (use("--workdir") && (f.code.empty() || f.given.count("--workdir") > 0))
    spec->workdir = f.workdir.empty() ? std::filesystem::current_path().string() : f.workdir;
  if (!f.code.empty() && !f.given.count("--workdir")) spec->workdir.clear();
  for (const auto& [flag, from, to] :
       {std::tuple{"--after", &f.after, &spec->after},
        std::tuple{"--after-any", &f.after_any, &spec->after_any},
        std::tuple{"--after-notok", &f.after_notok, &spec->after_notok}}) {
    if (!use(flag)) continue;
    to->clear();
    for (int64_t id : *from) to->push_back(JobId{id});
  }
  if (use("--singleton")) spec->singleton = f.singleton;
  if (use("--dependency") && !f.dependency.empty()) {
    // Slurm's -d: its lists replace those given with --after, --after-any, --after-notok.
    ASSIGN_OR_RETURN(std::vector<std::string> words, Dependencies(f.dependency));
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i] == "--singleton") {
        spec->singleton = true;
        continue;
      }
      auto& to = words[i] == "--after"       ? spec->after
                 : words[i] == "--after-any" ? spec->after_any
                                             : spec->after_notok;
      std::stringstream ids(words[++i]);
      for (std::string id; std::getline(ids, id, ',');) to.push_back(JobId{std::stoll(id)});
    }
  }
  if (use("--array")) spec->array = f.array;
  if (use("--schedule")) spec->schedule = f.schedule;
  if (use("--venv")) {
    // Relative to where `baton submit` runs, as --workdir's default is.
    spec->venv = f.venv.empty() || f.venv[0] == '/'
                     ? f.venv
                     : (std::filesystem::current_path() / f.venv).lexically_normal().string();
    if (spec->venv.size() > 1 && spec->venv.back() == '/') spec->venv.pop_back();
  }
  if (use("--conda")) spec->conda = f.conda;
  if (use("--image")) spec->image = f.image;
  if (use("--best-metric")) {
    spec->best_metric.clear();
    if (!f.best_metric.empty()) {
      ASSIGN_OR_RETURN(auto tracked, ParseBestMetric(f.best_metric, "--best-metric"));
      std::tie(spec->best_metric, spec->best_max) = tracked;
    }
  }
  if (use("--begin") && !f.begin.empty()) {
    ASSIGN_OR_RETURN(
        spec->begin,
        ParseBeginTime(f.begin,
                       std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()),
                       "--begin"));
  }
  // Neither: as the job's kind chooses (a batch job is preemptible, a session is not). A typed
  // `--preemptible=false` is `--no-preemptible` (and `--no-preemptible=false` `--preemptible`).
  auto typed = [&](const char* flag) { return use(flag) && f.given.count(flag) > 0; };
  if (typed("--preemptible") || (use("--preemptible") && f.preemptible))
    spec->preemptible = f.preemptible;
  if (typed("--no-preemptible") || (use("--no-preemptible") && f.no_preemptible))
    spec->preemptible = !f.no_preemptible;
  if (use("--process-per-gpu")) spec->process_per_gpu = f.process_per_gpu;
  if (use("--hold")) spec->hold = f.hold;
  if (use("--requeue")) spec->requeue = f.requeue;
  if (use("--output")) spec->output_file = f.output;
  if (use("--error")) spec->error_file = f.error;
  if (use("--batch-script") && f.batch_script) spec->batch = spec->slurm_env = true;
  return Status::Ok();
}

Result<JobSpec> SpecFromFlags(const SubmitFlags& f, std::vector<std::string> command) {
  JobSpec spec = SubmittedSpec();
  RETURN_IF_ERROR(ApplyFlags(f, nullptr, &spec));
  if (command.empty())
    return Err(InvalidArgument(
        "no command: use `baton submit [OPTIONS] -- COMMAND [ARGS...]` or -f FILE"));
  spec.shell = LooksLikeShell(command);
  spec.command = std::move(command);
  if (spec.name.empty())
    spec.name = std::filesystem::path(spec.shell ? "sh" : spec.command[0]).filename().string();
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  return spec;
}

namespace {

// Whether `fn` is true of one of CLI11's names of an option ("-g,--gpus,-G"), each without a
// negation's '!'; in order, up to the first it is true of.
template <typename Fn>
bool AnyName(std::string_view names, Fn fn) {
  for (;;) {
    size_t comma = names.find(',');
    std::string_view name = names.substr(0, comma);
    if (name.starts_with('!')) name.remove_prefix(1);
    if (fn(name)) return true;
    if (comma == std::string_view::npos) return false;
    names.remove_prefix(comma + 1);
  }
}

// The first long name among CLI11's `names` ("--gpus" of "-g,--gpus,-G"), a view of them.
std::string_view FirstLongName(std::string_view names) {
  std::string_view first;
  AnyName(names, [&](std::string_view name) {
    if (name.starts_with("--")) first = name;
    return !first.empty();
  });
  return first;
}

// Adds the spec flags a FlagFilter wants, each to the section being written (an option group,
// made with its first flag built), and every spec flag's long name to f.spec_names, for
// NoteGiven and for a typo's closest flag. `then` sets what else a built option needs.
class SpecFlagAdder {
 public:
  using Then = std::function<void(CLI::Option*)>;
  SpecFlagAdder(CLI::App* sub, const FlagFilter& filter, SubmitFlags& f)
      : sub_(sub), filter_(filter), f_(f) {}
  void Section(const char* title) {
    title_ = title;
    group_ = nullptr;
  }
  template <typename T>
  CLI::Option* Option(const char* names, T& value, const char* description, const Then& then = {}) {
    CLI::App* group = GroupFor(names);
    return group != nullptr ? Built(group->add_option(names, value, description), then) : nullptr;
  }
  template <typename T>
  CLI::Option* Flag(const char* names, T& value, const char* description, const Then& then = {}) {
    CLI::App* group = GroupFor(names);
    return group != nullptr ? Built(group->add_flag(names, value, description), then) : nullptr;
  }

 private:
  static CLI::Option* Built(CLI::Option* o, const Then& then) {
    if (then) then(o);
    return o;
  }
  CLI::App* GroupFor(const char* names) {
    f_.spec_names.push_back(FirstLongName(names));  // a view of the literal
    if (!filter_.Wants(names)) return nullptr;
    if (group_ == nullptr) group_ = sub_->add_option_group(title_);
    return group_;
  }

  CLI::App* sub_;
  const FlagFilter& filter_;
  SubmitFlags& f_;
  const char* title_ = "Options";
  CLI::App* group_ = nullptr;
};

}  // namespace

FlagFilter FlagFilter::Of(const std::vector<std::string>& words) {
  FlagFilter filter;
  filter.all_ = false;
  for (const std::string& w : words) {
    if (w.size() < 2 || w[0] != '-') continue;
    if (w[1] == '-') {
      std::string name = w.substr(2, w.find('=') - 2);
      if (name == "help") filter.all_ = true;
      filter.long_.push_back(std::move(name));
    } else {
      if (w.find('h') != std::string::npos) filter.all_ = true;
      filter.short_.append(w, 1);
    }
  }
  return filter;
}

bool FlagFilter::Wants(std::string_view names) const {
  return all_ || AnyName(names, [this](std::string_view name) {
           if (name.starts_with("--"))
             return std::ranges::find(long_, name.substr(2)) != long_.end();
           return name.size() == 2 && name[0] == '-' && short_.find(name[1]) != std::string::npos;
         });
}

bool FlagFilter::Note(std::string_view names, std::vector<std::string_view>& known) const {
  AnyName(names, [&](std::string_view name) {
    if (name.starts_with("--")) known.push_back(name);
    return false;
  });
  return Wants(names);
}

// The flags of a job's spec, shared by submit, resubmit and run (whose -t is --tty, as
// docker's: its time limit is --time only). In option groups, the sections of the command's
// help: CLI11 checks each option added against every other of its group for a name used twice,
// which over one list of 60 options was two thirds of a `baton submit`'s instructions
// (docs/performance.md); tests/unit/cli_test.cc checks the names across groups. Only those
// `filter` wants are built.
void AddSpecFlags(CLI::App* sub, SubmitFlags& f, bool short_time, const FlagFilter& filter) {
  SpecFlagAdder s(sub, filter, f);
  s.Section("Resources");
  s.Option("-g,--gpus,-G", f.gpus, "GPUs (a fraction such as 0.25 shares one GPU)");
  s.Option("--gpu-type", f.gpu_type, "GPU model, e.g. H100 or A100-40GB");
  s.Option("--gpu-memory", f.gpu_memory, "minimum GPU memory, e.g. 40GiB (a number alone is MiB)");
  s.Option("--nodes,-N", f.nodes, "nodes (GPUs split evenly; default: the fewest that hold them)");
  s.Option("--cpus", f.cpus, "CPU cores per node");
  s.Flag("--exclusive", f.exclusive,
         "its nodes run no other job while it runs (it holds only the GPUs it asks for)");
  s.Option("-w,--nodelist", f.nodelist,
           "nodes it must be given, a list or Slurm's host list (gpu[01-04])");
  s.Option("-x,--exclude", f.exclude, "nodes it must not be given (as --nodelist)");
  s.Option("--memory,--mem", f.memory,
           "memory per node, e.g. 64GiB (a number alone is MiB, as Slurm's --mem)");
  s.Option("--gpus-per-node", f.gpus_per_node,
           "[TYPE:]N GPUs on each node, as Slurm's (the job's GPUs: N x --nodes)");
  s.Option("--gpus-per-task", f.gpus_per_task,
           "[TYPE:]N GPUs for each task (x --ntasks-per-node on each node)");
  s.Option("--ntasks,-n", f.ntasks, "a batch script's tasks (srun's), over its nodes",
           [](CLI::Option* o) { o->check(CLI::Range(1, 1024 * 1024)); });
  s.Option("--ntasks-per-node", f.tasks_per_node,
           "a batch script's tasks on each node (what its srun starts)",
           [](CLI::Option* o) { o->check(CLI::Range(1, 1024)); });
  s.Option("--cpus-per-task,-c", f.cpus_per_task, "CPU cores for each task (x tasks per node)",
           [](CLI::Option* o) { o->check(CLI::Range(1, 100'000)); });
  s.Option("--gres", f.gres, "gpu:N or gpu:TYPE:N on each node, as Slurm's");
  s.Option("--mem-per-gpu", f.mem_per_gpu, "memory per GPU (a number alone is MiB)");
  s.Option("--mem-per-cpu", f.mem_per_cpu, "memory per CPU core (a number alone is MiB)");
  s.Flag("--process-per-gpu", f.process_per_gpu,
         "one process per GPU (LOCAL_RANK 0..n-1 on each node), as torchrun --nproc-per-node");
  s.Section("Queue, limits and preemption");
  s.Option("-p,--priority,--qos", f.priority, "low, normal, high or critical");
  s.Option("--project,-A,--account", f.project, "project to account the job to");
  s.Option("--pool,--partition", f.pool, "pool (partition)");
  s.Option("--name,-J,--job-name", f.name, "job name");
  s.Option(short_time ? "-t,--time" : "--time", f.time,
           "time limit, e.g. 30m, 2h, 2:30:00, 1-12:00:00 (a number alone is minutes, as "
           "Slurm's)");
  s.Option("--grace", f.grace, "grace between SIGTERM and SIGKILL (default 30s)");
  s.Option("--output-limit", f.output_limit,
           "the most output a node keeps, its first half and its last, e.g. 256MiB "
           "(default: the pool's or the cluster's, 1GiB)");
  s.Option("--signal", f.signal,
           "[B:]SIG[@TIME]: send SIG (e.g. USR1) TIME before the time limit (default 60s), "
           "as Slurm's --signal: a batch script's srun tasks get it, with B: its shell alone; "
           "SIGTERM follows at the limit");
  s.Option("--retries", f.retries, "times a failed job is requeued");
  s.Option("--max-preemptions", f.max_preemptions,
           "times it may be preempted (or its spot node reclaimed) and requeued; the next "
           "preemption fails it (default: scheduling.max_preemptions, else no limit); "
           "apart from --retries");
  s.Flag("--requeue,!--no-requeue", f.requeue,
         "--no-requeue: a job Baton stops (preempted, its node lost, its GPU failed) "
         "fails instead of going back to the queue, as Slurm's (default: --requeue)");
  CLI::Option* preemptible =
      s.Flag("--preemptible", f.preemptible,
             "it may be preempted and run on spot nodes, and use idle GPUs beyond its project's "
             "guarantee (the default of batch jobs)");
  s.Flag("--no-preemptible", f.no_preemptible,
         "it is never preempted: it runs only within its project's guarantee and never on "
         "spot nodes (the default of sessions, baton run)",
         [preemptible](CLI::Option* o) {
           if (preemptible != nullptr) o->excludes(preemptible);
         });
  s.Flag("--hold", f.hold, "submit held; `baton release` lets it run");
  s.Section("When it starts");
  // Each of these takes one word per use (`--after 12,13 train.sh`: train.sh is the command).
  s.Option("--after", f.after, "start only after these jobs succeeded (ID[,ID...])",
           [](CLI::Option* o) { o->delimiter(',')->allow_extra_args(false); });
  s.Option("--after-any", f.after_any, "start only after these jobs ended, however",
           [](CLI::Option* o) { o->delimiter(',')->allow_extra_args(false); });
  s.Option("--after-notok", f.after_notok,
           "start only after these jobs ended other than succeeded (a clean-up job)",
           [](CLI::Option* o) { o->delimiter(',')->allow_extra_args(false); });
  s.Option("-d,--dependency", f.dependency,
           "Slurm's: afterok:ID[:ID...],afterany:ID,afternotok:ID,singleton");
  s.Option("--array", f.array,
           "a job array, one task per index: 0-99%8 (at most 8 at once), 1,5,9, 0-20:5; "
           "each task sees BATON_ARRAY_JOB_ID and BATON_ARRAY_INDEX");
  s.Flag("--singleton", f.singleton,
         "start only once your earlier jobs of the same name have ended");
  s.Option("--begin", f.begin,
           "not before TIME: +2h, now+30m, 14:00, 2026-12-01, 2026-12-01T09:00, or "
           "2026-12-01T09:00:00Z (local time unless it ends in Z)");
  s.Option("--schedule", f.schedule,
           "recurring: a run at each time of this cron schedule, e.g. \"0 3 * * *\" "
           "(03:00 daily, the controller's local time), \"*/15 * * * *\", @hourly; "
           "`baton crons` lists them");
  s.Section("What it runs in");
  s.Option("--code", f.code,
           "snapshot DIR now (what git shows there, else every file; at most 512 MiB) and "
           "run the job in its own copy of it: edits after submit do not reach it");
  s.Option("--image", f.image,
           "run in this container image, through podman (else apptainer; a .sif file's "
           "path: apptainer) on the node; its GPUs, job and working directories mounted");
  s.Option("--venv", f.venv,
           "run in this Python virtual environment (its bin/ first on PATH); it must "
           "exist at that path on the nodes");
  s.Option("--conda", f.conda,
           "run in this conda environment (a name or a prefix path), through `conda run`");
  s.Option("--env", f.env, "KEY=VALUE for the job's environment (repeatable)",
           [](CLI::Option* o) { o->allow_extra_args(false); });
  s.Option("--workdir,-D,--chdir", f.workdir, "working directory (default: the current one)");
  s.Option("--best-metric", f.best_metric,
           "NAME:min or NAME:max: track this metric of $BATON_METRICS_FILE's lines, its "
           "best value and the checkpoint of the best (baton show)");
  s.Section("Sizing from a model");
  s.Option("--model", f.model,
           "size the job from the model it serves or trains (baton size --list): the "
           "GPUs and GPU memory not given are filled in at submit");
  s.Option("--params", f.params, "or from its parameter count: 7B, 70b, 125M");
  s.Option("--task", f.task,
           "with --model: inference (default), finetune, lora, qlora, "
           "pretrain");
  s.Option("--precision", f.precision,
           "with --model: fp32, bf16 (default), fp16, fp8, "
           "int8, int4");
  s.Option("--seq", f.seq, "with --model: tokens per sequence (default 2048)",
           [](CLI::Option* o) { o->check(CLI::Range(int64_t{1}, int64_t{10'000'000})); });
  s.Option("--batch", f.batch, "with --model: sequences per GPU (default 1)",
           [](CLI::Option* o) { o->check(CLI::Range(int64_t{1}, int64_t{100'000})); });
  s.Section("Batch scripts (sbatch)");
  s.Option("-o,--output", f.output,
           "a batch script's output also to this file on its first node: %j job id, %A "
           "array id, %a task, %x name, %u user, %N node (default slurm-%j.out)");
  s.Option("-e,--error", f.error, "a batch script's errors to this file (default: --output)");
  s.Flag("--batch-script", f.batch_script,
         "run the command as a batch script (sbatch): once, on the first node, with "
         "SLURM_* variables, srun and scontrol; a script with #SBATCH lines is one");
}

// The job's command: words before the `--` that started the command keep the `--` as part of
// it (`baton submit python x.py -- --flag`); otherwise the command is what follows `--`.
Result<std::vector<std::string>> CommandWords(CLI::App& sub, const std::string& verb,
                                              const std::optional<std::vector<std::string>>& tail,
                                              const SubmitFlags& f) {
  std::vector<std::string> command = sub.remaining();
  // CLI11 hands over an unknown option as the first word of the command: a typo such as
  // `--gpu 1` would become the job's program. No program's name starts with '-'.
  if (!command.empty() && command[0].size() > 1 && command[0][0] == '-') {
    std::vector<std::string> names(f.spec_names.begin(), f.spec_names.end());  // copies
    names.insert(names.end(), f.other_names.begin(), f.other_names.end());
    return Err(InvalidArgument(
        UnknownOption(sub, "baton " + verb, command[0], std::move(names)).value_or("")));
  }
  if (tail.has_value()) {
    if (!command.empty()) command.emplace_back("--");
    command.insert(command.end(), tail->begin(), tail->end());
  }
  return command;
}

// Records which flags were typed (their long names): only those override a file or a job.
// Also keeps the spec flags typed as words, for a batch script's directives to go under.
void NoteGiven(const CLI::App& sub, SubmitFlags* f) {
  for (const CLI::Option* o : EveryOption(sub)) {
    if (o->count() == 0) continue;
    std::string name = "--" + o->get_single_name();
    f->given.insert(name);
    if (!f->IsSpecFlag(name)) continue;
    if (o->get_expected_max() == 0) {
      // A flag's last use, which may be its negation ("--no-requeue" of "--requeue") or a
      // value ("--hold=false"): as its name and value, which every flag takes.
      bool off = !o->results().empty() && o->results().back() == "false";
      f->typed.push_back(off ? name + "=false" : name);
      continue;
    }
    for (const std::string& value : o->results()) f->typed.insert(f->typed.end(), {name, value});
  }
}

}  // namespace baton::cli
