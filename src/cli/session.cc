#include "cli/session.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <iostream>
#include <list>
#include <thread>

#include "cli/forward.h"
#include "cli/logs.h"
#include "cli/signals.h"
#include "cli/table.h"
#include "cli/views.h"
#include "codec/json_codec.h"
#include "core/quantity.h"
#include "core/session_frame.h"
#include "core/splice.h"
#include "core/text.h"

namespace baton::cli {

namespace {

constexpr unsigned char kCtrlP = 0x10, kCtrlQ = 0x11;  // the detach keys, as docker's

// This terminal in raw mode while it lives (keys go to the job as typed: Ctrl-C, Ctrl-Z and
// arrows included); nothing when stdin is not a terminal.
class RawTerminal {
 public:
  RawTerminal() {
    if (isatty(0) == 0 || tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    on_ = tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (on_) tcsetattr(0, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool on_ = false;
};

bool Send(int fd, FrameType type, std::string_view payload = {}) {
  return WriteAllTo(fd, EncodeFrame(type, payload));
}

// "ROWS COLS" of this terminal; empty when there is none.
std::string WindowSize() {
  winsize ws{};
  for (int fd : {0, 1, 2}) {
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
      return std::to_string(ws.ws_row) + " " + std::to_string(ws.ws_col);
  }
  return "";
}

void Say(const std::string& line) { std::cerr << "baton: " << line << std::endl; }

// Cancels the job for Ctrl-C; says so.
void CancelFor(ApiClient& api, const std::string& id, bool* cancelled) {
  *cancelled = true;
  auto r = api.Call("POST", "/v1/jobs/" + id + "/cancel");
  Say(r ? "cancelling job " + id + " (Ctrl-C again detaches)"
        : "cannot cancel job " + id + ": " + r.error().message());
}

// The end of the job's log (its first node's), for a job that did not come up.
std::string RunLogTail(ApiClient& api, const std::string& id) {
  auto log = api.Call("GET", "/v1/jobs/" + id + "/logs");
  if (!log) return "";
  return log->size() > 2000 ? log->substr(log->size() - 2000) : *log;
}

// The job once it has ended, if it ends within `wait` (nullopt when it has not).
Result<std::optional<Job>> EndedWithin(ApiClient& api, const std::string& id,
                                       std::chrono::milliseconds wait) {
  auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    ASSIGN_OR_RETURN(Job job, api.GetJob(id));
    if (IsTerminal(job.state)) return std::optional<Job>(std::move(job));
    if (std::chrono::steady_clock::now() >= until) return std::optional<Job>();
    usleep(50'000);
  }
}

// The job's exit code once it has ended (its agent reports the end just after the session
// closes).
int FinalExitCode(ApiClient& api, const std::string& id) {
  auto job = EndedWithin(api, id, std::chrono::seconds(30));
  if (!job) return Fail(job.error());
  if (*job) return ExitCodeOf(**job);
  Say("job " + id + " has not ended yet");
  return 1;
}

// Keys typed, without the detach sequence (Ctrl-P Ctrl-Q); `*prefix`: a Ctrl-P waits for the next.
std::string StripDetach(std::string_view keys, bool* prefix, bool* detach) {
  std::string out;
  for (char c : keys) {
    auto b = static_cast<unsigned char>(c);
    if (*prefix) {
      *prefix = false;
      if (b == kCtrlQ) {
        *detach = true;
        return out;
      }
      out.push_back(static_cast<char>(kCtrlP));
      if (b == kCtrlP) {
        *prefix = true;
        continue;
      }
      out.push_back(c);
    } else if (b == kCtrlP) {
      *prefix = true;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

enum class Ending { kEnded, kDetached, kLost };

// What the shim sent: output to stdout, notes to stderr; kEnded once it says the job ended.
// Until the first output, notes are kept in `*held` instead: a session that ended before this
// client came says only that it cannot be reached, and its output is then taken from its log.
std::optional<Ending> FromJob(FrameReader& reader, bool raw, bool* heard, std::string* held) {
  for (;;) {
    auto frame = reader.Next();
    if (!frame) return Ending::kLost;
    if (!*frame) return std::nullopt;
    const Frame& f = **frame;
    if (f.type == FrameType::kData) {
      if (!*heard && !held->empty()) (void)WriteAllTo(2, *held);
      held->clear();
      *heard = true;
      (void)WriteAllTo(1, f.payload);
    } else if (f.type == FrameType::kNote) {
      std::string line = (raw ? "\r\n" : "\n") + f.payload + (raw ? "\r\n" : "\n");
      if (*heard) {
        (void)WriteAllTo(2, line);
      } else {
        *held += line;
      }
    } else if (f.type == FrameType::kExit) {
      return Ending::kEnded;
    }
  }
}

// The job's terminal is this one until the job ends, Ctrl-P Ctrl-Q, or the connection drops.
Ending TerminalLoop(int tunnel, std::string early, const Signals& signals, bool* heard,
                    std::string* held) {
  FrameReader reader;
  reader.Feed(early);
  RawTerminal raw;
  // Always a first frame: it is what tells the shim that this connection is a client.
  Send(tunnel, FrameType::kResize, WindowSize());
  if (auto end = FromJob(reader, true, heard, held)) return *end;
  bool stdin_open = true, prefix = false, detach = false;
  char buf[32 * 1024];
  for (;;) {
    pollfd fds[3] = {{.fd = tunnel, .events = POLLIN, .revents = 0},
                     {.fd = signals.fd(), .events = POLLIN, .revents = 0},
                     {.fd = stdin_open ? 0 : -1, .events = POLLIN, .revents = 0}};
    if (poll(fds, 3, -1) < 0) continue;
    if (fds[0].revents != 0) {
      ssize_t n = read(tunnel, buf, sizeof buf);
      if (n <= 0) return Ending::kLost;
      reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
      if (auto end = FromJob(reader, true, heard, held)) return *end;
    }
    if (fds[1].revents != 0) {
      int sig = signals.Next();
      if (sig == SIGWINCH) {
        if (std::string size = WindowSize(); !size.empty()) Send(tunnel, FrameType::kResize, size);
      } else if (sig != 0) {
        return Ending::kDetached;
      }
    }
    if (fds[2].revents != 0) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n <= 0) {
        stdin_open = false;  // typed input ended (not a terminal): the session goes on
        continue;
      }
      std::string keys =
          StripDetach(std::string_view(buf, static_cast<size_t>(n)), &prefix, &detach);
      if (!keys.empty() && !Send(tunnel, FrameType::kData, keys)) return Ending::kLost;
      if (detach) return Ending::kDetached;
    }
  }
}

// A session's agent reports the job's end within a second or two of the session closing.
constexpr auto kEndReported = std::chrono::seconds(10);

int TerminalSession(const Connection& conn, ApiClient& api, const std::string& id,
                    const Signals& signals) {
  auto tunnel = api.OpenTunnel("/v1/jobs/" + id + "/attach");
  Ending end = Ending::kLost;
  bool heard = false;
  std::string held;  // notes before any output
  if (tunnel) {
    end = TerminalLoop(tunnel->fd, std::move(tunnel->early), signals, &heard, &held);
    close(tunnel->fd);
  } else {
    held = "baton: " + tunnel.error().message() + "\n";
  }
  if (end == Ending::kDetached) {
    Say("detached from job " + id + "; it runs on (`baton attach " + id + "` goes back)");
    return 0;
  }
  if (end == Ending::kLost && !heard) {
    // A command that ended before this client attached (`baton run -it -- ls`): its terminal's
    // output is in its log, its exit code in the job.
    if (auto job = EndedWithin(api, id, kEndReported); job && *job) {
      if (int code = Logs(conn, id, true, ""); code != 0) return code;
      return ExitCodeOf(**job);
    }
  }
  if (end == Ending::kLost) {
    std::cerr << held;
    Say("lost job " + id + "'s session (`baton attach " + id + "` tries again)");
    return 1;
  }
  return FinalExitCode(api, id);
}

// A job's output, followed on a thread of its own, until the job has ended and all is out.
class OutputFollower {
 public:
  OutputFollower(const Connection& conn, std::string id) {
    if (pipe2(done_, O_CLOEXEC) != 0) done_[0] = done_[1] = -1;
    thread_ = std::thread([this, conn, id = std::move(id)] {
      code_ = Logs(conn, id, true, "");
      if (done_[1] >= 0) close(done_[1]);
    });
  }
  ~OutputFollower() {
    if (thread_.joinable()) thread_.join();
    if (done_[0] >= 0) close(done_[0]);
  }
  int done_fd() const { return done_[0]; }  // readable (at its end) once the output is all out

 private:
  int done_[2] = {-1, -1};
  std::atomic<int> code_{0};
  std::thread thread_;
};

// Leaves at once, as a second Ctrl-C asks: the follower's thread is blocked on the network.
[[noreturn]] void Detach(const std::string& id, bool cancelled) {
  std::cout.flush();
  Say("detached from job " + id + (cancelled ? " (cancelled)" : "; it runs on"));
  _exit(130);
}

// Stdin to the job (its shim's pipe) while its output is followed; Ctrl-C cancels the job when
// `cancel` (baton run), a second one (the first with attach) leaves.
int StdinSession(const Connection& conn, ApiClient& api, const std::string& id,
                 const Signals& signals, bool cancel) {
  bool cancelled = !cancel;
  OutputFollower output(conn, id);
  auto tunnel = api.OpenTunnel("/v1/jobs/" + id + "/attach");
  int fd = tunnel ? tunnel->fd : -1;  // none: the job ended already, or its node is away
  if (fd >= 0) Send(fd, FrameType::kResize, "");  // the first frame makes it the shim's client
  bool stdin_open = fd >= 0;
  char buf[32 * 1024];
  for (;;) {
    pollfd fds[4] = {{.fd = output.done_fd(), .events = POLLIN, .revents = 0},
                     {.fd = signals.fd(), .events = POLLIN, .revents = 0},
                     {.fd = stdin_open ? 0 : -1, .events = POLLIN, .revents = 0},
                     {.fd = fd, .events = POLLIN, .revents = 0}};
    if (poll(fds, 4, -1) < 0) continue;
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0 && signals.Next() != 0) {
      if (cancelled) Detach(id, cancel);
      CancelFor(api, id, &cancelled);
    }
    if (fds[2].revents != 0) {
      ssize_t n = read(0, buf, sizeof buf);
      stdin_open = n > 0;
      if (!Send(fd, n > 0 ? FrameType::kData : FrameType::kEof,
                std::string_view(buf, n > 0 ? static_cast<size_t>(n) : 0)))
        stdin_open = false;
    }
    if (fds[3].revents != 0 && read(fd, buf, sizeof buf) <= 0) {  // the session has closed
      close(fd);
      fd = -1;
      stdin_open = false;
    }
  }
  if (fd >= 0) close(fd);
  return FinalExitCode(api, id);
}

}  // namespace

Result<std::optional<Job>> WaitUntilRunning(ApiClient& api, const std::string& id,
                                            const Signals& signals, bool* cancelled) {
  std::optional<std::pair<JobState, WaitReason>> said;
  auto pause = std::chrono::milliseconds(50);
  for (;;) {
    ASSIGN_OR_RETURN(Job job, api.GetJob(id));
    if (job.state == JobState::kRunning || IsTerminal(job.state))
      return std::optional<Job>(std::move(job));
    if (auto now = std::make_pair(job.state, job.reason); now != said) {
      Say("job " + id + " is " + std::string(JobStateName(job.state)) +
          (job.reason != WaitReason::kNone ? ": " + WhyWaiting(job) : ""));
      said = now;
    }
    pollfd p{.fd = signals.fd(), .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(pause.count())) > 0 && signals.Next() != 0) {
      if (*cancelled) return std::optional<Job>();
      CancelFor(api, id, cancelled);
    }
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(500));
  }
}

int RunAttached(const Connection& conn, const JobSpec& spec) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  Signals signals({SIGINT, SIGTERM, SIGHUP, SIGWINCH});
  auto body = (*api)->Call("POST", "/v1/jobs", codec::EncodeJobSpec(spec));
  if (!body) return Fail(body.error());
  auto job = codec::DecodeJob(*body);
  if (!job) return Fail(job.error());
  std::string id = job->id.ToString();
  Say("job " + id + " submitted" +
      (spec.interactive == Interactive::kTty ? "; Ctrl-P Ctrl-Q detaches" : "; Ctrl-C cancels it"));
  bool cancelled = false;
  auto running = WaitUntilRunning(**api, id, signals, &cancelled);
  if (!running) return Fail(running.error());
  if (!*running) Detach(id, true);
  const Job& j = **running;
  if (IsTerminal(j.state) && spec.interactive == Interactive::kTty) {
    // Ended before it could be attached (a short command): its output from its log; why it
    // ended only when it did not run to an exit of its own.
    if (int code = Logs(conn, id, true, ""); code != 0) return code;
    if (!j.exit_code && !j.exit_signal) {
      Say("job " + id + " " + std::string(JobStateName(j.state)) +
          (j.reason_detail.empty() ? "" : ": " + j.reason_detail));
    }
    return ExitCodeOf(j);
  }
  if (spec.interactive == Interactive::kTty) return TerminalSession(conn, **api, id, signals);
  return StdinSession(conn, **api, id, signals, !cancelled);
}

namespace {

// The command of a Jupyter session: lab where installed, else the classic notebook, on the
// node's loopback at a port of the job's id (20000 + id mod 20000), its token from
// JUPYTER_TOKEN; a node without Jupyter says so in the job's log.
std::vector<std::string> JupyterCommand() {
  return {"/bin/sh", "-c",
          "command -v jupyter >/dev/null 2>&1 || { echo \"baton: jupyter is not installed on "
          "node $BATON_NODE_NAME (install jupyterlab there, or run in a --venv or --conda "
          "environment that has it)\" >&2; exit 127; }; "
          "app=lab; jupyter lab --version >/dev/null 2>&1 || app=notebook; "
          "root=; [ \"$(id -u)\" = 0 ] && root=--allow-root; "
          "exec jupyter $app --no-browser --ip=127.0.0.1 "
          "--port=$((20000 + BATON_JOB_ID % 20000)) --port-retries=0 $root"};
}

std::string NewJupyterToken() { return RandomHex(16); }

}  // namespace

int RunJupyter(const Connection& conn, JobSpec spec, int local_port) {
  std::string token = NewJupyterToken();
  spec.command = JupyterCommand();
  spec.shell = false;
  spec.interactive = Interactive::kStdin;
  if (spec.name.empty() || spec.name == "sh") spec.name = "jupyter";
  spec.env.emplace_back("JUPYTER_TOKEN", token);
  if (Status st = ValidateJobSpec(spec); !st.ok()) return Usage(st);
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  Signals signals({SIGINT, SIGTERM, SIGHUP});
  auto body = (*api)->Call("POST", "/v1/jobs", codec::EncodeJobSpec(spec));
  if (!body) return Fail(body.error());
  auto job = codec::DecodeJob(*body);
  if (!job) return Fail(job.error());
  std::string id = job->id.ToString();
  Say("job " + id + " submitted: Jupyter; Ctrl-C ends it");
  bool cancelled = false;
  auto running = WaitUntilRunning(**api, id, signals, &cancelled);
  if (!running) return Fail(running.error());
  if (!*running) Detach(id, true);
  int remote = 20000 + static_cast<int>(job->id.value % 20000);
  int code = 0;
  if (IsTerminal((*running)->state)) {
    code = ExitCodeOf(**running);
  } else {
    Say("job " + id + " runs on " + (*running)->allocation.front().node +
        "; waiting for Jupyter to answer");
    code = WaitForHttp(**api, id, remote);
  }
  if (code != 0) {
    std::cerr << RunLogTail(**api, id);  // why it did not come up
    return code;
  }
  code =
      ForwardUntilEnd(**api, id, PortPair{.local = local_port, .remote = remote}, [&](int local) {
        std::cout << "http://127.0.0.1:" << local << "/?token=" << token << std::endl;
        Say("Jupyter of job " + id + " is at that URL; Ctrl-C ends it");
      });
  if (code == 130) {
    CancelFor(**api, id, &cancelled);
    return FinalExitCode(**api, id);
  }
  return code;
}

int Attach(const Connection& conn, const std::string& ref) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto job = (*api)->GetJob(ref);
  if (!job) return Fail(job.error());
  if (job->spec.interactive == Interactive::kNone) {
    return Fail(InvalidArgument("job " + ref +
                                " is not a session (baton run starts one); `baton logs -f " + ref +
                                "` follows its output"));
  }
  if (job->state != JobState::kRunning) {
    return Fail(Conflict("job " + ref + " is " + std::string(JobStateName(job->state)) +
                         (IsTerminal(job->state) ? "" : "; attach once it runs")));
  }
  Signals signals({SIGINT, SIGTERM, SIGHUP, SIGWINCH});
  if (job->spec.interactive == Interactive::kTty) return TerminalSession(conn, **api, ref, signals);
  return StdinSession(conn, **api, ref, signals, false);
}

int Sessions(const Connection& conn, bool all, bool json) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  ApiClient::JobQuery q{.states = "pending,held,running"};
  if (!all) {
    auto me = (*api)->WhoAmI();
    if (!me) return Fail(me.error());
    q.user = *me;
  }
  auto jobs = (*api)->ListJobs(q);
  if (!jobs) return Fail(jobs.error());
  std::erase_if(*jobs, [](const Job& j) { return j.spec.interactive == Interactive::kNone; });
  if (json) {
    std::vector<const Job*> shown;
    for (const Job& j : *jobs) shown.push_back(&j);
    std::cout << codec::EncodeJobList(shown, std::nullopt) << "\n";
    return 0;
  }
  Table t({"ID", "USER", "NAME", "STATE", "KIND", "NODE", "GPUS", "STARTED", "COMMAND"});
  for (const Job& j : *jobs) {
    std::string node = j.allocation.empty() ? "-" : j.allocation.front().node;
    std::string command;
    for (const std::string& w : j.spec.command) command += (command.empty() ? "" : " ") + w;
    t.Add({j.id.ToString(), j.user, j.spec.name, std::string(JobStateName(j.state)),
           j.spec.interactive == Interactive::kTty ? "terminal" : "stdin", node,
           FormatMilli(j.spec.resources.milli_gpus),
           j.started_at ? FormatRfc3339(*j.started_at) : "-", command.substr(0, 40)});
  }
  t.Print(std::cout);
  return 0;
}

}  // namespace baton::cli
