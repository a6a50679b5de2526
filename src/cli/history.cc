#include "cli/history.h"

#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>

#include "cli/table.h"
#include "cli/views.h"
#include "codec/json_codec.h"
#include "core/quantity.h"
#include "core/text.h"

namespace baton::cli {
namespace {

std::string Stamp(const std::optional<TimePoint>& t) {
  return t ? FormatRfc3339(*t).substr(0, 19) + "Z" : "-";
}

// Why a job waits, where it runs, or how it ended.
std::string WhereOrWhy(const Job& j) {
  if (j.state == JobState::kRunning) return AllocationText(j);
  if (j.state == JobState::kPending || j.state == JobState::kHeld)
    return std::string(WaitReasonName(j.reason));
  // Baton's own stops are not crashes: the state says what ended it.
  if (j.state == JobState::kCancelled) return "cancelled";
  if (j.state == JobState::kTimedOut) return "time limit";
  if (j.exit_code) return "exit " + std::to_string(*j.exit_code);
  if (j.exit_signal) return "signal " + SignalText(*j.exit_signal);
  return "";
}

struct Column {
  const char* name;    // as --format takes it
  const char* header;  // as the table shows it
  std::function<std::string(const Job&, TimePoint)> cell;
};

const std::vector<Column>& Columns() {
  static const std::vector<Column> columns = {
      {"id", "ID",
       [](const Job& j, TimePoint) {
         return j.array_id.value != 0 ? TaskName(j.array_id, j.array_index) : j.id.ToString();
       }},
      {"name", "NAME", [](const Job& j, TimePoint) { return j.spec.name; }},
      {"user", "USER", [](const Job& j, TimePoint) { return j.user; }},
      {"project", "PROJECT", [](const Job& j, TimePoint) { return j.spec.project; }},
      {"pool", "POOL", [](const Job& j, TimePoint) { return j.spec.pool; }},
      {"priority", "PRIORITY",
       [](const Job& j, TimePoint) { return std::string(PriorityName(j.spec.priority)); }},
      {"state", "STATE",
       [](const Job& j, TimePoint) { return std::string(JobStateName(j.state)); }},
      {"gpus", "GPUS",
       [](const Job& j, TimePoint) { return FormatMilli(j.spec.resources.milli_gpus); }},
      {"gpu_type", "GPU TYPE",
       [](const Job& j, TimePoint) {
         return j.spec.resources.gpu_type.empty() ? "-" : j.spec.resources.gpu_type;
       }},
      {"nodes", "NODES",
       [](const Job& j, TimePoint) { return std::to_string(j.spec.resources.nodes); }},
      {"cpus", "CPUS",
       [](const Job& j, TimePoint) {
         return j.spec.resources.cpus > 0 ? std::to_string(j.spec.resources.cpus) : "-";
       }},
      {"memory", "MEMORY",
       [](const Job& j, TimePoint) {
         return j.spec.resources.memory_bytes > 0 ? FormatSize(j.spec.resources.memory_bytes) : "-";
       }},
      {"submitted", "SUBMITTED", [](const Job& j, TimePoint) { return Stamp(j.submitted_at); }},
      {"start", "START", [](const Job& j, TimePoint) { return Stamp(j.started_at); }},
      {"end", "END", [](const Job& j, TimePoint) { return Stamp(j.finished_at); }},
      {"elapsed", "ELAPSED", [](const Job& j, TimePoint now) { return Elapsed(j, now); }},
      {"timelimit", "TIME LIMIT",
       [](const Job& j, TimePoint) {
         return j.spec.time_limit.count() > 0 ? FormatDuration(j.spec.time_limit) : "-";
       }},
      {"restarts", "RESTARTS", [](const Job& j, TimePoint) { return std::to_string(j.restarts); }},
      {"exitcode", "EXIT",
       [](const Job& j, TimePoint) {
         return j.exit_code     ? std::to_string(*j.exit_code)
                : j.exit_signal ? "signal " + std::to_string(*j.exit_signal)
                                : "-";
       }},
      {"age", "AGE", [](const Job& j, TimePoint) { return Age(j.submitted_at); }},
      {"where", "WHERE/WHY", [](const Job& j, TimePoint) { return WhereOrWhy(j); }},
      {"command", "COMMAND",
       [](const Job& j, TimePoint) {
         std::string cmd;
         for (const auto& a : ShownCommand(j.spec)) cmd += (cmd.empty() ? "" : " ") + a;
         return cmd;
       }},
  };
  return columns;
}

// Slurm's names for the same columns, so that an sacct --format line mostly works.
std::string Canonical(std::string name) {
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (name == "jobid") return "id";
  if (name == "jobname") return "name";
  if (name == "partition") return "pool";
  if (name == "account") return "project";
  if (name == "reason" || name == "nodelist") return "where";
  if (name == "submit") return "submitted";
  return name;
}

Result<std::vector<const Column*>> PickColumns(const std::string& format, bool history) {
  std::string names = !format.empty() ? format
                      : history       ? "id,name,user,project,state,gpus,start,end,elapsed,where"
                                      : "id,name,user,project,state,gpus,age,elapsed,where";
  std::vector<const Column*> picked;
  for (std::string_view word : SplitTrimmed(names, ',')) {
    std::string name = Canonical(std::string(word));
    const Column* found = nullptr;
    for (const Column& c : Columns()) {
      if (c.name == name) found = &c;
    }
    if (found == nullptr) {
      std::string valid;
      for (const Column& c : Columns()) valid += (valid.empty() ? "" : ", ") + std::string(c.name);
      return Err(InvalidArgument("--format: unknown column '" + std::string(word.substr(0, 32)) +
                                 "' (valid: " + valid + ")"));
    }
    picked.push_back(found);
  }
  return picked;
}

// One line for the tasks of a job array, as squeue folds them: "12_[0-99%8]", the count of
// tasks in each state, and the other columns of its first task.
std::vector<std::string> FoldedRow(const std::vector<const Column*>& columns,
                                   const std::vector<const Job*>& tasks, TimePoint now) {
  const Job& first = *tasks.front();
  std::map<JobState, int> states;
  for (const Job* t : tasks) states[t->state] += 1;
  std::string state;
  for (const auto& [s, n] : states)
    state += (state.empty() ? "" : " ") + std::to_string(n) + " " + std::string(JobStateName(s));
  std::vector<std::string> row;
  for (const Column* c : columns) {
    std::string name = c->name;
    if (name == "id") {
      row.push_back(first.array_id.ToString() + "_[" + first.spec.array + "]");
    } else if (name == "state") {
      row.push_back(state);
    } else if (name == "where" || name == "exitcode" || name == "start" || name == "end" ||
               name == "elapsed") {
      row.push_back(tasks.size() == 1 ? c->cell(first, now) : "-");
    } else {
      row.push_back(c->cell(first, now));
    }
  }
  return row;
}

}  // namespace

std::string SignalText(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) + " (" + std::to_string(sig) + ")"
                           : std::to_string(sig);
}

std::string AllocationText(const Job& j) {
  std::string out;
  for (const auto& part : j.allocation) {
    if (!out.empty()) out += " ";
    out += part.node + ":";
    for (size_t i = 0; i < part.gpus.size(); ++i)
      out += (i ? "," : "") + std::to_string(part.gpus[i]);
  }
  return out;
}

std::string Elapsed(const Job& j, TimePoint now) {
  if (!j.started_at) return "-";
  TimePoint end = j.finished_at ? *j.finished_at : now;
  if (!j.finished_at && j.state != JobState::kRunning) return "-";  // requeued, waiting again
  int64_t s = std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::seconds>(end - *j.started_at).count());
  char text[48];
  if (s >= 86400) {
    std::snprintf(text, sizeof text, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof text, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  }
  return text;
}

Result<TimePoint> ParseTimeArg(const std::string& text, const std::string& flag, TimePoint now) {
  if (text == "now") return now;
  if (text.starts_with("-")) {
    auto ago = ParseDuration(std::string_view(text).substr(1), flag);
    if (!ago) return Err(ago.error());
    return now - *ago;
  }
  std::string rfc = text;
  if (rfc.size() > 10 && rfc[10] == ' ') rfc[10] = 'T';   // 2026-11-20 09:00
  if (rfc.size() == 10) rfc += "T00:00:00Z";              // 2026-11-20
  if (rfc.size() == 16 && rfc[10] == 'T') rfc += ":00Z";  // 2026-11-20T09:00
  if (rfc.size() == 19 && rfc[10] == 'T') rfc += "Z";     // 2026-11-20T09:00:00
  auto t = ParseRfc3339(rfc);
  if (!t) {
    return Err(InvalidArgument(flag + ": \"" + text.substr(0, 40) +
                               "\" is not a time: use 2026-11-20, 2026-11-20T09:00:00Z, or a "
                               "time ago such as -7d or -12h"));
  }
  return *t;
}

int Jobs(const Connection& conn, const JobsOptions& o) {
  TimePoint now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  std::optional<TimePoint> since, until;
  if (!o.since.empty()) {
    auto t = ParseTimeArg(o.since, "--since", now);
    if (!t) return Usage(t.error());
    since = *t;
  }
  if (!o.until.empty()) {
    auto t = ParseTimeArg(o.until, "--until", now);
    if (!t) return Usage(t.error());
    until = *t;
  }
  bool history = o.all || since || until;
  auto columns = PickColumns(o.format, history);
  if (!columns) return Usage(columns.error());
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  std::string user = o.user;
  if (o.me) {
    auto me = (*api)->WhoAmI();
    if (!me) return Fail(me.error());
    user = *me;
  }
  auto listed =
      (*api)->ListJobs({.states = o.state.empty() && !history ? "pending,held,running" : o.state,
                        .user = user,
                        .project = o.project});
  if (!listed) return Fail(listed.error());
  std::vector<const Job*> jobs;
  for (const Job& j : *listed) {
    if (!o.name.empty() && j.spec.name != o.name) continue;
    if (until && j.submitted_at >= *until) continue;
    if (since && j.finished_at && *j.finished_at < *since) continue;
    jobs.push_back(&j);
  }
  if (o.json) {
    std::cout << codec::EncodeJobList(jobs, std::nullopt) << "\n";
    return 0;
  }
  std::vector<std::string> header;
  for (const Column* c : *columns) header.emplace_back(c->header);
  Table t(std::move(header));
  std::map<int64_t, std::vector<const Job*>> arrays;  // folded: the tasks of each array
  for (const Job* j : jobs) {
    if (!o.expand && j->array_id.value != 0) arrays[j->array_id.value].push_back(j);
  }
  for (const Job* j : jobs) {
    std::vector<std::string> row;
    auto folded = arrays.find(j->array_id.value);
    if (folded != arrays.end()) {
      if (folded->second.front() != j) continue;  // one line per array, at its first task
      row = FoldedRow(*columns, folded->second, now);
    } else {
      for (const Column* c : *columns) row.push_back(c->cell(*j, now));
    }
    t.Add(std::move(row));
  }
  t.Print(std::cout);
  return 0;
}

}  // namespace baton::cli
