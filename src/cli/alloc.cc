#include "cli/alloc.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/session.h"
#include "cli/signals.h"
#include "codec/json_codec.h"
#include "core/hostlist.h"
#include "core/splice.h"
#include "core/step_wire.h"

namespace baton::cli {

namespace {

namespace fs = std::filesystem;

void Say(const std::string& line) { std::cerr << "baton: " << line << std::endl; }

// What came back from the allocation's host: its exit code, or that the connection ended first.
struct StepEnd {
  bool ended = false;  // an 'x' frame came
  int code = 1;
};

// Sends `req` (its tail: the agent sent the head) over a tunnel to allocation `ref`'s host and
// copies its output here until its end frame. Ctrl-C or a hangup closes the tunnel, which ends
// the command there (130). `quiet`: its output is not shown, and 2 s of silence ends it (a
// probe).
Result<StepEnd> Step(ApiClient& api, const std::string& ref, const slurm::StepRequest& req,
                     const Signals* signals, bool quiet) {
  ASSIGN_OR_RETURN(ApiClient::Tunnel tunnel, api.OpenTunnel("/v1/jobs/" + ref + "/step"));
  std::string tail = slurm::RequestTail(req);
  StepEnd end;
  if (!WriteAllTo(tunnel.fd, tail)) {
    close(tunnel.fd);
    return end;
  }
  std::string buf = std::move(tunnel.early);
  for (;;) {
    // Whole frames first: a type byte, a 4-byte big-endian length, the bytes.
    while (buf.size() >= 5) {
      const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
      const size_t len = (size_t{p[1]} << 24) | (size_t{p[2]} << 16) | (size_t{p[3]} << 8) | p[4];
      if (len > slurm::kMaxString) {
        close(tunnel.fd);
        return Err(
            Unavailable("the allocation's host sent a frame of " + std::to_string(len) + " bytes"));
      }
      if (buf.size() < 5 + len) break;
      const char type = buf[0];
      std::string data = buf.substr(5, len);
      buf.erase(0, 5 + len);
      if (type == 'x') {
        close(tunnel.fd);
        end.ended = true;
        end.code = data.size() > 1 && data[0] == 'E' ? std::atoi(data.c_str() + 1)
                   : data.size() > 1                 ? 128 + std::atoi(data.c_str() + 1)
                                                     : 1;
        return end;
      }
      if (!quiet) WriteAllTo(type == 'e' ? 2 : 1, data);
    }
    pollfd fds[2] = {
        {.fd = tunnel.fd, .events = POLLIN, .revents = 0},
        {.fd = signals != nullptr ? signals->fd() : -1, .events = POLLIN, .revents = 0}};
    // A probe whose tunnel reached something that does not answer (another program holding
    // the port) gives up after 2 s.
    const int ready = poll(fds, 2, quiet ? 2000 : -1);
    if (ready == 0 || (ready < 0 && errno != EINTR)) break;
    if (fds[1].revents != 0 && signals->Next() != 0) {
      close(tunnel.fd);
      end.code = 130;
      return end;
    }
    if (fds[0].revents == 0) continue;
    char chunk[65536];
    ssize_t got = read(tunnel.fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    buf.append(chunk, static_cast<size_t>(got));
  }
  close(tunnel.fd);
  return end;
}

// The user's own directory here, where the command runs on the nodes too if they have it.
std::string WorkingDirectory() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  return ec ? "" : cwd.string();
}

// This program's path, for the `srun` an allocation's shell finds first on its PATH.
std::string SelfPath() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "baton" : self.string();
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A directory of this user's alone (0700) holding `srun`, a script that is
// `baton run --in ID`, for the allocation's shell: srun typed there runs on the allocation.
Result<std::string> MakeSrunDir(const std::string& id) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/baton-alloc-XXXXXX";
  std::vector<char> path(pattern.begin(), pattern.end());
  path.push_back('\0');
  if (mkdtemp(path.data()) == nullptr)
    return Err(Unavailable(pattern + ": cannot make a directory: " + std::strerror(errno)));
  std::string dir = path.data();
  std::string srun = dir + "/srun";
  {
    std::ofstream out(srun);
    out << "#!/bin/sh\n# srun in allocation " << id << " (baton alloc): baton run --in " << id
        << "\nexec " << ShellQuote(SelfPath()) << " run --in " << id << " -- \"$@\"\n";
    if (!out) return Err(Unavailable(srun + ": cannot be written"));
  }
  if (chmod(srun.c_str(), 0700) != 0) return Err(Unavailable(srun + ": " + std::strerror(errno)));
  return dir;
}

// Runs `command` here as the allocation's shell, with the signals this process blocks for its
// signalfd unblocked again; its exit status. While it runs, Ctrl-C is the shell's (as salloc),
// a hangup or SIGTERM is passed on to it, and the end of the job is said once.
int RunLocal(ApiClient& api, const std::string& id, const std::vector<std::string>& command,
             const std::vector<std::pair<std::string, std::string>>& env, const Signals& signals) {
  pid_t child = fork();
  if (child < 0) return Fail(Unavailable(std::string("cannot fork: ") + std::strerror(errno)));
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "baton: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  bool said_end = false;
  for (;;) {
    int status = 0;
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    pollfd p{.fd = signals.fd(), .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 1000) > 0) {
      int sig = signals.Next();
      if (sig == SIGTERM || sig == SIGHUP) kill(child, sig);
    }
    if (!said_end) {
      auto job = api.GetJob(id);
      if (job && IsTerminal(job->state)) {
        Say("job allocation " + id + " has ended (" + std::string(JobStateName(job->state)) +
            (job->reason_detail.empty() ? "" : ": " + job->reason_detail) +
            "); srun and baton run --in no longer reach it");
        said_end = true;
      }
    }
  }
}

// What the allocation's host wrote last in the job's log on `node` (its first node), as
// ": LINE", or where to look when there is none.
std::string HostSays(ApiClient& api, const std::string& id, const std::string& node) {
  auto log = api.Raw(
      "GET", "/v1/jobs/" + id + "/logs?limit=65536" + (node.empty() ? "" : "&node=" + node));
  std::string last;
  if (log && log->status == 200) {
    std::string_view text = log->body;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    size_t from = text.rfind('\n');
    last = std::string(text.substr(from == std::string_view::npos ? 0 : from + 1));
  }
  if (last.empty() || last.size() > 512) return " (`baton logs " + id + "` says why)";
  return ": " + last;
}

}  // namespace

int RunIn(const Connection& conn, const std::string& ref, std::vector<std::string> words,
          const std::vector<std::pair<std::string, std::string>>& env) {
  if (!words.empty() && words[0] == "srun") words.erase(words.begin());
  if (words.empty()) {
    return Usage(InvalidArgument(
        "run --in: no command: baton run --in ID -- [SRUN OPTIONS] COMMAND [ARGS...]"));
  }
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  Signals signals({SIGINT, SIGTERM, SIGHUP});
  slurm::StepRequest req{.verb = "srun", .cwd = WorkingDirectory(), .argv = std::move(words)};
  for (const auto& [k, v] : env) req.env.push_back(k + "=" + v);
  auto end = Step(**api, ref, req, &signals, false);
  if (!end) return Fail(end.error());
  if (!end->ended && end->code != 130) {
    auto job = (*api)->GetJob(ref);
    return Fail(Unavailable(
        "job " + ref + "'s allocation host did not answer" +
        (job && job->state != JobState::kRunning
             ? " (the job is " + std::string(JobStateName(job->state)) + ")"
             : " (it starts a moment after the job; `baton logs " + ref + "` says what it did)")));
  }
  return end->code;
}

int Alloc(const Connection& conn, JobSpec spec, std::vector<std::string> command) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  Signals signals({SIGINT, SIGTERM, SIGHUP});
  auto body = (*api)->Call("POST", "/v1/jobs", codec::EncodeJobSpec(spec));
  if (!body) return Fail(body.error());
  auto submitted = codec::DecodeJob(*body);
  if (!submitted) return Fail(submitted.error());
  const std::string id = submitted->id.ToString();
  Say("pending job allocation " + id + "; Ctrl-C cancels it");
  bool cancelled = false;
  auto running = WaitUntilRunning(**api, id, signals, &cancelled);
  if (!running) return Fail(running.error());
  if (!*running || IsTerminal((*running)->state)) {
    if (*running) {
      const Job& j = **running;
      Say("job allocation " + id + " " + std::string(JobStateName(j.state)) +
          (j.reason_detail.empty() ? "" : ": " + j.reason_detail));
    }
    return 1;
  }
  const Job& job = **running;
  std::vector<std::string> nodes;
  for (const NodeAllocation& part : job.allocation) nodes.push_back(part.node);
  const std::string nodelist = CompressHostList(nodes);
  const std::string host = nodes.empty() ? "" : nodes.front();  // where the host runs
  // The host listens a moment after the job starts: a probe that runs `true` on the first node,
  // until it answers, the job ends (its host could not start: the log's last line says why),
  // or 15 s pass.
  slurm::StepRequest probe{.verb = "run", .cwd = "/", .argv = {"true"}};
  bool ready = false;
  for (int i = 0; i < 60 && !ready; ++i) {
    auto end = Step(**api, id, probe, nullptr, true);
    ready = end && end->ended && end->code == 0;
    if (ready) break;
    if (auto now = (*api)->GetJob(id); now && IsTerminal(now->state)) {
      return Fail(Unavailable("job allocation " + id + " on " + nodelist + " ended before it " +
                              "answered (" + std::string(JobStateName(now->state)) +
                              (now->reason_detail.empty() ? "" : ": " + now->reason_detail) + ")" +
                              HostSays(**api, id, host)));
    }
    usleep(250'000);
  }
  if (!ready) {
    (void)(*api)->Call("POST", "/v1/jobs/" + id + "/cancel");
    return Fail(Unavailable("job allocation " + id + " on " + nodelist +
                            " did not answer within 15s; cancelled" + HostSays(**api, id, host)));
  }
  Say("granted job allocation " + id + " on " + nodelist + ": srun here, or `baton run --in " + id +
      " -- COMMAND` anywhere, runs on it; exit gives it back");
  auto dir = MakeSrunDir(id);
  if (!dir) {
    (void)(*api)->Call("POST", "/v1/jobs/" + id + "/cancel");
    return Fail(dir.error());
  }
  const char* path = std::getenv("PATH");
  std::vector<std::pair<std::string, std::string>> env = {
      {"SLURM_JOB_ID", id},
      {"SLURM_JOBID", id},
      {"BATON_ALLOC", id},
      {"SLURM_JOB_NODELIST", nodelist},
      {"SLURM_NNODES", std::to_string(nodes.size())},
      {"SLURM_JOB_NUM_NODES", std::to_string(nodes.size())},
      {"PATH", *dir + ":" + (path != nullptr ? path : "/usr/bin:/bin")}};
  if (!conn.server.empty()) env.emplace_back("BATON_SERVER", conn.server);
  if (!conn.token.empty()) env.emplace_back("BATON_TOKEN", conn.token);
  if (!conn.tls_ca.empty()) env.emplace_back("BATON_TLS_CA", conn.tls_ca);
  if (command.empty()) {
    const char* shell = std::getenv("SHELL");
    command = {shell != nullptr && *shell != '\0' ? shell : "/bin/sh"};
  }
  int code = RunLocal(**api, id, command, env, signals);
  auto now = (*api)->GetJob(id);
  if (now && !IsTerminal(now->state)) {
    auto r = (*api)->Call("POST", "/v1/jobs/" + id + "/cancel");
    Say(r ? "relinquishing job allocation " + id
          : "cannot give back job allocation " + id + ": " + r.error().message() +
                " (baton cancel " + id + ")");
  }
  std::error_code ec;
  fs::remove_all(*dir, ec);
  return code;
}

}  // namespace baton::cli
