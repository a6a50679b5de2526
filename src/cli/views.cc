#include "cli/views.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/history.h"
#include "cli/submit.h"
#include "cli/table.h"
#include "codec/json_codec.h"
#include "core/quantity.h"

namespace baton::cli {

namespace {

std::string Fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

// "[#####     ] 50%"
std::string Bar(int pct, int width) {
  int filled = std::clamp((pct * width + 50) / 100, 0, width);
  std::string bar = "[" + std::string(filled, '#') + std::string(width - filled, ' ') + "]";
  std::string num = std::to_string(pct) + "%";
  return bar + std::string(5 - std::min<size_t>(4, num.size()), ' ') + num;
}

std::string GiB(int64_t bytes) { return Fixed(static_cast<double>(bytes) / (1LL << 30), 1); }

struct Frame {
  std::vector<NodeStatus> nodes;
  std::vector<Job> running;
  std::vector<Job> queue;
  int64_t queued = 0;  // pending jobs in all (the queue shown may be cut)
};

// Each GPU's row: the node, index, model, state, gauges, and the jobs on it with their users.
Table GpuTable(const std::vector<NodeStatus>& nodes, const std::map<int64_t, const Job*>& jobs,
               bool bars, size_t max_rows, size_t* hidden) {
  Table t(bars ? std::vector<std::string>{"NODE", "GPU", "MODEL", "STATE", "UTIL", "MEMORY GiB",
                                          "TEMP", "JOBS"}
               : std::vector<std::string>{"NODE", "GPU", "MODEL", "STATE", "UTIL%", "MEM USED",
                                          "MEM TOTAL", "TEMP", "POWER", "JOBS"});
  size_t rows = 0;
  for (const NodeStatus& n : nodes) {
    for (size_t i = 0; i < n.info.gpus.size(); ++i) {
      if (n.info.gpus[i].vacant) continue;  // a place for a MIG instance, not a device
      if (rows++ >= max_rows) {
        ++*hidden;
        continue;
      }
      const Gpu& g = n.info.gpus[i];
      std::string state = n.state != NodeState::kReady ? std::string(NodeStateName(n.state)) : "ok";
      if (i < n.health.size() && n.health[i].state != GpuHealthState::kOk)
        state = GpuHealthStateName(n.health[i].state);
      if (!n.drain_reason.empty() ||
          (i < n.gpu_drain_reasons.size() && !n.gpu_drain_reasons[i].empty())) {
        state = "drained";
      }
      if (std::find(n.mig_reconfiguring.begin(), n.mig_reconfiguring.end(), g.physical) !=
          n.mig_reconfiguring.end())
        state = "reconfiguring";
      std::string owners;
      if (i < n.gpu_jobs.size()) {
        for (int64_t id : n.gpu_jobs[i]) {
          auto it = jobs.find(id);
          owners += (owners.empty() ? "" : " ") + std::to_string(id) +
                    (it != jobs.end() ? "(" + it->second->user + ")" : "");
        }
      }
      if (owners.empty()) owners = "-";
      const GpuSample* s = i < n.samples.size() ? &n.samples[i] : nullptr;
      std::string temp = s ? std::to_string(s->temperature_c) + "C" : "-";
      if (bars) {
        t.Add(
            {n.info.name, std::to_string(g.index), g.model, state,
             s ? Bar(s->utilization_pct, 10) : "-",
             s ? GiB(s->memory_used_bytes) + "/" + GiB(g.memory_bytes) : "-/" + GiB(g.memory_bytes),
             temp, owners});
      } else {
        t.Add({n.info.name, std::to_string(g.index), g.model, state,
               s ? std::to_string(s->utilization_pct) : "-",
               s ? FormatSize(s->memory_used_bytes) : "-", FormatSize(g.memory_bytes), temp,
               s ? std::to_string(s->power_w) + "W" : "-", owners});
      }
    }
  }
  return t;
}

Result<Frame> Fetch(ApiClient& api, int queue_rows) {
  Frame f;
  ASSIGN_OR_RETURN(std::string nodes, api.Call("GET", "/v1/nodes"));
  ASSIGN_OR_RETURN(f.nodes, codec::DecodeNodeList(nodes));
  std::optional<int64_t> next;
  ASSIGN_OR_RETURN(std::string running, api.Call("GET", "/v1/jobs?state=running&limit=1000"));
  ASSIGN_OR_RETURN(f.running, codec::DecodeJobList(running, &next));
  ASSIGN_OR_RETURN(std::string queue,
                   api.Call("GET", "/v1/queue?limit=" + std::to_string(std::max(1, queue_rows))));
  ASSIGN_OR_RETURN(f.queue, codec::DecodeJobList(queue, &next));
  f.queued = static_cast<int64_t>(f.queue.size());
  if (next) {
    // More wait than are shown: count them from the pending list's pages.
    std::string after = "0";
    f.queued = 0;
    for (int page = 0; page < 100; ++page) {
      ASSIGN_OR_RETURN(std::string body,
                       api.Call("GET", "/v1/jobs?state=pending&limit=1000&after=" + after));
      std::optional<int64_t> more;
      ASSIGN_OR_RETURN(std::vector<Job> jobs, codec::DecodeJobList(body, &more));
      f.queued += static_cast<int64_t>(jobs.size());
      if (!more) break;
      after = std::to_string(*more);
    }
  }
  return f;
}

std::string Render(const Frame& f, const std::string& server, int rows, int cols) {
  std::map<int64_t, const Job*> by_id;
  for (const Job& j : f.running) by_id[j.id.value] = &j;
  int total = 0, busy = 0, failed = 0, drained = 0;
  double util = 0;
  int sampled = 0;
  for (const NodeStatus& n : f.nodes) {
    for (size_t i = 0; i < n.info.gpus.size(); ++i) {
      if (n.info.gpus[i].vacant) continue;
      ++total;
      if (i < n.gpu_jobs.size() && !n.gpu_jobs[i].empty()) ++busy;
      if (n.state != NodeState::kReady ||
          (i < n.health.size() && n.health[i].state != GpuHealthState::kOk))
        ++failed;
      else if (!n.drain_reason.empty() ||
               (i < n.gpu_drain_reasons.size() && !n.gpu_drain_reasons[i].empty()))
        ++drained;
      if (i < n.samples.size()) {
        util += n.samples[i].utilization_pct;
        ++sampled;
      }
    }
  }
  std::ostringstream out;
  std::string now =
      FormatRfc3339(std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
  out << "baton top  " << server << "  " << now.substr(0, 19) << "Z   (q quits)\n";
  out << "GPUs " << total << ": " << busy << " busy, " << (total - busy - failed - drained)
      << " idle, " << failed << " failed, " << drained << " drained; mean utilisation "
      << (sampled > 0 ? std::to_string(static_cast<int>(std::lround(util / sampled))) + "%" : "-")
      << ".  Jobs: " << f.running.size() << " running, " << f.queued << " waiting.\n\n";
  // Share the screen: the GPU grid first, then the queue and the running jobs.
  int budget = std::max(6, rows - 8);
  size_t gpu_rows = static_cast<size_t>(std::max(2, budget / 2));
  size_t hidden = 0;
  GpuTable(f.nodes, by_id, true, gpu_rows, &hidden).Print(out);
  if (hidden > 0) out << "... and " << hidden << " more GPUs (baton gpus lists them all)\n";
  int left = std::max(2, budget - static_cast<int>(std::min<size_t>(gpu_rows, total)));
  out << "\nQUEUE\n";
  if (f.queue.empty()) {
    out << "(empty)\n";
  } else {
    Table q({"#", "ID", "USER", "PROJECT", "GPUS", "WAITING", "REASON"});
    int shown = 0;
    for (const Job& j : f.queue) {
      if (shown >= left / 2) break;
      std::string why = WhyWaiting(j);
      size_t room = static_cast<size_t>(std::max(20, cols - 50));
      if (why.size() > room) why = why.substr(0, room - 3) + "...";
      q.Add({std::to_string(++shown), std::to_string(j.id.value), j.user, j.spec.project,
             FormatMilli(j.spec.resources.milli_gpus), Age(j.submitted_at), why});
    }
    q.Print(out);
    if (f.queued > shown) out << "... and " << (f.queued - shown) << " more waiting\n";
  }
  out << "\nRUNNING\n";
  if (f.running.empty()) {
    out << "(none)\n";
  } else {
    Table r({"ID", "USER", "PROJECT", "GPUS", "RUNNING", "WHERE", "NAME"});
    int shown = 0;
    for (const Job& j : f.running) {
      if (shown++ >= left / 2) break;
      std::string where;
      for (const NodeAllocation& part : j.allocation) {
        where += (where.empty() ? "" : " ") + part.node + ":";
        for (size_t i = 0; i < part.gpus.size(); ++i)
          where += (i ? "," : "") + std::to_string(part.gpus[i]);
      }
      r.Add({std::to_string(j.id.value), j.user, j.spec.project,
             FormatMilli(j.spec.resources.milli_gpus), j.started_at ? Age(*j.started_at) : "-",
             where, j.spec.name});
    }
    r.Print(out);
    if (static_cast<int>(f.running.size()) > left / 2)
      out << "... and " << (f.running.size() - left / 2) << " more\n";
  }
  return out.str();
}

volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

// The terminal in a mode where one key press is read at once, unechoed; restored on exit.
class RawTerminal {
 public:
  RawTerminal() {
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool active_ = false;
};

}  // namespace

std::vector<std::string> ShownCommand(const JobSpec& spec) {
  std::vector<std::string> words = spec.command;
  if (!spec.batch) return words;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] != "-c") continue;
    const std::string& text = words[i + 1];
    size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) +
                   (!text.empty() && text.back() != '\n' ? 1 : 0);
    words[i + 1] = "<script: " + std::to_string(lines) + (lines == 1 ? " line>" : " lines>");
    break;
  }
  return words;
}

std::string WhyWaiting(const Job& j) {
  std::string reason(WaitReasonName(j.reason));
  if (j.reason_detail.empty()) return reason;
  return reason.empty() ? j.reason_detail : reason + ": " + j.reason_detail;
}

std::string Age(TimePoint t) {
  auto now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  Duration d = now - t;
  if (d < Duration(0)) d = Duration(0);
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

int Gpus(const Connection& conn, bool as_json) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto body = (*api)->Call("GET", "/v1/nodes");
  if (!body) return Fail(body.error());
  auto nodes = codec::DecodeNodeList(*body);
  if (!nodes) return Fail(nodes.error());
  auto running = (*api)->Call("GET", "/v1/jobs?state=running&limit=1000");
  if (!running) return Fail(running.error());
  std::optional<int64_t> next;
  auto jobs = codec::DecodeJobList(*running, &next);
  if (!jobs) return Fail(jobs.error());
  std::map<int64_t, const Job*> by_id;
  for (const Job& j : *jobs) by_id[j.id.value] = &j;
  if (as_json) {
    std::cout << codec::EncodeGpuList(*nodes) << "\n";
    return 0;
  }
  size_t hidden = 0;
  GpuTable(*nodes, by_id, false, SIZE_MAX, &hidden).Print(std::cout);
  return 0;
}

int ShowUsage(const Connection& conn, const UsageOptions& o) {
  bool as_json = o.json;
  TimePoint now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  std::string target = "/v1/usage";
  for (auto [flag, text] : {std::pair{"--since", &o.since}, std::pair{"--until", &o.until}}) {
    if (text->empty()) continue;
    auto t = ParseTimeArg(*text, flag, now);
    if (!t) return Usage(t.error());
    target += (target.find('?') == std::string::npos ? "?" : "&") + std::string(flag + 2) + "=" +
              QueryEscape(FormatRfc3339(*t));
  }
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto body = (*api)->Call("GET", target);
  if (!body) return Fail(body.error());
  if (as_json) {
    std::cout << *body << "\n";
    return 0;
  }
  auto usage = codec::DecodeUsage(*body);
  if (!usage) return Fail(usage.error());
  const std::string& cur = usage->currency;
  // With autoscaled nodes: what their idle time kept for each cost (not in COST; in USED).
  const bool nodes = usage->nodes.has_value();
  std::vector<std::string> head = {"PROJECT", "JOBS", "RUNNING", "GPU-HOURS", "COST"};
  if (nodes) head.push_back("IDLE NODES");
  head.insert(head.end(), {"BUDGET", "USED"});
  Table projects(head);
  for (const UsageRow& u : usage->projects) {
    std::vector<std::string> row = {u.project, std::to_string(u.jobs), std::to_string(u.running),
                                    Fixed(u.gpu_seconds / 3600, 2), Fixed(u.cost, 2) + " " + cur};
    if (nodes) row.push_back(Fixed(u.idle_cost, 2) + " " + cur);
    row.push_back(u.budget ? Fixed(*u.budget, 2) + " a " + u.budget_period : "-");
    row.push_back(u.budget
                      ? (*u.budget > 0 ? Fixed(100 * u.budget_spent / *u.budget, 1) : "100.0") + "%"
                      : "-");
    projects.Add(row);
  }
  projects.Print(std::cout);
  std::cout << "\n";
  head = {"PROJECT", "USER", "JOBS", "RUNNING", "GPU-HOURS", "COST"};
  if (nodes) head.push_back("IDLE NODES");
  Table users(head);
  for (const UsageRow& u : usage->users) {
    std::vector<std::string> row = {u.project,
                                    u.user,
                                    std::to_string(u.jobs),
                                    std::to_string(u.running),
                                    Fixed(u.gpu_seconds / 3600, 2),
                                    Fixed(u.cost, 2) + " " + cur};
    if (nodes) row.push_back(Fixed(u.idle_cost, 2) + " " + cur);
    users.Add(row);
  }
  users.Print(std::cout);
  if (!nodes) return 0;
  const NodeCosts& n = *usage->nodes;
  std::cout << "\nAutoscaled nodes, over "
            << FormatDuration(std::chrono::milliseconds(std::llround(n.window_seconds * 1000)))
            << ":\n";
  Table templates({"TEMPLATE", "SPOT", "NODE-HOURS", "COST", "IDLE", "PEAK NODES", "FIXED"});
  for (const NodeCostRow& t : n.templates) {
    templates.Add({t.template_name, t.spot ? "yes" : "no", Fixed(t.node_seconds / 3600, 2),
                   Fixed(t.cost, 2) + " " + cur, Fixed(t.idle_cost, 2) + " " + cur,
                   std::to_string(t.peak_nodes), Fixed(t.fixed_cost, 2) + " " + cur});
  }
  templates.Print(std::cout);
  std::cout << Fixed(n.node_seconds / 3600, 2) << " node-hours cost " << Fixed(n.cost, 2) << " "
            << cur << " (" << Fixed(n.idle_cost, 2) << " " << cur
            << " of it with no job); the peak as a fixed on-demand cluster: "
            << Fixed(n.fixed_cost, 2) << " " << cur << "; saved " << Fixed(n.saved(), 2) << " "
            << cur;
  if (n.fixed_cost > 0) std::cout << " (" << Fixed(100 * n.saved() / n.fixed_cost, 1) << "%)";
  std::cout << "\n";
  return 0;
}

int Events(const Connection& conn, bool follow, bool as_json) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto print = [as_json](const std::string& event_json) {
    if (as_json) {
      std::cout << event_json << "\n" << std::flush;
      return;
    }
    auto e = codec::DecodeEvent(event_json);
    if (!e) return;
    std::cout << FormatRfc3339(e->at).substr(0, 19) << "Z  "
              << (e->severity == Severity::kAlert ? "ALERT " : "      ") << EventKindName(e->kind)
              << "  " << e->message << "\n"
              << std::flush;
  };
  if (!follow) {
    auto body = (*api)->Call("GET", "/v1/events");
    if (!body) return Fail(body.error());
    if (as_json) {
      std::cout << *body << "\n";
      return 0;
    }
    auto events = codec::DecodeEvents(*body);
    if (!events) return Fail(events.error());
    for (const ClusterEvent& e : *events) print(codec::EncodeEvent(e));
    return 0;
  }
  // Server-Sent Events: "data: {...}" lines, each event ended by a blank line.
  std::string buffered;
  Status st = (*api)->Stream("/v1/events",
                             [&](std::string_view piece) {
                               buffered += piece;
                               size_t end;
                               while ((end = buffered.find("\n\n")) != std::string::npos) {
                                 std::string block = buffered.substr(0, end);
                                 buffered.erase(0, end + 2);
                                 size_t data = block.find("data: ");
                                 if (data != std::string::npos)
                                   print(block.substr(data + 6, block.find('\n', data) - data - 6));
                               }
                             },
                             {{"Accept", "text/event-stream"}});
  return st.ok() ? 0 : Fail(st);
}

int Top(const Connection& conn, const TopOptions& options) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  bool live = !options.once && isatty(STDOUT_FILENO);
  const std::string& server = (*api)->server();
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  if (live) {
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }
  std::optional<RawTerminal> raw;
  if (live) raw.emplace();
  bool keys = live && isatty(STDIN_FILENO);  // q quits; without a terminal to read, only Ctrl-C
  if (live) std::cout << "\x1b[?1049h\x1b[?25l" << std::flush;  // the alternate screen, no cursor
  int rc = 0;
  while (!g_stop) {
    winsize ws{};
    int rows = 40, cols = 120;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
      rows = ws.ws_row;
      cols = ws.ws_col;
    }
    auto frame = Fetch(**api, std::max(5, rows / 3));
    std::string text =
        frame ? Render(*frame, server, rows, cols) : "baton: " + frame.error().message() + "\n";
    if (live) {
      std::cout << "\x1b[H\x1b[2J" << text << std::flush;
    } else {
      std::cout << text << std::flush;
      rc = frame ? 0 : 1;
      break;
    }
    // Wait for the next frame, or for q. (poll ignores a negative fd: then it only waits.)
    pollfd in{.fd = keys ? STDIN_FILENO : -1, .events = POLLIN, .revents = 0};
    int ready = poll(&in, 1, static_cast<int>(options.interval_s * 1000));
    if (ready > 0) {
      char c = 0;
      ssize_t n = read(STDIN_FILENO, &c, 1);
      if (n <= 0) keys = false;  // stdin closed: stop reading it
      if (n == 1 && (c == 'q' || c == 'Q')) break;
    }
  }
  if (live) std::cout << "\x1b[?25h\x1b[?1049l" << std::flush;
  return rc;
}

// `baton queue`: pending jobs in the order they would start, with why they wait.
int Queue(const Connection& conn, int limit, bool json, bool whole) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto body = (*api)->Call("GET", "/v1/queue?limit=" + std::to_string(limit));
  if (!body) return Fail(body.error());
  if (json) {
    std::cout << *body << "\n";
    return 0;
  }
  std::optional<int64_t> next;
  auto jobs = codec::DecodeJobList(*body, &next);
  if (!jobs) return Fail(jobs.error());
  Table t({"#", "ID", "USER", "PROJECT", "PRIORITY", "GPUS", "PREEMPTIBLE", "WAITING",
           "EXPECTED START", "REASON"});
  int pos = 0;
  for (const Job& j : *jobs) {
    // A job that waits for something other than the scheduler has no place in its order yet.
    const bool ordered = j.reason != WaitReason::kDependency &&
                         j.reason != WaitReason::kBeginTime &&
                         j.reason != WaitReason::kArrayLimit && j.reason != WaitReason::kSchedule;
    std::string why = WhyWaiting(j);
    // Cut to fit a terminal only: piped or with --long, every reason is whole.
    if (!whole && why.size() > 100) why = why.substr(0, 97) + "... (--long shows it whole)";
    t.Add({ordered ? std::to_string(++pos) : "-",
           TaskName(j.array_id.value != 0 ? j.array_id : j.id,
                    j.array_id.value != 0 ? j.array_index : -1),
           j.user, j.spec.project, std::string(PriorityName(j.spec.priority)),
           FormatMilli(j.spec.resources.milli_gpus), Preemptible(j.spec) ? "yes" : "no",
           Age(j.submitted_at),
           j.estimated_start ? FormatRfc3339(*j.estimated_start).substr(0, 19) + "Z" : "-", why});
  }
  t.Print(std::cout);
  return 0;
}

void AddViewCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  {
    auto json = std::make_shared<bool>(false);
    auto limit = std::make_shared<int>(50);
    CLI::App* sub =
        app.add_subcommand("queue",
                           "pending jobs in the order they would start, then those waiting for "
                           "dependencies, a begin time or their array's limit; with reasons");
    AddConnectionFlags(sub, *conn);
    sub->add_flag("--json", *json, "print JSON");
    sub->add_option("-n,--limit", *limit, "how many (1-1000)")->check(CLI::Range(1, 1000));
    auto long_reasons = std::make_shared<bool>(false);
    sub->add_flag("-l,--long", *long_reasons,
                  "reasons whole (they are cut to fit a terminal; piped, they are always whole)");
    sub->callback(
        [=] { *exit_code = Queue(*conn, *limit, *json, *long_reasons || !isatty(STDOUT_FILENO)); });
  }
  {
    auto json = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand(
        "gpus", "every GPU: state, utilisation, memory, temperature, power, jobs");
    AddConnectionFlags(sub, *conn);
    sub->add_flag("--json", *json, "print JSON");
    sub->callback([=] { *exit_code = Gpus(*conn, *json); });
  }
  {
    auto o = std::make_shared<UsageOptions>();
    CLI::App* sub = app.add_subcommand("usage", "GPU-hours, cost and budgets by project and user");
    AddConnectionFlags(sub, *conn);
    sub->add_option("-S,--since", o->since,
                    "only jobs not ended before this: 2026-11-01, 2026-11-01T09:00:00Z, -7d, -12h");
    sub->add_option("-E,--until", o->until, "only jobs submitted before this (same forms)");
    sub->add_flag("--json", o->json, "print JSON");
    sub->callback([=] { *exit_code = ShowUsage(*conn, *o); });
  }
  {
    auto json = std::make_shared<bool>(false);
    auto follow = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand(
        "events", "cluster events (GPU faults, lost nodes, failed jobs, budgets)");
    AddConnectionFlags(sub, *conn);
    sub->add_flag("--json", *json, "print each event as a JSON object");
    sub->add_flag("-f,--follow", *follow, "keep printing events as they happen (Ctrl-C stops)");
    sub->callback([=] { *exit_code = Events(*conn, *follow, *json); });
  }
  {
    auto options = std::make_shared<TopOptions>();
    CLI::App* sub = app.add_subcommand(
        "top", "a live view: GPUs, the queue with reasons, running jobs (q quits)");
    AddConnectionFlags(sub, *conn);
    sub->add_option("-d,--interval", options->interval_s, "seconds between frames (default 2)")
        ->check(CLI::Range(0.1, 3600.0));
    sub->add_flag("--once", options->once, "print one frame and exit");
    sub->callback([=] { *exit_code = Top(*conn, *options); });
  }
}

}  // namespace baton::cli
