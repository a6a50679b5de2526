// `baton update ID ...` (PATCH /v1/jobs/{id}), as Slurm's `scontrol update`: a waiting job's
// fields, a running job's time limit; flags or Slurm's KEY=VALUE words.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli/actions.h"
#include "cli/client.h"
#include "cli/parser.h"
#include "cli/sbatch.h"
#include "cli/submit.h"
#include "codec/json_codec.h"
#include "core/job.h"
#include "core/time.h"

namespace baton::cli {

namespace {

struct UpdateFlags {
  std::string time, priority, name, project, pool, begin, dependency;
  std::vector<int64_t> after, after_any, after_notok;
  int retries = -1;
  std::vector<std::string> words;  // the job, and Slurm's KEY=VALUE (scontrol update)
};

// Slurm's `scontrol update` words as the flags: JobId=12 TimeLimit=4:00:00 JobName=x
// Partition=p Account=a QOS=high Dependency=afterok:11 StartTime=14:00.
Status ReadUpdateWords(UpdateFlags* f, std::string* id) {
  for (const std::string& word : f->words) {
    size_t eq = word.find('=');
    if (eq == std::string::npos) {
      if (!id->empty()) return InvalidArgument("update: one job at a time (got " + word + ")");
      *id = word;
      continue;
    }
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (key == "jobid" || key == "job")
      *id = value;
    else if (key == "timelimit")
      f->time = value;
    else if (key == "jobname" || key == "name")
      f->name = value;
    else if (key == "partition")
      f->pool = value;
    else if (key == "account")
      f->project = value;
    else if (key == "qos")
      f->priority = value;
    else if (key == "dependency")
      f->dependency = value;
    else if (key == "starttime")
      f->begin = value;
    else
      return InvalidArgument("update: " + key +
                             "=: Baton changes TimeLimit, JobName, Partition, "
                             "Account, QOS (low, normal, high, critical), Dependency and "
                             "StartTime (or --time, --name, --pool, --project, --priority, -d, "
                             "--begin)");
  }
  if (id->empty()) return InvalidArgument("update: which job? (baton update ID --time 4h)");
  return Status::Ok();
}

// The body of PATCH /v1/jobs/ID, and the words that say what changes.
Result<std::pair<std::string, std::string>> UpdateBody(const UpdateFlags& f) {
  std::string body, said;
  auto add = [&](const std::string& field, const std::string& json, const std::string& shown) {
    body += (body.empty() ? "" : ",") + codec::EncodeString(field) + ":" + json;
    said += (said.empty() ? "" : ", ") + field + " " + shown;
  };
  if (!f.time.empty()) {
    bool minutes = f.time.find_first_not_of("0123456789") == std::string::npos;
    ASSIGN_OR_RETURN(Duration d, ParseDuration(minutes ? f.time + "m" : f.time, "--time"));
    add("time_limit", std::to_string(d.count() / 1000.0), FormatDuration(d));
  }
  if (!f.priority.empty()) {
    ASSIGN_OR_RETURN(Priority p, ParsePriority(f.priority));
    add("priority", codec::EncodeString(PriorityName(p)), std::string(PriorityName(p)));
  }
  for (const auto& [field, value] :
       {std::pair{"name", &f.name}, std::pair{"project", &f.project}, std::pair{"pool", &f.pool}}) {
    if (!value->empty()) add(field, codec::EncodeString(*value), *value);
  }
  if (!f.begin.empty()) {
    ASSIGN_OR_RETURN(
        TimePoint at,
        ParseBeginTime(f.begin,
                       std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()),
                       "--begin"));
    add("begin", codec::EncodeString(FormatRfc3339(at)), FormatRfc3339(at));
  }
  std::vector<int64_t> after = f.after, after_any = f.after_any, after_notok = f.after_notok;
  if (!f.dependency.empty()) {
    ASSIGN_OR_RETURN(std::vector<std::string> words, Dependencies(f.dependency));
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i] == "--singleton")
        return Err(InvalidArgument("-d singleton: set at submit only"));
      auto& to = words[i] == "--after"       ? after
                 : words[i] == "--after-any" ? after_any
                                             : after_notok;
      std::stringstream ids(words[++i]);
      for (std::string id; std::getline(ids, id, ',');) to.push_back(std::stoll(id));
    }
  }
  for (const auto& [field, ids] : {std::pair{"after", &after}, std::pair{"after_any", &after_any},
                                   std::pair{"after_notok", &after_notok}}) {
    if (ids->empty()) continue;
    std::string list, shown;
    for (int64_t id : *ids) {
      list += (list.empty() ? "" : ",") + std::to_string(id);
      shown += (shown.empty() ? "" : ",") + std::to_string(id);
    }
    add(field, "[" + list + "]", shown);
  }
  if (f.retries >= 0) add("retries", std::to_string(f.retries), std::to_string(f.retries));
  if (body.empty()) {
    return Err(
        InvalidArgument("update: nothing to change (e.g. --time 4h, --priority high, "
                        "--name x, TimeLimit=4:00:00)"));
  }
  return std::pair{"{" + body + "}", said};
}

// `baton update ID ...`: a waiting job's fields, a running job's time limit (PATCH).
}  // namespace

void AddJobUpdateCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  auto f = std::make_shared<UpdateFlags>();
  CLI::App* sub = app.add_subcommand(
      "update", "change a waiting job, or a running job's time limit (as scontrol update)");
  SetUsage(sub,
           "baton update ID [OPTIONS]   e.g. baton update 12 --time 4h, baton update 12_3 -p "
           "high\n       baton update JobId=12 TimeLimit=4:00:00   (Slurm's words)");
  AddConnectionFlags(sub, *conn);
  sub->add_option("words", f->words,
                  "the job (12, 12_3, or an array's 12: every task), and "
                  "Slurm's KEY=VALUE");
  sub->add_option("-t,--time", f->time,
                  "time limit (a number alone is minutes): a running job's too, within its "
                  "pool's maximum");
  sub->add_option("-p,--priority,--qos", f->priority, "low, normal, high or critical");
  sub->add_option("--name,-J,--job-name", f->name, "job name");
  sub->add_option("--project,-A,--account", f->project, "project");
  sub->add_option("--pool,--partition", f->pool, "pool");
  sub->add_option("--begin", f->begin, "not before TIME (as submit's --begin)");
  sub->add_option("--after", f->after, "wait for these jobs to succeed (replaces the list)")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_option("--after-any", f->after_any, "wait for these jobs to end")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_option("--after-notok", f->after_notok, "wait for these jobs to fail")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_option("-d,--dependency", f->dependency, "Slurm's: afterok:ID[:ID],afterany:ID,...");
  sub->add_option("--retries", f->retries, "times a failed job is requeued")
      ->check(CLI::Range(0, 100));
  sub->callback([f, conn, exit_code] {
    std::string id;
    if (Status st = ReadUpdateWords(f.get(), &id); !st.ok()) {
      *exit_code = Usage(st);
      return;
    }
    auto body = UpdateBody(*f);
    if (!body) {
      *exit_code = Usage(body.error());
      return;
    }
    auto refs = ParseJobIds({id});
    if (!refs || refs->size() != 1) {
      *exit_code = Usage(InvalidArgument("update: \"" + id.substr(0, 64) +
                                         "\" is not one job id (12) or task of an array (12_3)"));
      return;
    }
    auto api = ApiClient::Connect(*conn);
    if (!api) {
      *exit_code = Fail(api.error());
      return;
    }
    auto res = (*api)->Call("PATCH", "/v1/jobs/" + refs->front(), body->first);
    if (!res) {
      *exit_code = Fail(res.error());
      return;
    }
    std::cout << "job " << refs->front() << ": " << body->second << "\n";
    *exit_code = 0;
  });
}

}  // namespace baton::cli
