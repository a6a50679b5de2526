#include "cli/crons.h"

#include <CLI/CLI.hpp>
#include <ctime>
#include <iostream>

#include "cli/history.h"
#include "cli/submit.h"
#include "cli/table.h"
#include "cli/views.h"
#include "codec/json_codec.h"

namespace baton::cli {
namespace {

// "2026-11-26 03:00 CET": the schedule's minutes read on this machine's clock.
std::string LocalMinute(TimePoint t) {
  std::time_t s = static_cast<std::time_t>(ToMillis(t) / 1000);
  std::tm tm{};
  localtime_r(&s, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M %Z", &tm);
  return std::string(buf, n);
}

std::string CommandText(const Job& j) {
  std::string text;
  for (const std::string& word : ShownCommand(j.spec)) text += (text.empty() ? "" : " ") + word;
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// Where the series stands: the run waiting for its time (and when), or running.
std::string NextText(const CronEntry& e) {
  const Job& j = e.current;
  if (j.state == JobState::kRunning) return "running now";
  if (j.state == JobState::kHeld) return "held";
  if (j.spec.begin) return LocalMinute(*j.spec.begin);
  return "-";
}

std::string LastText(const CronEntry& e) {
  if (!e.last) return "-";
  const Job& j = *e.last;
  std::string text = j.id.ToString() + " " + std::string(JobStateName(j.state));
  if (j.state == JobState::kFailed && j.exit_code)
    text += " (exit " + std::to_string(*j.exit_code) + ")";
  return text;
}

int List(const Connection& conn, const std::string& user, bool json) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  std::string target = "/v1/crons";
  if (!user.empty()) target += "?user=" + QueryEscape(user);
  auto body = (*api)->Call("GET", target);
  if (!body) return Fail(body.error());
  if (json) {
    std::cout << *body << "\n";
    return 0;
  }
  auto crons = codec::DecodeCronList(*body);
  if (!crons) return Fail(crons.error());
  if (crons->empty()) {
    std::cout << "no recurring jobs (submit one with --schedule \"0 3 * * *\")\n";
    return 0;
  }
  Table t({"ID", "USER", "NAME", "SCHEDULE", "NEXT RUN", "JOB", "RUNS", "LAST RUN", "COMMAND"});
  for (const CronEntry& e : *crons) {
    const Job& j = e.current;
    t.Add({e.id.ToString(), j.user, j.spec.name.empty() ? "-" : j.spec.name, j.spec.schedule,
           NextText(e), j.id.ToString(), std::to_string(e.runs), LastText(e), CommandText(j)});
  }
  t.Print(std::cout);
  return 0;
}

int Delete(const Connection& conn, const std::vector<int64_t>& ids) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  int code = 0;
  for (int64_t id : ids) {
    auto res = (*api)->Call("DELETE", "/v1/crons/" + std::to_string(id));
    if (!res) {
      std::cerr << "baton: " << res.error().message() << "\n";
      code = 1;
      continue;
    }
    std::cout << "recurring job " << id << ": deleted";
    auto entry = codec::DecodeCronList("{\"crons\": [" + *res + "]}");
    if (entry && !entry->empty() && entry->front().current.state == JobState::kRunning) {
      std::cout << " (its run, job " << entry->front().current.id.ToString()
                << ", goes on to its end)";
    }
    std::cout << "\n";
  }
  return code;
}

}  // namespace

void AddCronCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  auto user = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* crons = app.add_subcommand(
      "crons",
      "recurring jobs (submit --schedule): next run, last run; `crons delete ID` stops one");
  AddConnectionFlags(crons, *conn);
  crons->add_option("--user", *user, "only this user's");
  crons->add_flag("--json", *json, "print JSON");
  crons->require_subcommand(0, 1);
  auto ids = std::make_shared<std::vector<int64_t>>();
  CLI::App* del = crons->add_subcommand(
      "delete", "stop recurring jobs: the waiting run is cancelled, a running one goes on");
  del->alias("rm");
  AddConnectionFlags(del, *conn);
  del->add_option("id", *ids, "the recurring job's id (the ID column of `baton crons`)")
      ->required()
      ->check(CLI::PositiveNumber);
  del->callback([=] { *exit_code = Delete(*conn, *ids); });
  crons->callback([=] {
    if (crons->get_subcommands().empty()) *exit_code = List(*conn, *user, *json);
  });
}

}  // namespace baton::cli
