#include "cli/submit.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "cli/actions.h"
#include "cli/code.h"
#include "cli/parser.h"
#include "cli/sbatch.h"
#include "cli/spec_flags.h"
#include "codec/json_codec.h"
#include "core/hostlist.h"
#include "core/quantity.h"
#include "core/resubmit.h"
#include "core/text.h"

namespace baton::cli {

Result<TimePoint> ParseBeginTime(std::string_view text, TimePoint now, std::string_view field) {
  auto bad = [&] {
    return Err(InvalidArgument(std::string(field) + ": \"" + std::string(text.substr(0, 64)) +
                               "\" is not a time (+2h, now+30m, 14:00, 2026-12-01, "
                               "2026-12-01T09:00, or RFC 3339)"));
  };
  std::string_view t = text;
  if (t.rfind("now", 0) == 0) t.remove_prefix(3);
  if (t.empty() && text == "now") return now;
  if (!t.empty() && t[0] == '+') {
    auto d = ParseDuration(t.substr(1), field);
    if (!d) return bad();
    return now + *d;
  }
  if (t.size() != text.size()) return bad();  // "now" followed by anything but +DURATION
  if (auto exact = ParseRfc3339(text)) return *exact;
  // Local time, as Slurm reads --begin: HH:MM[:SS] (today, or tomorrow once passed),
  // YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS].
  std::string s(text);
  std::tm tm{};
  time_t now_t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(now.time_since_epoch())));
  localtime_r(&now_t, &tm);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  char tail = 0;
  bool clock_only = false;
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d%c", &y, &mo, &d, &h, &mi, &sec, &tail) == 6 ||
      std::sscanf(s.c_str(), "%d-%d-%dT%d:%d%c", &y, &mo, &d, &h, &mi, &tail) == 5 ||
      std::sscanf(s.c_str(), "%d-%d-%d%c", &y, &mo, &d, &tail) == 3) {
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
  } else if (std::sscanf(s.c_str(), "%d:%d:%d%c", &h, &mi, &sec, &tail) == 3 ||
             std::sscanf(s.c_str(), "%d:%d%c", &h, &mi, &tail) == 2) {
    clock_only = true;
  } else {
    return bad();
  }
  if (mo < 0 || mo > 12 || d < 0 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
      sec > 60 || (!clock_only && (mo == 0 || d == 0)))
    return bad();
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;
  time_t at = mktime(&tm);
  if (at == -1) return bad();
  if (clock_only && at * 1000LL < ToMillis(now)) at += 24 * 3600;
  return FromMillis(static_cast<int64_t>(at) * 1000);
}

namespace {

// The jobs of a job file, with the typed flags applied to each (they override the file).
Result<std::vector<JobSpec>> SpecsFromFile(const SubmitFlags& f) {
  std::ifstream in(f.file);
  if (!in) return Err(NotFound(f.file + ": cannot be read"));
  std::stringstream ss;
  ss << in.rdbuf();
  ASSIGN_OR_RETURN(std::string json, codec::YamlToJson(ss.str(), f.file));
  auto specs = codec::DecodeJobFile(json);
  if (!specs) return Err(InvalidArgument(f.file + ": " + specs.error().message()));
  for (JobSpec& spec : *specs) {
    RETURN_IF_ERROR(ApplyFlags(f, &f.given, &spec));
    if (Status st = ValidateJobSpec(spec); !st.ok())
      return Err(InvalidArgument(f.file + " with the flags given: " + st.message()));
  }
  return specs;
}

// The spec flags of `f` (what AddSpecFlags defines) as parsed from `words`: a script's
// directives, then the flags typed (so that those win, and totals such as --gpus-per-node x
// --nodes are taken from both).
Result<SubmitFlags> ParseSpecWords(std::vector<std::string> words, const std::string& where) {
  SubmitFlags d;
  CLI::App app;
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  AddSpecFlags(&app, d, true, FlagFilter::Of(words));
  std::reverse(words.begin(), words.end());
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    return Err(InvalidArgument(where + ": " + e.what()));
  }
  NoteGiven(app, &d);
  return d;
}

// Slurm's spellings of one quantity (GPUs: --gpus, --gres, --gpus-per-node, --gpus-per-task;
// memory: --mem, --mem-per-gpu, --mem-per-cpu; CPUs; tasks): typed in one of them, the
// script's other spellings are dropped, so that the flag typed wins as on sbatch's command line
// (a typed --gres=gpu:2 over a script's --gres=gpu:1, which reads as --gpus-per-node 1).
void KeepTypedSpellings(const std::set<std::string>& typed, SubmitFlags* merged) {
  const SubmitFlags defaults;
  auto typed_any = [&](std::initializer_list<const char*> flags) {
    return std::any_of(flags.begin(), flags.end(),
                       [&](const char* flag) { return typed.count(flag) > 0; });
  };
  auto reset = [&](const char* flag, auto member) {
    if (typed.count(flag) == 0) merged->*member = defaults.*member;
  };
  if (typed_any({"--gpus", "--gres", "--gpus-per-node", "--gpus-per-task"})) {
    reset("--gpus", &SubmitFlags::gpus);
    reset("--gres", &SubmitFlags::gres);
    reset("--gpus-per-node", &SubmitFlags::gpus_per_node);
    reset("--gpus-per-task", &SubmitFlags::gpus_per_task);
  }
  if (typed_any({"--memory", "--mem-per-gpu", "--mem-per-cpu"})) {
    reset("--memory", &SubmitFlags::memory);
    reset("--mem-per-gpu", &SubmitFlags::mem_per_gpu);
    reset("--mem-per-cpu", &SubmitFlags::mem_per_cpu);
  }
  if (typed_any({"--cpus", "--cpus-per-task"})) {
    reset("--cpus", &SubmitFlags::cpus);
    reset("--cpus-per-task", &SubmitFlags::cpus_per_task);
  }
  if (typed_any({"--ntasks", "--ntasks-per-node"})) {
    reset("--ntasks", &SubmitFlags::ntasks);
    reset("--ntasks-per-node", &SubmitFlags::tasks_per_node);
  }
}

// A batch script as sbatch runs it (cli/sbatch.h): `baton submit train.sh [ARGS]` with its
// #SBATCH and #BATON lines, or --wrap "COMMAND"; the flags typed win over its directives. A
// script without directives is one too when --batch-script is given; else it runs as any command.
Result<JobSpec> SpecFromScript(const SubmitFlags& f, std::vector<std::string> command) {
  BatchScript script;
  if (!f.wrap.empty()) {
    if (!command.empty())
      return Err(InvalidArgument("--wrap: the command is its value; no other command"));
    script.command = {"/bin/sh", "-c", f.wrap};
    script.name = "wrap";
    script.directives = true;
  } else {
    std::vector<std::string> args(command.begin() + 1, command.end());
    ASSIGN_OR_RETURN(script, ReadBatchScript(command[0], args));
    if (!script.directives && !f.batch_script) return SpecFromFlags(f, std::move(command));
    if (!script.refused.empty()) return Err(InvalidArgument(script.refused));
  }
  std::vector<std::string> words = script.flags;
  // A typed --preemptible or --no-preemptible wins over the script's either: two flags that
  // exclude each other, which one parse would refuse together.
  if (f.given.count("--preemptible") > 0 || f.given.count("--no-preemptible") > 0) {
    std::erase_if(words, [](const std::string& w) {
      return w.starts_with("--preemptible") || w.starts_with("--no-preemptible");
    });
  }
  words.insert(words.end(), f.typed.begin(), f.typed.end());
  ASSIGN_OR_RETURN(SubmitFlags merged,
                   ParseSpecWords(words, command.empty() ? "--wrap" : command[0]));
  KeepTypedSpellings(f.given, &merged);
  merged.code = f.code;
  for (const std::string& note : script.notes) std::cerr << "baton: note: " << note << "\n";
  JobSpec spec = SubmittedSpec();
  RETURN_IF_ERROR(ApplyFlags(merged, nullptr, &spec));
  spec.command = std::move(script.command);
  spec.shell = false;
  spec.batch = spec.slurm_env = true;
  if (merged.given.count("--name") == 0) spec.name = script.name;
  // sbatch's default output file, in the working directory.
  if (merged.given.count("--output") == 0)
    spec.output_file = spec.array.empty() ? "slurm-%j.out" : "slurm-%A_%a.out";
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  return spec;
}

int Post(ApiClient& api, const std::string& body, bool batch, bool json);
int TestOnly(ApiClient& api, const std::string& body, bool batch, bool json);
Status WithCode(ApiClient& api, const SubmitFlags& f, std::vector<JobSpec>& specs);

// `baton submit --like ID [OPTIONS] [-- COMMAND]`: a batch job with the resources and the
// environment of job ID (a session, say): its spec, not a session, not held, not an array or a
// recurring job, without its dependencies and begin, preemptible as a batch job is unless told;
// the command given (else its own) and the flags typed override it.
int SubmitLike(const Connection& conn, const SubmitFlags& f, std::vector<std::string> command) {
  auto refs = ParseJobIds({f.like});
  if (!refs || refs->size() != 1) {
    return Usage(InvalidArgument("--like: \"" + f.like.substr(0, 64) +
                                 "\" is not one job id (12) or task of an array (12_3)"));
  }
  if (!f.file.empty())
    return Usage(InvalidArgument("submit: --like and -f FILE cannot go together"));
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto job = (*api)->GetJob(refs->front());
  if (!job) return Fail(job.error());
  JobSpec spec = std::move(job->spec);
  spec.interactive = Interactive::kNone;
  spec.preemptible.reset();  // a session's "not preemptible" is its kind's, not a choice
  spec.hold = false;
  spec.array.clear();
  spec.schedule.clear();
  spec.begin.reset();
  spec.after.clear();
  spec.after_any.clear();
  spec.after_notok.clear();
  spec.singleton = false;
  if (!command.empty()) {
    spec.shell = LooksLikeShell(command);
    spec.command = std::move(command);
    spec.name = std::filesystem::path(spec.shell ? "sh" : spec.command[0]).filename().string();
  }
  if (Status st = ApplyFlags(f, &f.given, &spec); !st.ok()) return Usage(st);
  if (Status st = ValidateJobSpec(spec); !st.ok()) {
    return Usage(
        InvalidArgument("job " + refs->front() + " with the flags given: " + st.message()));
  }
  std::vector<JobSpec> one = {std::move(spec)};
  if (Status st = WithCode(**api, f, one); !st.ok()) return Fail(st);
  return Post(**api, codec::EncodeJobSpec(one.front()), false, f.json);
}

// Uploads the --code snapshot, if any, and names it in each spec.
Status WithCode(ApiClient& api, const SubmitFlags& f, std::vector<JobSpec>& specs) {
  if (f.code.empty()) return Status::Ok();
  auto id = UploadCode(api, f.code);
  if (!id) return id.error();
  for (JobSpec& spec : specs) spec.code = *id;
  return Status::Ok();
}

int Submit(const Connection& conn, const SubmitFlags& f, std::vector<std::string> command) {
  if (!f.like.empty()) return SubmitLike(conn, f, std::move(command));
  std::vector<JobSpec> specs;
  if (!f.file.empty()) {
    if (!command.empty()) {
      return Usage(InvalidArgument(
          "submit: -f FILE and a command cannot go together (the file's jobs have their "
          "commands; flags given with -f override the file's fields)"));
    }
    auto read = SpecsFromFile(f);
    if (!read) return Usage(read.error());
    specs = std::move(*read);
  } else if (!f.wrap.empty() || (!command.empty() && IsScript(command[0]))) {
    auto spec = SpecFromScript(f, std::move(command));
    if (!spec) return Usage(spec.error());
    specs.push_back(std::move(*spec));
  } else {
    auto spec = SpecFromFlags(f, std::move(command));
    if (!spec) return Usage(spec.error());
    specs.push_back(std::move(*spec));
  }
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  // A test leaves nothing behind: no snapshot is uploaded (one the job names is checked).
  if (!f.test_only) {
    if (Status st = WithCode(**api, f, specs); !st.ok()) return Fail(st);
  }
  bool batch = specs.size() > 1;
  std::string body;
  if (batch) {
    body = "{\"jobs\":[";
    for (size_t i = 0; i < specs.size(); ++i)
      body += (i ? "," : "") + codec::EncodeJobSpec(specs[i]);
    body += "]}";
  } else {
    body = codec::EncodeJobSpec(specs.front());
  }
  return f.test_only ? TestOnly(**api, body, batch, f.json) : Post(**api, body, batch, f.json);
}

// `baton resubmit ID`: the job's spec again, with the flags given overriding its fields.
// A task of an array ("12_3") is submitted again alone, unless --array says otherwise.
int Resubmit(const Connection& conn, const SubmitFlags& f, const std::string& word) {
  auto refs = ParseJobIds({word});
  if (!refs || refs->size() != 1) {
    return Usage(InvalidArgument("resubmit: \"" + word.substr(0, 64) +
                                 "\" is not one job id (12) or task of an array (12_3)"));
  }
  const std::string& id = refs->front();
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto job = (*api)->GetJob(id);
  if (!job) return Fail(job.error());
  // Held again only with --hold; recurring again only with --schedule.
  JobSpec spec = ResubmitSpec(*job);
  if (Status st = ApplyFlags(f, &f.given, &spec); !st.ok()) return Usage(st);
  if (Status st = ValidateJobSpec(spec); !st.ok()) {
    return Usage(InvalidArgument("job " + id + " with the flags given: " + st.message()));
  }
  std::vector<JobSpec> one = {std::move(spec)};
  if (Status st = WithCode(**api, f, one); !st.ok()) return Fail(st);
  return Post(**api, codec::EncodeJobSpec(one.front()), false, f.json);
}

// POSTs one spec or a batch; prints the new jobs' ids (or, with `json`, the server's answer).
int Post(ApiClient& api, const std::string& body, bool batch, bool json) {
  // The key makes a retried request (dropped connection) find the job instead of making two.
  auto res = api.Call("POST", batch ? "/v1/jobs/batch" : "/v1/jobs", body,
                      {{"Idempotency-Key", RandomHex(16)}});
  if (!res) return Fail(res.error());
  if (json) {
    std::cout << *res << "\n";
    return 0;
  }
  if (batch) {
    auto jobs = codec::DecodeJobList(*res, nullptr);
    if (!jobs) return Fail(jobs.error());
    for (const Job& j : *jobs) std::cout << j.id.value << "\n";
  } else {
    auto job = codec::DecodeSubmitted(*res);
    if (!job) return Fail(job.error());
    std::cout << job->id.value << "\n";
    if (!job->schedule.empty() && job->begin) {
      std::cerr << "recurring job " << job->id.value << " (" << job->schedule << "): first run at "
                << FormatRfc3339(*job->begin) << "; `baton crons` lists it, `baton crons delete "
                << job->id.value << "` stops it\n";
    }
  }
  return 0;
}

// What a dry run would make, one line per spec (an array's tasks on one): "train would be
// pending: 2 GPUs on 1 node of pool default, time limit 2h".
std::string WouldSubmit(const std::vector<Job>& jobs) {
  std::string out;
  for (size_t i = 0; i < jobs.size();) {
    const Job& j = jobs[i];
    size_t end = i + 1;  // the tasks of the same array follow, in index order
    while (j.array_index >= 0 && end < jobs.size() &&
           jobs[end].array_index > jobs[end - 1].array_index) {
      ++end;
    }
    const Resources& r = j.spec.resources;
    std::string name = j.spec.name.empty() ? "the job" : j.spec.name;
    if (j.array_index >= 0) {
      name += " (" + std::to_string(end - i) + (end - i == 1 ? " task, " : " tasks, ") +
              std::to_string(j.array_index) +
              (end - i > 1 ? "-" + std::to_string(jobs[end - 1].array_index) : "") + ")";
    }
    std::string gpus = r.milli_gpus == 0
                           ? "no GPU"
                           : FormatMilli(r.milli_gpus) + (r.milli_gpus == 1000 ? " GPU" : " GPUs") +
                                 (r.gpu_type.empty() ? "" : " of type " + r.gpu_type);
    out += name + " would be " + std::string(JobStateName(j.state)) + ": " + gpus + " on " +
           std::to_string(r.nodes) + (r.nodes == 1 ? " node" : " nodes") + " of pool " +
           j.spec.pool + ", " +
           (j.spec.time_limit.count() > 0 ? "time limit " + FormatDuration(j.spec.time_limit)
                                          : std::string("no time limit")) +
           (j.sized.empty() ? "" : "; " + j.sized) + "\n";
    i = end;
  }
  return out;
}

// `baton submit --test-only` (sbatch's): the server's dry run of the same body. It checks all
// a submit checks and makes nothing; the answer, or with `json` the server's own.
int TestOnly(ApiClient& api, const std::string& body, bool batch, bool json) {
  auto res =
      api.Call("POST", batch ? "/v1/jobs/batch?dry_run=true" : "/v1/jobs?dry_run=true", body, {});
  if (!res) return Fail(res.error());
  if (json) {
    std::cout << *res << "\n";
    return 0;
  }
  auto jobs = codec::DecodeDryRun(*res);
  if (!jobs) return Fail(jobs.error());
  std::cout << WouldSubmit(*jobs) << "nothing submitted (--test-only)\n";
  return 0;
}

}  // namespace

// `baton submit`: the job's spec from flags or a file; its command after `--`.
void AddSubmitCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code,
                      const std::shared_ptr<std::optional<std::vector<std::string>>>& tail,
                      const FlagFilter& filter) {
  auto f = std::make_shared<SubmitFlags>();
  CLI::App* sub =
      app.add_subcommand("submit", "submit a job: baton submit [OPTIONS] -- COMMAND [ARGS...]");
  sub->prefix_command();
  SetUsage(sub,
           "baton submit [OPTIONS] -- COMMAND [ARGS...]\n       baton submit [OPTIONS] "
           "SCRIPT [ARGS...]   (#SBATCH lines read, as sbatch)\n       baton submit -f FILE "
           "[OPTIONS]");
  // Its own options and the connection's too are built only when typed (or for help), as the
  // spec flags are: most submits type none of them.
  std::vector<std::string_view>& own = f->other_names;
  auto option = [&](const char* names, std::string& value, const char* description) {
    if (filter.Note(names, own)) sub->add_option(names, value, description);
  };
  auto flag = [&](const char* names, bool& value, const char* description) {
    if (filter.Note(names, own)) sub->add_flag(names, value, description);
  };
  if (filter.Note("--server,--token,--tls-ca", own)) AddConnectionFlags(sub, *conn);
  AddSpecFlags(sub, *f, true, filter);
  option("-f,--file", f->file,
         "YAML job file (one job, a list, or {jobs: [...]}), or a job as `baton show ID --json` "
         "prints it");
  option("--like", f->like,
         "a job with the resources and environment of this one (a session's, say): the command "
         "given, else its own; the flags typed override it");
  flag("--json", f->json, "print the job object instead of its id");
  flag("--test-only", f->test_only,
       "check the job as the submit would (the server's dry run) and say what it would make, "
       "submitting nothing (sbatch --test-only)");
  option("--wrap", f->wrap,
         "a batch script of this shell command line, as sbatch --wrap (its srun spreads tasks "
         "over the job's nodes)");
  sub->callback([sub, f, conn, exit_code, tail] {
    auto command = CommandWords(*sub, "submit", *tail, *f);
    if (!command) {
      *exit_code = Usage(command.error());
      return;
    }
    NoteGiven(*sub, f.get());
    *exit_code = Submit(*conn, *f, std::move(*command));
  });
}

void AddResubmitCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  auto f = std::make_shared<SubmitFlags>();
  auto id = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "resubmit", "submit a job again, as it was but for the flags given (those of submit)");
  SetUsage(sub, "baton resubmit ID [OPTIONS]   e.g. baton resubmit 12 -g 2 -t 4h --env LR=0.1");
  AddConnectionFlags(sub, *conn);
  sub->add_option("id", *id, "the job to submit again (12, or 12_3 for one task of an array)")
      ->required();
  AddSpecFlags(sub, *f);
  sub->add_flag("--json", f->json, "print the job object instead of its id");
  sub->callback([sub, f, id, conn, exit_code] {
    NoteGiven(*sub, f.get());
    *exit_code = Resubmit(*conn, *f, *id);
  });
}

}  // namespace baton::cli
