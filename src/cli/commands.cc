#include "cli/commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "cli/actions.h"
#include "cli/client.h"
#include "cli/crons.h"
#include "cli/history.h"
#include "cli/logs.h"
#include "cli/parser.h"
#include "cli/size.h"
#include "cli/submit.h"
#include "cli/table.h"
#include "cli/tokens.h"
#include "cli/views.h"
#include "codec/json_codec.h"
#include "core/quantity.h"

namespace baton::cli {
namespace {

// The command as a shell would take it back: words with spaces or quotes in single quotes.
std::string CommandText(const JobSpec& spec) {
  if (spec.shell && spec.command.size() == 1) return spec.command[0] + "  (run by /bin/sh -c)";
  std::string out;
  for (const std::string& a : ShownCommand(spec)) {
    bool plain = a.starts_with("<script: ") ||
                 (!a.empty() && a.find_first_of(" \t\n'\"\\$`;|&<>(){}*?!#~") == std::string::npos);
    std::string word = a;
    if (!plain) {
      word = "'";
      for (char ch : a) word += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      word += "'";
    }
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

// One job as the job routes name it: "12", or "12_7" for a task of an array.
Result<std::string> OneJobRef(const std::string& word) {
  ASSIGN_OR_RETURN(std::vector<std::string> refs, ParseJobIds({word}));
  if (refs.size() != 1) {
    return Err(InvalidArgument("\"" + word.substr(0, 64) +
                               "\": one job id (12) or task (12_7), not a range"));
  }
  return refs.front();
}

// "name          value", the form of `baton show`; nothing for an empty value.
void ShowLine(const std::string& k, const std::string& v) {
  if (!v.empty())
    std::cout << k << std::string(k.size() < 14 ? 14 - k.size() : 1, ' ') << v << "\n";
}

// "0.38 at step 200 (checkpoint /ckpt/200.pt)".
std::string MetricText(const MetricPoint& p) {
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", p.value);
  std::string text = value;
  if (p.step >= 0) text += " at step " + std::to_string(p.step);
  if (!p.checkpoint.empty()) text += " (checkpoint " + p.checkpoint + ")";
  return text;
}

// What the job asks for: its command, resources, limits, dependencies and environment.
void ShowRequest(const Job& j) {
  auto line = ShowLine;
  line("command", CommandText(j.spec));
  const Resources& r = j.spec.resources;
  line("gpus", FormatMilli(r.milli_gpus) + (r.gpu_type.empty() ? "" : " " + r.gpu_type) +
                   (r.nodes > 1 ? " on " + std::to_string(r.nodes) + " nodes" : ""));
  line("gpu memory", r.gpu_memory_bytes > 0 ? "at least " + FormatSize(r.gpu_memory_bytes) : "any");
  line("nodes", std::to_string(r.nodes));
  if (!j.sized.empty()) line("sized", j.sized);
  line("cpus", r.cpus > 0 ? std::to_string(r.cpus) + " per node" : "not requested");
  line("memory", r.memory_bytes > 0 ? FormatSize(r.memory_bytes) + " per node" : "not requested");
  line("time limit", j.spec.time_limit.count() > 0 ? FormatDuration(j.spec.time_limit) : "none");
  line("grace", FormatDuration(j.spec.grace_period) + " from SIGTERM to SIGKILL");
  line("signal", j.spec.signal != 0 ? FormatNoticeSignal(j.spec.signal, j.spec.signal_before,
                                                         j.spec.signal_shell) +
                                          " before its limit"
                                    : "none asked");
  std::string deps;
  for (const auto& [ids, when] :
       {std::pair{&j.spec.after, "once they succeeded"},
        std::pair{&j.spec.after_any, "once they ended"},
        std::pair{&j.spec.after_notok, "once they ended otherwise than succeeded"}}) {
    std::string list;
    for (JobId dep : *ids) list += (list.empty() ? "" : ", ") + dep.ToString();
    if (!list.empty()) deps += (deps.empty() ? "" : "; ") + list + " (starts " + when + ")";
  }
  if (j.spec.singleton) deps += std::string(deps.empty() ? "" : "; ") + "singleton";
  line("dependencies", deps.empty() ? "none" : deps);
  if (j.spec.begin)
    line(j.spec.schedule.empty() ? "begin" : "next run", FormatRfc3339(*j.spec.begin));
  if (!j.spec.schedule.empty()) {
    line("schedule", j.spec.schedule + " (a run of recurring job " + j.cron_id.ToString() +
                         (j.cron_stopped ? ", its last" : "; `baton crons` lists it") + ")");
  }
  if (!j.spec.code.empty()) {
    line("workdir",
         "its own copy of code snapshot " + j.spec.code.substr(0, 12) + " (baton submit --code)");
  } else {
    line("workdir", j.spec.workdir.empty() ? "the agent's" : j.spec.workdir);
  }
  if (!j.spec.venv.empty()) line("environment", "venv " + j.spec.venv);
  if (!j.spec.conda.empty()) line("environment", "conda " + j.spec.conda);
  if (!j.spec.image.empty()) line("environment", "image " + j.spec.image);
  if (j.spec.interactive != Interactive::kNone) {
    line("session",
         std::string(j.spec.interactive == Interactive::kTty ? "a terminal" : "stdin attached") +
             (j.state == JobState::kRunning ? " (`baton attach " + j.id.ToString() + "`)" : ""));
  }
  if (!j.spec.best_metric.empty()) {
    line("metric",
         j.spec.best_metric + (j.spec.best_max ? " (higher is better)" : " (lower is better)"));
    line("  best", j.metric_best ? MetricText(*j.metric_best) : "none reported yet");
    line("  last", j.metric_last ? MetricText(*j.metric_last) : "none reported yet");
  }
  // The server shows the environment to the job's owner and admins only.
  if (j.spec.env.empty()) line("env", "none set (or not yours to see)");
  for (size_t i = 0; i < j.spec.env.size(); ++i)
    line(i == 0 ? "env" : " ", j.spec.env[i].first + "=" + j.spec.env[i].second);
  line("preemptible", Preemptible(j.spec)
                          ? "yes (it may be preempted, and run on spot nodes)"
                          : "no (never preempted; within its project's guarantee, never on spot)");
  if (j.spec.process_per_gpu) line("processes", "one per GPU");
}

// How it has run: restarts, its place in the queue, times, where, cost.
void ShowRuns(const Job& j, const std::string& body) {
  auto line = ShowLine;
  line("restarts",
       std::to_string(j.restarts) + " (retries allowed: " + std::to_string(j.spec.retries) + ")");
  line("preemptions",
       std::to_string(j.preemptions) +
           (j.spec.max_preemptions
                ? " (at most " + std::to_string(*j.spec.max_preemptions) + ", --max-preemptions)"
                : ""));
  if (j.preempt_deadline)
    line("preempting", "SIGKILL due at " + FormatRfc3339(*j.preempt_deadline));
  if (!j.spec.requeue) line("requeue", "never (--no-requeue): stopped by Baton, it fails");
  line("last requeue", j.last_requeue);
  if (j.estimated_start) line("expected start", FormatRfc3339(*j.estimated_start));
  if (auto q = codec::DecodeQueueInfo(body); q && j.state == JobState::kPending) {
    char text[160];
    std::snprintf(
        text, sizeof text,
        "%lld (score %.0f = priority %.2f, fair share %.2f, age %.2f, size %.2f, LAS %.2f, "
        "each weighted)",
        static_cast<long long>(q->position), q->factors.score, q->factors.priority,
        q->factors.fairshare, q->factors.age, q->factors.size, q->factors.las);
    line("queue position", text);
  }
  line("submitted", FormatRfc3339(j.submitted_at));
  if (j.started_at) line("started", FormatRfc3339(*j.started_at));
  if (j.finished_at) line("finished", FormatRfc3339(*j.finished_at));
  if (j.exit_code) line("exit code", std::to_string(*j.exit_code));
  if (j.exit_signal) line("exit signal", SignalText(*j.exit_signal));
  TimePoint now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  line("elapsed", Elapsed(j, now));
  line("allocation", AllocationText(j));
  // A share of a GPU: how much, and what holds the job to it there (docs/gpus.md).
  for (const auto& part : j.allocation) {
    if (part.milli_per_gpu >= 1000 || part.gpus.empty()) continue;
    std::string share = FormatMilli(part.milli_per_gpu) + " of GPU " +
                        std::to_string(part.gpus[0]) + " on " + part.node;
    if (part.gpu_sharing == "mps") share += ", capped by the GPU's MPS daemon";
    if (part.gpu_sharing == "none")
      share += ", not capped (only its CUDA_MPS_* variables; its log says why)";
    line("gpu share", share);
  }
  std::string nodes;
  for (const auto& part : j.allocation) nodes += (nodes.empty() ? "" : ",") + part.node;
  line("node list", nodes);
  if (j.master_port > 0) line("master port", std::to_string(j.master_port));
  char cost[128];
  std::snprintf(cost, sizeof cost, "%.2f (%.2f an hour; %.2f GPU-hours)",
                static_cast<double>(j.cost_micros) / 1e6,
                static_cast<double>(j.cost_per_hour_micros) / 1e6, j.gpu_seconds / 3600);
  line("cost", cost);
}

int Show(const Connection& conn, const std::string& word, bool json) {
  auto ref = OneJobRef(word);
  if (!ref) return Usage(ref.error());
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto body = (*api)->Call("GET", "/v1/jobs/" + *ref);
  if (!body) return Fail(body.error());
  if (json) {
    std::cout << *body << "\n";
    return 0;
  }
  auto job = codec::DecodeJob(*body);
  if (!job) return Fail(job.error());
  const Job& j = *job;
  auto line = ShowLine;
  line("id", std::to_string(j.id.value));
  if (j.array_id.value != 0) {
    line("array task", TaskName(j.array_id, j.array_index) + " of array " + j.array_id.ToString() +
                           " (" + j.spec.array + ")");
  }
  line("name", j.spec.name);
  line("user", j.user);
  line("project", j.spec.project);
  line("pool", j.spec.pool);
  line("priority", std::string(PriorityName(j.spec.priority)));
  line("state", std::string(JobStateName(j.state)));
  if (j.reason != WaitReason::kNone)
    line("reason", WhyWaiting(j));
  else
    line("detail", j.reason_detail);
  ShowRequest(j);
  ShowRuns(j, *body);
  return 0;
}

// How long one long-poll of `baton wait` asks the server to hold it.
constexpr Duration kLongPoll = std::chrono::seconds(8);

int Wait(const Connection& conn, const std::vector<std::string>& words,
         const std::string& timeout) {
  // No --timeout: wait as long as it takes. (A limit of Duration::max() overflowed when
  // compared with the steady clock's nanoseconds, and `baton wait ID` gave up at once.)
  std::optional<Duration> limit;
  if (!timeout.empty()) {
    auto d = ParseDuration(timeout, "--timeout");
    if (!d) {
      std::cerr << "baton: " << d.error().message() << "\n";
      return 2;
    }
    limit = *d;
  }
  auto refs = ParseJobIds(words);
  if (!refs) return Usage(InvalidArgument("wait: " + refs.error().message()));
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  // An array's id stands for every task of the array: its tasks are looked at in one listing
  // per round, not one request each.
  std::vector<std::string> left;
  std::vector<int64_t> arrays;
  std::set<int64_t> plain;  // jobs named by id alone: looked at in listings of their id range
  for (const std::string& ref : *refs) {
    auto job = (*api)->GetJob(ref);
    if (!job) return Fail(job.error());
    if (ref.find('_') == std::string::npos && job->array_id == job->id)
      arrays.push_back(job->id.value);
    else if (ref.find('_') == std::string::npos && job->id.ToString() == ref)
      plain.insert(job->id.value);
    else
      left.push_back(ref);
  }
  auto start = std::chrono::steady_clock::now();
  auto sleep = std::chrono::milliseconds(20);
  bool all_ok = true;
  auto ended = [&](const Job& job, const std::string& name) {
    if (job.state != JobState::kSucceeded) {
      all_ok = false;
      std::cerr << "baton: job " << name << " " << JobStateName(job.state)
                << (job.reason_detail.empty() ? "" : " (" + job.reason_detail + ")") << "\n";
    }
  };
  while (!left.empty() || !arrays.empty() || !plain.empty()) {
    // `baton wait 1-200`: one listing of ids 1 to 200 a round, not 200 requests; a range
    // mostly of other jobs is cheaper asked job by job.
    if (!plain.empty()) {
      const int64_t first = *plain.begin(), last = *plain.rbegin();
      if (last - first + 1 > 4 * static_cast<int64_t>(plain.size()) + 1000) {
        for (int64_t id : plain) left.push_back(std::to_string(id));
        plain.clear();
      } else {
        auto jobs = (*api)->ListJobs({.first = first, .last = last});
        if (!jobs) return Fail(jobs.error());
        std::set<int64_t> listed;
        for (const Job& job : *jobs) {
          if (!plain.count(job.id.value)) continue;
          listed.insert(job.id.value);
          if (!IsTerminal(job.state)) continue;
          ended(job, job.id.ToString());
          plain.erase(job.id.value);
        }
        // Not in a listing (another user's job): asked for by id from now on.
        for (auto it = plain.begin(); it != plain.end();) {
          if (listed.count(*it)) {
            ++it;
            continue;
          }
          left.push_back(std::to_string(*it));
          it = plain.erase(it);
        }
      }
    }
    std::vector<std::string> still;
    for (const std::string& id : left) {
      auto job = (*api)->GetJob(id);
      if (!job) return Fail(job.error());
      if (IsTerminal(job->state))
        ended(*job, id);
      else
        still.push_back(id);
    }
    left.swap(still);
    std::vector<int64_t> going;
    size_t tasks_left = 0;
    for (int64_t array : arrays) {
      auto tasks = (*api)->ListJobs({.array = array});
      if (!tasks) return Fail(tasks.error());
      size_t running = std::count_if(tasks->begin(), tasks->end(),
                                     [](const Job& t) { return !IsTerminal(t.state); });
      if (running > 0) {
        going.push_back(array);
        tasks_left += running;
        continue;
      }
      for (const Job& t : *tasks) ended(t, TaskName(t.array_id, t.array_index));
    }
    arrays.swap(going);
    if (left.empty() && arrays.empty() && plain.empty()) break;
    if (limit && std::chrono::steady_clock::now() - start >= *limit) {
      std::cerr << "baton: timed out waiting for " << left.size() + plain.size() + tasks_left
                << " job(s)\n";
      return 1;
    }
    // The server tells when the one likely to end last has ended (an array: all its tasks;
    // else the highest id still going): GET .../wait holds the request until then, 8 s at
    // most (a client gives a server 10 s before it asks another). Then one more round above.
    // Less than a second left, or a server that cannot (an older one): a look every 20 ms,
    // backing off to 4 a second.
    const Duration remaining = limit ? *limit - std::chrono::duration_cast<Duration>(
                                                    std::chrono::steady_clock::now() - start)
                                     : kLongPoll;
    const std::string target = !arrays.empty()  ? std::to_string(arrays.back())
                               : !plain.empty() ? std::to_string(*plain.rbegin())
                                                : left.back();
    if (remaining >= std::chrono::seconds(1) &&
        (*api)
            ->Call("GET", "/v1/jobs/" + target + "/wait?timeout=" +
                              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                 std::min<Duration>(remaining, kLongPoll))
                                                 .count()))
            .has_value()) {
      continue;
    }
    std::this_thread::sleep_for(std::min<Duration>(sleep, std::max<Duration>(remaining, {})));
    sleep = std::min<std::chrono::milliseconds>(sleep * 2, std::chrono::milliseconds(250));
  }
  return all_ok ? 0 : 1;
}

int Nodes(const Connection& conn, bool json) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto body = (*api)->Call("GET", "/v1/nodes");
  if (!body) return Fail(body.error());
  if (json) {
    std::cout << *body << "\n";
    return 0;
  }
  auto nodes = codec::DecodeNodeList(*body);
  if (!nodes) return Fail(nodes.error());
  Table t({"NAME", "STATE", "POOL", "GPUS", "MODEL", "BUSY", "DRAINED", "CPUS", "MEMORY",
           "TOPOLOGY", "LAST SEEN", "NOTE"});
  for (const NodeStatus& n : *nodes) {
    int busy = 0, drained = 0;
    std::string note = n.drain_reason;
    for (const auto& jobs : n.gpu_jobs) busy += jobs.empty() ? 0 : 1;
    for (size_t g = 0; g < n.gpu_drain_reasons.size(); ++g) {
      if (n.gpu_drain_reasons[g].empty()) continue;
      ++drained;
      if (note.empty()) note = "GPU " + std::to_string(g) + ": " + n.gpu_drain_reasons[g];
    }
    // Its agent runs no job of root's (no --allow-root-jobs): said, as the scheduler skips it.
    if (n.info.refuses_root_jobs) note += (note.empty() ? "" : "; ") + std::string("no root jobs");
    // A spot node runs preemptible jobs only.
    if (n.info.spot) note += (note.empty() ? "" : "; ") + std::string("spot");
    // Its GPUs' fractions go to one user at a time, each GPU's MPS daemon serving them.
    if (n.info.mps) note += (note.empty() ? "" : "; ") + std::string("MPS");
    // Its MIG GPUs' instances follow the queue; those being changed now are named.
    if (!n.info.mig_gpus.empty()) {
      std::string changing;
      for (int physical : n.mig_reconfiguring)
        changing += (changing.empty() ? "GPU " : ", GPU ") + std::to_string(physical);
      note += (note.empty() ? "" : "; ") + std::string("MIG re-planned") +
              (changing.empty() ? "" : ": " + changing + " reconfiguring");
    }
    // Another spot node of its pool was reclaimed: none of its GPUs taken for a while.
    if (n.cooling_until) {
      note += (note.empty() ? "" : "; ") + std::string("no new jobs until ") +
              FormatRfc3339(*n.cooling_until) + " (reclaim cool-off)";
    }
    // Autoscaling's: its template, since when in its state or idle, and why.
    if (!n.template_name.empty()) {
      std::string scaled = "autoscaled (" + n.template_name + ")";
      if (n.idle_since) {
        scaled += ": idle since " + FormatRfc3339(*n.idle_since);
      } else if (n.state_since && n.state != NodeState::kReady) {
        scaled +=
            ": " + std::string(NodeStateName(n.state)) + " since " + FormatRfc3339(*n.state_since);
      }
      if (!n.scaling_reason.empty() && n.state != NodeState::kReady)
        scaled += " (" + n.scaling_reason + ")";
      note = scaled + (note.empty() ? "" : "; ") + note;
    }
    const auto devices = std::count_if(n.info.gpus.begin(), n.info.gpus.end(),
                                       [](const Gpu& g) { return !g.vacant; });
    std::string model = n.info.gpus.empty() ? "-" : n.info.gpus[0].model;
    t.Add({n.info.name, std::string(NodeStateName(n.state)), n.info.pool, std::to_string(devices),
           model, std::to_string(busy), std::to_string(drained), std::to_string(n.info.cpus),
           FormatSize(n.info.memory_bytes), std::string(GpuTopologyName(n.info.topology)),
           n.last_seen == TimePoint{} ? "-" : Age(n.last_seen) + " ago", note});
  }
  t.Print(std::cout);
  return 0;
}

// `baton drain NODE[/GPU[,GPU...]]` and `baton undrain ...`.
int Drain(const Connection& conn, const std::string& target, const std::string& reason,
          bool drain) {
  std::string node = target;
  std::string body = "{";
  if (size_t slash = target.find('/'); slash != std::string::npos) {
    node = target.substr(0, slash);
    std::string list = target.substr(slash + 1);
    std::string gpus;
    size_t i = 0;
    while (i <= list.size()) {
      size_t j = list.find(',', i);
      if (j == std::string::npos) j = list.size();
      std::string one = list.substr(i, j - i);
      if (one.empty() || one.size() > 4 ||
          one.find_first_not_of("0123456789") != std::string::npos) {
        return Usage(InvalidArgument("NODE/GPU: \"" + list.substr(0, 32) +
                                     "\" is not a GPU index list such as 0 or 2,3"));
      }
      gpus += (gpus.empty() ? "" : ",") + one;
      i = j + 1;
    }
    body += "\"gpus\": [" + gpus + "]";
  }
  if (!IsValidNodeName(node))
    return Usage(InvalidArgument("NODE: \"" + node.substr(0, 64) + "\" is not a node name"));
  if (!reason.empty())
    body += std::string(body.size() > 1 ? ", " : "") + "\"reason\": " + codec::EncodeString(reason);
  body += "}";
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto res = (*api)->Call("POST", "/v1/nodes/" + node + (drain ? "/drain" : "/undrain"), body);
  if (!res) return Fail(res.error());
  return 0;
}

// `baton node revoke NAME`: the node's credential stops working at once, for good.
int NodeRevoke(const Connection& conn, const std::string& node) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto res = (*api)->Call("POST", "/v1/nodes/" + QueryEscape(node) + "/revoke", "");
  if (!res) return Fail(res.error());
  std::cerr << "node " << node
            << ": its credential is revoked; its agent is refused from now on, and its jobs are "
               "requeued once the node times out. To bring it back: delete the agent's "
               "DATA/credential and start it with a join token\n";
  return 0;
}

// `baton config check FILE`: the server's configuration file checked as `baton server` would
// read it; exit 0 and "FILE: ok", or 2 with the file, line and key of the first problem.
int ConfigCheck(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Usage(NotFound(path + ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  auto cfg = codec::DecodeServerConfig(text.str(), path);
  if (!cfg) return Usage(cfg.error());
  std::cout << path << ": ok (" << cfg->policy.projects.size() << " projects, "
            << cfg->policy.users.size() << " users, " << cfg->policy.pools.size() << " pools)\n";
  return 0;
}

// The groups of client commands, in the order `baton --help` lists them. Each command's flags
// live in shared pointers its callback holds, so that they outlive the parse.

// Commands on jobs: jobs, show, logs, cancel, hold, release, wait.
void AddJobCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  {
    auto o = std::make_shared<JobsOptions>();
    CLI::App* sub = app.add_subcommand(
        "jobs", "list jobs (pending, held and running), or the history (--all, --since)");
    AddConnectionFlags(sub, *conn);
    sub->add_option("--state", o->state, "comma-separated states, e.g. running,pending");
    CLI::Option* user = sub->add_option("--user", o->user, "only this user's jobs");
    sub->add_flag("--me", o->me, "only your own jobs (your token's user), as squeue --me")
        ->excludes(user);
    sub->add_option("--project", o->project, "only this project's jobs");
    sub->add_option("--name", o->name, "only jobs of this name");
    sub->add_flag("-a,--all", o->all, "include finished jobs (the history, as sacct)");
    sub->add_option("-S,--since", o->since,
                    "jobs not ended before this: 2026-11-20, 2026-11-20T09:00:00Z, or -7d, -12h "
                    "(implies --all)");
    sub->add_option("-E,--until", o->until, "jobs submitted before this (same forms)");
    sub->add_option("-o,--format", o->format,
                    "columns, e.g. id,name,state,elapsed (id name user project pool priority "
                    "state gpus gpu_type nodes cpus memory submitted start end elapsed timelimit "
                    "restarts exitcode age where command)");
    sub->add_flag("--expand", o->expand,
                  "a job array's tasks a line each (12_7), instead of one line per array");
    sub->add_flag("--json", o->json, "print JSON");
    sub->callback([=] { *exit_code = Jobs(*conn, *o); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("show", "show one job, with why it waits");
    AddConnectionFlags(sub, *conn);
    sub->add_option("id", *id, "job id, or a task of an array (12_7: task 7 of array 12)")
        ->required();
    sub->add_flag("--json", *json, "print JSON");
    sub->callback([=] { *exit_code = Show(*conn, *id, *json); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto follow = std::make_shared<bool>(false);
    auto node = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand(
        "logs", "print a job's output (every node's, each line labelled, for a multi-node job)");
    AddConnectionFlags(sub, *conn);
    sub->add_option("id", *id, "job id, or a task of an array (12_7)")->required();
    sub->add_flag("-f,--follow", *follow, "keep printing until the job ends");
    sub->add_option("--node", *node, "only this node's output, unlabelled");
    sub->callback([=] {
      auto ref = OneJobRef(*id);
      *exit_code = ref ? Logs(*conn, *ref, *follow, *node) : Usage(ref.error());
    });
  }
  AddActionCommands(app, conn, exit_code);
  {
    auto ids = std::make_shared<std::vector<std::string>>();
    auto timeout = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand("wait", "wait for jobs to end; exit 0 when all succeeded");
    AddConnectionFlags(sub, *conn);
    sub->add_option("ids", *ids,
                    "job ids, ranges, tasks (12_7); an array's id waits for all its tasks")
        ->required();
    sub->add_option("--timeout", *timeout, "give up after this long, e.g. 10m");
    sub->callback([=] { *exit_code = Wait(*conn, *ids, *timeout); });
  }
}

// Commands on nodes: nodes, drain, undrain.
void AddNodeCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  {
    auto json = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("nodes", "list nodes and their GPUs");
    AddConnectionFlags(sub, *conn);
    sub->add_flag("--json", *json, "print JSON");
    sub->callback([=] { *exit_code = Nodes(*conn, *json); });
  }
  for (bool drain : {true, false}) {
    auto target = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    CLI::App* sub =
        app.add_subcommand(drain ? "drain" : "undrain",
                           drain ? "stop placing new jobs on a node or some of its GPUs (admin)"
                                 : "let a drained node or GPU take jobs again (admin)");
    AddConnectionFlags(sub, *conn);
    sub->add_option("target", *target, "NODE or NODE/GPU[,GPU...]")->required();
    if (drain) sub->add_option("--reason", *reason, "why, shown by `baton nodes`");
    sub->callback([=] { *exit_code = Drain(*conn, *target, *reason, drain); });
  }
  CLI::App* node = app.add_subcommand("node", "nodes' credentials: join tokens, revocation");
  node->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  CLI::App* join = node->add_subcommand(
      "join-token", "a one-time token a new agent joins with, within a day (admin)");
  AddConnectionFlags(join, *conn);
  join->add_flag("--json", *json, "print JSON");
  join->callback([=] { *exit_code = TokenCreate(*conn, "", "join", "join", *json); });
  auto name = std::make_shared<std::string>();
  CLI::App* revoke =
      node->add_subcommand("revoke", "stop a node's credential working, for good (admin)");
  AddConnectionFlags(revoke, *conn);
  revoke->add_option("name", *name, "the node")->required();
  revoke->callback([=] { *exit_code = NodeRevoke(*conn, *name); });
}

// `baton config check` and `baton config sample`: no server involved.
void AddConfigCommands(CLI::App& app, int* exit_code) {
  CLI::App* config =
      app.add_subcommand("config", "the server's configuration file: check one, or print a sample");
  config->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  CLI::App* check = config->add_subcommand(
      "check", "check FILE as `baton server --config FILE` would (exit 2 if bad)");
  check->add_option("file", *file, "the YAML configuration file")->required();
  check->callback([=] { *exit_code = ConfigCheck(*file); });
  CLI::App* sample = config->add_subcommand(
      "sample", "print a configuration file with every section, to start from");
  sample->callback([=] {
    std::cout << ConfigSample();
    *exit_code = 0;
  });
}

}  // namespace

namespace {

using CommandTail = std::shared_ptr<std::optional<std::vector<std::string>>>;

// The groups of client commands, in the order `baton --help` lists them, with the commands each
// adds (a test checks the names against what each adds).
struct CommandGroup {
  std::vector<std::string_view> names;
  std::function<void()> add;
};

std::vector<CommandGroup> ClientGroups(CLI::App* app, int* exit_code,
                                       const std::shared_ptr<Connection>& conn,
                                       const CommandTail& tail, const FlagFilter& submit_flags) {
  // (Each captures what it adds the commands with by value: they outlive this call. `app` is
  // null where only the names are asked.)
  return {
      {{"submit"}, [=] { AddSubmitCommand(*app, conn, exit_code, tail, submit_flags); }},
      {{"resubmit"}, [=] { AddResubmitCommand(*app, conn, exit_code); }},
      {{"update"}, [=] { AddJobUpdateCommand(*app, conn, exit_code); }},
      {{"run", "alloc", "attach", "sessions", "forward"},
       [=] { AddSessionCommands(*app, conn, exit_code, tail); }},
      {{"jobs", "show", "logs", "cancel", "hold", "release", "wait"},
       [=] { AddJobCommands(*app, conn, exit_code); }},
      {{"crons"}, [=] { AddCronCommands(*app, conn, exit_code); }},
      {{"size"}, [=] { AddSizeCommand(*app, conn, exit_code); }},
      {{"nodes", "drain", "undrain", "node"}, [=] { AddNodeCommands(*app, conn, exit_code); }},
      {{"config"}, [=] { AddConfigCommands(*app, exit_code); }},
      {{"token"}, [=] { AddTokenCommands(*app, conn, exit_code); }},
      {{"queue", "gpus", "usage", "events", "top"},
       [=] { AddViewCommands(*app, conn, exit_code); }},
      {{"help", "version"}, [=] { AddParserCommands(*app, exit_code); }},
  };
}

}  // namespace

std::vector<std::string> ClientCommandNames() {
  int code = 0;
  std::vector<std::string> names;
  // No app to add them to: asked before each command is parsed, its names are all it needs.
  for (const CommandGroup& g : ClientGroups(nullptr, &code, nullptr, nullptr, {}))
    names.insert(names.end(), g.names.begin(), g.names.end());
  return names;
}

bool IsClientCommand(const std::string& word) {
  if (word == "help") return false;
  int code = 0;
  for (const CommandGroup& g : ClientGroups(nullptr, &code, nullptr, nullptr, {})) {
    if (std::ranges::find(g.names, word) != g.names.end()) return true;
  }
  return false;
}

bool IsServerCommand(std::string_view word) {
  return word == "up" || word == "server" || word == "agent" || word == "sim";
}

bool AddClientCommands(CLI::App& app, int* exit_code,
                       std::optional<std::vector<std::string>> command_tail, std::string_view only,
                       const std::vector<std::string>& words) {
  auto tail = std::make_shared<std::optional<std::vector<std::string>>>(std::move(command_tail));
  auto conn = std::make_shared<Connection>();
  // The connection flags, before the command (`baton --server URL jobs`) as after it; not
  // before it when the words name the command first (its own take them).
  const size_t command_at = CommandIndex(words);
  const bool command_first = command_at == 1 && command_at < words.size() && words[1] == only;
  if (!command_first) AddConnectionFlags(&app, *conn);
  // `baton submit` alone: only the spec flags its words name (the one command run in loops).
  FlagFilter submit_flags = only == "submit" ? FlagFilter::Of(words) : FlagFilter{};
  std::vector<CommandGroup> groups = ClientGroups(&app, exit_code, conn, tail, submit_flags);
  // (`baton help submit` looks the command up among all of them.)
  for (const CommandGroup& g : groups) {
    if (only != "help" && std::ranges::find(g.names, only) != g.names.end()) {
      g.add();
      return true;
    }
  }
  for (const CommandGroup& g : groups) g.add();
  return false;
}

}  // namespace baton::cli
