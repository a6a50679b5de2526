#include "cli/spec_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
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
  // Neither: as the job's kind chooses (a batch job is preemptible, a session is not).
  if (use("--preemptible") && f.preemptible) spec->preemptible = true;
  if (use("--no-preemptible") && f.no_preemptible) spec->preemptible = false;
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

// The flags of a job's spec, shared by submit, resubmit and run (whose -t is --tty, as
// docker's: its time limit is --time only).
void AddSpecFlags(CLI::App* sub, SubmitFlags& f, bool short_time) {
  const size_t before = sub->get_options().size();
  sub->add_option("-g,--gpus,-G", f.gpus, "GPUs (a fraction such as 0.25 shares one GPU)");
  sub->add_option("--gpu-type", f.gpu_type, "GPU model, e.g. H100 or A100-40GB");
  sub->add_option("--gpu-memory", f.gpu_memory,
                  "minimum GPU memory, e.g. 40GiB (a number alone is MiB)");
  sub->add_option("--nodes,-N", f.nodes,
                  "nodes (GPUs split evenly; default: the fewest that hold them)");
  sub->add_option("--cpus", f.cpus, "CPU cores per node");
  sub->add_flag("--exclusive", f.exclusive,
                "its nodes run no other job while it runs (it holds only the GPUs it asks for)");
  sub->add_option("-w,--nodelist", f.nodelist,
                  "nodes it must be given, a list or Slurm's host list (gpu[01-04])");
  sub->add_option("-x,--exclude", f.exclude, "nodes it must not be given (as --nodelist)");
  sub->add_option("--memory,--mem", f.memory,
                  "memory per node, e.g. 64GiB (a number alone is MiB, as Slurm's --mem)");
  sub->add_option("-p,--priority,--qos", f.priority, "low, normal, high or critical");
  sub->add_option("--project,-A,--account", f.project, "project to account the job to");
  sub->add_option("--pool,--partition", f.pool, "pool (partition)");
  sub->add_option("--name,-J,--job-name", f.name, "job name");
  sub->add_option(short_time ? "-t,--time" : "--time", f.time,
                  "time limit, e.g. 30m, 2h, 2:30:00, 1-12:00:00 (a number alone is minutes, as "
                  "Slurm's)");
  sub->add_option("--grace", f.grace, "grace between SIGTERM and SIGKILL (default 30s)");
  sub->add_option("--output-limit", f.output_limit,
                  "the most output a node keeps, its first half and its last, e.g. 256MiB "
                  "(default: the pool's or the cluster's, 1GiB)");
  sub->add_option("--signal", f.signal,
                  "SIG[@TIME]: send SIG (e.g. USR1) TIME before the time limit (default 60s), "
                  "as Slurm's --signal; SIGTERM follows at the limit");
  sub->add_option("--retries", f.retries, "times a failed job is requeued");
  sub->add_option("--max-preemptions", f.max_preemptions,
                  "times it may be preempted (or its spot node reclaimed) and requeued; the next "
                  "preemption fails it (default: scheduling.max_preemptions, else no limit); "
                  "apart from --retries");
  sub->add_flag("--requeue,!--no-requeue", f.requeue,
                "--no-requeue: a job Baton stops (preempted, its node lost, its GPU failed) "
                "fails instead of going back to the queue, as Slurm's (default: --requeue)");
  // Each of these takes one word per use (`--after 12,13 train.sh`: train.sh is the command).
  sub->add_option("--after", f.after, "start only after these jobs succeeded (ID[,ID...])")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_option("--after-any", f.after_any, "start only after these jobs ended, however")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_option("--after-notok", f.after_notok,
                  "start only after these jobs ended other than succeeded (a clean-up job)")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_option("--array", f.array,
                  "a job array, one task per index: 0-99%8 (at most 8 at once), 1,5,9, 0-20:5; "
                  "each task sees BATON_ARRAY_JOB_ID and BATON_ARRAY_INDEX");
  sub->add_flag("--singleton", f.singleton,
                "start only once your earlier jobs of the same name have ended");
  sub->add_option("--begin", f.begin,
                  "not before TIME: +2h, now+30m, 14:00, 2026-12-01, 2026-12-01T09:00, or "
                  "2026-12-01T09:00:00Z (local time unless it ends in Z)");
  sub->add_option("--schedule", f.schedule,
                  "recurring: a run at each time of this cron schedule, e.g. \"0 3 * * *\" "
                  "(03:00 daily, the controller's local time), \"*/15 * * * *\", @hourly; "
                  "`baton crons` lists them");
  sub->add_option("--code", f.code,
                  "snapshot DIR now (what git shows there, else every file; at most 512 MiB) and "
                  "run the job in its own copy of it: edits after submit do not reach it");
  sub->add_option("--image", f.image,
                  "run in this container image, through podman (else apptainer; a .sif file's "
                  "path: apptainer) on the node; its GPUs, job and working directories mounted");
  sub->add_option("--venv", f.venv,
                  "run in this Python virtual environment (its bin/ first on PATH); it must "
                  "exist at that path on the nodes");
  sub->add_option("--conda", f.conda,
                  "run in this conda environment (a name or a prefix path), through `conda run`");
  sub->add_option("--best-metric", f.best_metric,
                  "NAME:min or NAME:max: track this metric of $BATON_METRICS_FILE's lines, its "
                  "best value and the checkpoint of the best (baton show)");
  sub->add_option("--model", f.model,
                  "size the job from the model it serves or trains (baton size --list): the "
                  "GPUs and GPU memory not given are filled in at submit");
  sub->add_option("--params", f.params, "or from its parameter count: 7B, 70b, 125M");
  sub->add_option("--task", f.task,
                  "with --model: inference (default), finetune, lora, qlora, "
                  "pretrain");
  sub->add_option("--precision", f.precision,
                  "with --model: fp32, bf16 (default), fp16, fp8, "
                  "int8, int4");
  sub->add_option("--seq", f.seq, "with --model: tokens per sequence (default 2048)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  sub->add_option("--batch", f.batch, "with --model: sequences per GPU (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{100'000}));
  sub->add_option("--env", f.env, "KEY=VALUE for the job's environment (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--workdir,-D,--chdir", f.workdir,
                  "working directory (default: the current one)");
  CLI::Option* preemptible = sub->add_flag(
      "--preemptible", f.preemptible,
      "it may be preempted and run on spot nodes, and use idle GPUs beyond its project's "
      "guarantee (the default of batch jobs)");
  sub->add_flag("--no-preemptible", f.no_preemptible,
                "it is never preempted: it runs only within its project's guarantee and never on "
                "spot nodes (the default of sessions, baton run)")
      ->excludes(preemptible);
  sub->add_flag(
      "--process-per-gpu", f.process_per_gpu,
      "one process per GPU (LOCAL_RANK 0..n-1 on each node), as torchrun --nproc-per-node");
  sub->add_flag("--hold", f.hold, "submit held; `baton release` lets it run");
  sub->add_option("--gpus-per-node", f.gpus_per_node,
                  "[TYPE:]N GPUs on each node, as Slurm's (the job's GPUs: N x --nodes)");
  sub->add_option("--gpus-per-task", f.gpus_per_task,
                  "[TYPE:]N GPUs for each task (x --ntasks-per-node on each node)");
  sub->add_option("--ntasks,-n", f.ntasks, "a batch script's tasks (srun's), over its nodes")
      ->check(CLI::Range(1, 1024 * 1024));
  sub->add_option("--ntasks-per-node", f.tasks_per_node,
                  "a batch script's tasks on each node (what its srun starts)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--cpus-per-task,-c", f.cpus_per_task,
                  "CPU cores for each task (x tasks per node)")
      ->check(CLI::Range(1, 100'000));
  sub->add_option("--gres", f.gres, "gpu:N or gpu:TYPE:N on each node, as Slurm's");
  sub->add_option("-d,--dependency", f.dependency,
                  "Slurm's: afterok:ID[:ID...],afterany:ID,afternotok:ID,singleton");
  sub->add_option("--mem-per-gpu", f.mem_per_gpu, "memory per GPU (a number alone is MiB)");
  sub->add_option("--mem-per-cpu", f.mem_per_cpu, "memory per CPU core (a number alone is MiB)");
  sub->add_option("-o,--output", f.output,
                  "a batch script's output also to this file on its first node: %j job id, %A "
                  "array id, %a task, %x name, %u user, %N node (default slurm-%j.out)");
  sub->add_option("-e,--error", f.error,
                  "a batch script's errors to this file (default: --output)");
  sub->add_flag("--batch-script", f.batch_script,
                "run the command as a batch script (sbatch): once, on the first node, with "
                "SLURM_* variables, srun and scontrol; a script with #SBATCH lines is one");
  // Their names, for NoteGiven (building the flags again to ask costs a short command's start).
  const std::vector<CLI::Option*> all = sub->get_options();
  for (size_t i = before; i < all.size(); ++i)
    f.spec_names.insert("--" + all[i]->get_single_name());
}

// The job's command: words before the `--` that started the command keep the `--` as part of
// it (`baton submit python x.py -- --flag`); otherwise the command is what follows `--`.
Result<std::vector<std::string>> CommandWords(CLI::App& sub, const std::string& verb,
                                              const std::optional<std::vector<std::string>>& tail) {
  std::vector<std::string> command = sub.remaining();
  // CLI11 hands over an unknown option as the first word of the command: a typo such as
  // `--gpu 1` would become the job's program. No program's name starts with '-'.
  if (!command.empty() && command[0].size() > 1 && command[0][0] == '-') {
    return Err(InvalidArgument(UnknownOption(sub, "baton " + verb, command[0]).value_or("")));
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
  for (const CLI::Option* o : sub.get_options()) {
    if (o->count() == 0) continue;
    std::string name = "--" + o->get_single_name();
    f->given.insert(name);
    if (f->spec_names.count(name) == 0) continue;
    if (o->get_expected_max() == 0) {
      // A flag's last use, which may be its negation ("--no-requeue" of "--requeue").
      bool off = !o->results().empty() && o->results().back() == "false";
      f->typed.push_back(off ? "--no-" + o->get_single_name() : name);
      continue;
    }
    for (const std::string& value : o->results()) f->typed.insert(f->typed.end(), {name, value});
  }
}

}  // namespace baton::cli
