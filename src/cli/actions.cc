#include "cli/actions.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <iostream>
#include <set>

#include "cli/submit.h"
#include "codec/json_codec.h"
#include "core/text.h"

namespace baton::cli {
namespace {

constexpr int64_t kMaxRange = 100'000;  // ids one range may name

// A job id, or (`zero`) a task index, which may be 0.
Result<int64_t> ParseId(std::string_view text, std::string_view word, bool zero = false) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < (zero ? 0 : 1)) {
    return Err(InvalidArgument("\"" + std::string(word.substr(0, 64)) +
                               "\" is not a job id or a range of them such as 10-20"));
  }
  return v;
}

// What each action does, in the words of its output, and the states it applies to unless
// --state says otherwise.
struct ActionWords {
  const char* verb;  // "cancel"
  const char* done;  // "cancelled"
  const char* states;
};

ActionWords WordsOf(const std::string& action) {
  if (action == "hold") return {"hold", "held", "pending"};
  if (action == "release") return {"release", "released", "held"};
  return {"cancel", "cancelled", "pending,held,running"};
}

// The jobs the selectors pick (narrowed to `ids` when some are given), in id order. A bulk
// cancel spares the runs of recurring jobs (cancelling one ends its series), as scancel spares
// scrontab's, unless --cron: `*spared` counts them.
Result<std::vector<std::string>> Select(ApiClient& api, const JobSelection& s, const ActionWords& w,
                                        const std::vector<std::string>& ids, size_t* spared) {
  ApiClient::JobQuery q{
      .states = s.state.empty() ? w.states : s.state, .user = s.user, .project = s.project};
  // Without --user, the selectors pick your own jobs, never everyone's.
  if (q.user.empty()) {
    ASSIGN_OR_RETURN(q.user, api.WhoAmI());
  }
  ASSIGN_OR_RETURN(std::vector<Job> jobs, api.ListJobs(q));
  std::set<std::string> wanted(ids.begin(), ids.end());
  std::vector<std::string> out;
  for (const Job& j : jobs) {
    if (!s.name.empty() && j.spec.name != s.name) continue;
    std::string task = j.array_id.value != 0 ? TaskName(j.array_id, j.array_index) : "";
    if (!wanted.empty() && wanted.count(j.id.ToString()) == 0 && wanted.count(task) == 0) continue;
    if (std::string_view(w.verb) == "cancel" && j.cron_id.value != 0 && !s.cron) {
      ++*spared;
      continue;
    }
    out.push_back(j.id.ToString());
  }
  return out;
}

int Act(const Connection& conn, const JobSelection& s, const std::string& action) {
  ActionWords w = WordsOf(action);
  auto ids = ParseJobIds(s.ids);
  if (!ids) return Usage(InvalidArgument(std::string(w.verb) + ": " + ids.error().message()));
  if (ids->empty() && !s.Selects()) {
    return Usage(InvalidArgument(std::string(w.verb) +
                                 ": name jobs by id (12, 10-20) or select them with --all, "
                                 "--user, --name, --state or --project"));
  }
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  std::vector<std::string> targets = *ids;
  if (s.Selects()) {
    size_t spared = 0;
    auto picked = Select(**api, s, w, *ids, &spared);
    if (!picked) return Fail(picked.error());
    targets = std::move(*picked);
    if (spared > 0) {
      std::cout << "spared " << spared << " run" << (spared == 1 ? "" : "s")
                << " of recurring jobs (--cron cancels them, and ends their schedules)\n";
    }
    if (targets.empty()) {
      if (spared == 0) std::cout << "no matching jobs\n";
      return 0;
    }
  }
  std::vector<std::string> failed;
  for (const std::string& id : targets) {
    auto res = (*api)->Call("POST", "/v1/jobs/" + id + "/" + action, "{}");
    if (res) {
      // A job that had already ended stays as it was: say so rather than "cancelled".
      auto job = codec::DecodeJob(*res);
      if (job && IsTerminal(job->state) && job->state != JobState::kCancelled) {
        std::cout << "job " << id << ": already " << JobStateName(job->state) << "\n";
      } else if (job && job->cron_stopped && job->state == JobState::kCancelled) {
        std::cout << "job " << id << ": " << w.done << "; no more runs of recurring job "
                  << job->cron_id.ToString() << " (its schedule is deleted)\n";
      } else {
        std::cout << "job " << id << ": " << w.done << "\n";
      }
    } else {
      std::string why = res.error().message();
      std::string job = "job " + id;
      std::cerr << "baton: " << (why.starts_with(job + " ") ? why : job + ": " + why) << "\n";
      failed.push_back(id);
    }
  }
  if (failed.empty()) return 0;
  std::string list;
  for (size_t i = 0; i < failed.size() && i < 20; ++i) list += (i ? ", " : "") + failed[i];
  if (failed.size() > 20) list += ", ...";
  std::cerr << "baton: could not " << w.verb << " " << failed.size() << " of " << targets.size()
            << " job" << (targets.size() == 1 ? "" : "s") << ": " << list << "\n";
  return 1;
}

}  // namespace

Result<std::vector<std::string>> ParseJobIds(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& word : words) {
    for (std::string_view part : SplitTrimmed(word, ',')) {
      if (part.empty()) continue;
      std::string prefix;  // "12_" for tasks of array 12
      if (size_t under = part.find('_'); under != std::string_view::npos) {
        ASSIGN_OR_RETURN(int64_t array, ParseId(part.substr(0, under), word));
        prefix = std::to_string(array) + "_";
        part.remove_prefix(under + 1);
      }
      size_t dash = part.find('-');
      int64_t lo = 0, hi = 0;
      if (dash == std::string_view::npos) {
        ASSIGN_OR_RETURN(lo, ParseId(part, word, !prefix.empty()));
        hi = lo;
      } else {
        ASSIGN_OR_RETURN(lo, ParseId(part.substr(0, dash), word, !prefix.empty()));
        ASSIGN_OR_RETURN(hi, ParseId(part.substr(dash + 1), word, !prefix.empty()));
        if (hi < lo) {
          return Err(InvalidArgument("\"" + std::string(part) + "\": a range goes up, as 10-20"));
        }
        if (hi - lo >= kMaxRange) {
          return Err(InvalidArgument("\"" + std::string(part) + "\": at most " +
                                     std::to_string(kMaxRange) + " ids in one range"));
        }
      }
      for (int64_t id = lo; id <= hi; ++id) {
        std::string name = prefix + std::to_string(id);
        if (seen.insert(name).second) out.push_back(std::move(name));
      }
    }
  }
  return out;
}

void AddActionCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  for (const char* action : {"cancel", "hold", "release"}) {
    auto s = std::make_shared<JobSelection>();
    ActionWords w = WordsOf(action);
    std::string help = std::string(action) +
                       " jobs: by id or range (12 10-20), or all of yours (--all) or those the "
                       "selectors pick";
    CLI::App* sub = app.add_subcommand(action, help);
    AddConnectionFlags(sub, *conn);
    sub->add_option("ids", s->ids, "job ids and ranges, e.g. 12 15 20-30");
    sub->add_flag("--all", s->all, "all your jobs (" + std::string(w.states) + ")");
    sub->add_option("--user", s->user, "that user's jobs instead of yours (admins)");
    sub->add_option("--name", s->name, "jobs of this name");
    sub->add_option("--state", s->state,
                    "comma-separated states (default: " + std::string(w.states) + ")");
    sub->add_option("--project", s->project, "jobs of this project");
    if (std::string_view(action) == "cancel") {
      sub->add_flag("--cron", s->cron,
                    "with --all or a selector: the runs of recurring jobs too, which ends their "
                    "schedules (spared otherwise, as scancel spares scrontab's)");
    }
    std::string a = action;
    sub->callback([=] { *exit_code = Act(*conn, *s, a); });
  }
}

}  // namespace baton::cli
