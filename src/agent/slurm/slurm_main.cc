// baton-slurm: Slurm's side of a job, for scripts written for Slurm (docs/slurm.md).
//
//   srun ... / scontrol ...        (argv[0] names it: the agent links DATA/slurm-bin/srun and
//                                   scontrol to this program; srun.cc)
//   baton-slurm --step-server      on each node of a batch script but its first: takes the
//                                   tasks srun sends (step_wire.h) at BATON_STEP_BIND:PORT
//   baton-slurm --alloc-host       on an allocation's first node (`baton alloc`): a step
//                                   server that also runs srun for `baton run --in`
//   baton-slurm --batch-host [-o PATTERN] [-e PATTERN] -- PROGRAM [ARG...]
//                                   on the first node: runs the script, writes its output to
//                                   the -o/-e files as well, and ends the step servers after it
//
// It runs as the job's user, in the job's cgroup, with the job's environment: it holds no
// privilege a job does not. A step server takes a task only from a connection that shows the
// job's step key (BATON_STEP_KEY, which only the job's own processes see).
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/slurm/slurm.h"
#include "core/splice.h"
#include "core/step_wire.h"

namespace baton::slurm {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStop(int sig) { g_stop = sig; }
volatile sig_atomic_t g_notice = 0;
void OnNotice(int sig) { g_notice = sig; }

std::string Env(const char* key) {
  const char* v = std::getenv(key);
  return v != nullptr ? v : "";
}

// The variables a task takes from the node it runs on rather than from srun's: its GPUs, its
// node's names and directories.
bool NodeOwn(const std::string& key) {
  return key.starts_with("CUDA_") || key.starts_with("BATON_") || key == "SLURM_GPUS_ON_NODE" ||
         key == "SLURM_CPUS_ON_NODE" || key == "SLURM_JOB_GPUS" || key == "SLURM_TMPDIR" ||
         key == "TMPDIR" || key == "HOSTNAME";
}

void ServeTask(int conn, const StepRequest& req) {
  std::vector<std::string> env = req.env;
  for (const std::string& e : OwnEnvironment()) {
    std::string k = e.substr(0, e.find('='));
    if (NodeOwn(k)) SetVar(&env, k, e.substr(k.size() + 1));
  }
  auto task = StartTask(req.argv, env, req.cwd);
  if (!task) {
    SendFrame(conn, 'e', "srun: error: " + task.error().message() + "\n");
    SendFrame(conn, 'x', "E1");
    return;
  }
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &sa, nullptr);
  // The job's notice, which this node's agent sends to its step server: passed on to the task,
  // unless it is the batch shell's alone (B:; then ignored, as the server ignores it).
  if (Notice notice = NoticeOf(); notice.signal != 0 && !notice.shell) {
    struct sigaction na {};
    na.sa_handler = OnNotice;
    sigaction(notice.signal, &na, nullptr);
  }
  bool gone = false, forwarded = false;
  int out = task->out, err = task->err;
  auto killed_at = std::chrono::steady_clock::time_point::max();
  while (out >= 0 || err >= 0) {
    if (int notice = g_notice; notice != 0 && !forwarded) {
      g_notice = 0;
      ::kill(-task->pid, notice);
    }
    if ((g_stop != 0 || gone) && !forwarded) {
      ::kill(-task->pid, g_stop != 0 ? g_stop : SIGTERM);
      forwarded = true;
      killed_at = std::chrono::steady_clock::now();
    }
    if (forwarded && std::chrono::steady_clock::now() - killed_at > std::chrono::seconds(10))
      ::kill(-task->pid, SIGKILL);
    pollfd fds[3] = {{out, POLLIN, 0}, {err, POLLIN, 0}, {gone ? -1 : conn, POLLIN, 0}};
    int n = ::poll(fds, 3, 1000);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out : err;
      if (fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) {
        if (!gone &&
            !SendFrame(conn, i == 0 ? 'o' : 'e', std::string(buf, static_cast<size_t>(got))))
          gone = true;
      } else if (got == 0 || errno != EINTR) {
        ::close(fd);
        fd = -1;
      }
    }
    if (fds[2].revents != 0) gone = true;  // srun sends nothing more: it went away
  }
  int ws = 0;
  while (waitpid(task->pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!gone) SendFrame(conn, 'x', StatusText(ws));
}

// The path of this program, which is srun too.
std::string Self() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "baton-slurm";
}

// An allocation's host runs `srun ARGS` for `baton run --in`: in the job's own environment (its
// SLURM_* variables, its nodes' step servers), with the caller's variables over it, in the
// caller's directory where the node has it; srun then spreads the command over the nodes.
void ServeSrun(int conn, const StepRequest& req) {
  StepRequest srun = req;
  srun.argv = {Self(), "srun"};
  srun.argv.insert(srun.argv.end(), req.argv.begin(), req.argv.end());
  srun.env = OwnEnvironment();
  for (const std::string& e : req.env) {
    size_t eq = e.find('=');
    if (eq != std::string::npos && eq > 0) SetVar(&srun.env, e.substr(0, eq), e.substr(eq + 1));
  }
  std::string line = "baton run --in: srun";
  for (const std::string& a : req.argv) line += " " + a;
  std::printf("%s\n", line.substr(0, 1024).c_str());
  std::fflush(stdout);
  ServeTask(conn, srun);
}

// A socket listening at HOST:PORT: the address the node is reached at, else every address.
int Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  for (const char* name :
       {host.empty() ? nullptr : host.c_str(), static_cast<const char*>(nullptr)}) {
    addrinfo* found = nullptr;
    if (getaddrinfo(name, std::to_string(port).c_str(), &hints, &found) != 0) continue;
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
        freeaddrinfo(found);
        return fd;
      }
      ::close(fd);
    }
    freeaddrinfo(found);
    if (name == nullptr) break;
  }
  return -1;
}

// The step server of a batch script's other nodes, or (`alloc`) an allocation's host on its
// first node, which takes `srun` requests too and is ended by the job's end, not by a request.
int StepServer(bool alloc) {
  std::string key = Env("BATON_STEP_KEY");
  int port = std::atoi(Env("BATON_STEP_PORT").c_str());
  std::string bind = Env("BATON_STEP_BIND");
  if (key.empty() || port <= 0) {
    std::fprintf(stderr, "baton-slurm: the step server needs BATON_STEP_KEY and BATON_STEP_PORT\n");
    return 2;
  }
  int listener = Listen(bind, port);
  if (listener >= 0 && alloc) {
    std::printf("allocation %s ready on %s: `baton run --in %s -- COMMAND` runs COMMAND on it\n",
                Env("SLURM_JOB_ID").c_str(), Env("SLURM_JOB_NODELIST").c_str(),
                Env("SLURM_JOB_ID").c_str());
    std::fflush(stdout);
  }
  if (listener < 0) {
    std::fprintf(stderr, "baton: this node cannot take %s: port %d: %s\n",
                 alloc ? "the allocation's srun and run --in" : "the batch script's srun tasks",
                 port, strerror(errno));
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &sa, nullptr);
  // The job's notice reaches this server's process group: its tasks' handlers pass it on.
  if (Notice notice = NoticeOf(); notice.signal != 0) signal(notice.signal, SIG_IGN);
  std::vector<pid_t> handlers;
  auto stop_all = [&](int sig) {
    for (pid_t h : handlers) ::kill(h, sig);
    for (pid_t h : handlers) {
      while (waitpid(h, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    handlers.clear();
  };
  // Each connection has a process of its own from its first byte: one that sends slowly, or
  // without the key, holds up no other (it has 10 s to show the key and say what to run).
  // Its exit code kEnd says that the batch script asked the server to end.
  constexpr int kEnd = 99;
  constexpr size_t kMaxHandlers = 1024;
  while (g_stop == 0) {
    for (size_t i = 0; i < handlers.size();) {
      int status = 0;
      if (waitpid(handlers[i], &status, WNOHANG) != handlers[i]) {
        ++i;
        continue;
      }
      handlers.erase(handlers.begin() + static_cast<std::ptrdiff_t>(i));
      if (WIFEXITED(status) && WEXITSTATUS(status) == kEnd) {
        stop_all(SIGTERM);
        return 0;
      }
    }
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, handlers.empty() ? 1000 : 100) <= 0) continue;
    int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    if (handlers.size() >= kMaxHandlers) {
      std::fprintf(stderr, "baton: step server: refused a connection: %zu already open\n",
                   handlers.size());
      ::close(conn);
      continue;
    }
    pid_t pid = fork();
    if (pid == 0) {
      ::close(listener);
      alarm(10);
      auto req = ReadRequest(conn, &key);
      if (!req) {
        std::fprintf(stderr, "baton: step server: refused a connection: %s\n",
                     req.error().message().c_str());
        _exit(1);
      }
      alarm(0);
      if (req->verb == "exit" && !alloc) {
        SendFrame(conn, 'x', "E0");
        _exit(kEnd);
      }
      if ((req->verb == "srun") != alloc && req->verb != "run") {
        SendFrame(conn, 'e',
                  "baton: this node's step server takes " +
                      std::string(alloc ? "run and srun" : "run and exit") + ", not " + req->verb +
                      "\n");
        SendFrame(conn, 'x', "E2");
        _exit(1);
      }
      if (req->verb == "srun") {
        ServeSrun(conn, *req);
      } else {
        ServeTask(conn, *req);
      }
      _exit(0);
    }
    if (pid > 0) handlers.push_back(pid);
    ::close(conn);
  }
  int sig = g_stop;
  stop_all(sig);
  signal(sig, SIG_DFL);
  ::kill(getpid(), sig);
  return 128 + sig;
}

// Slurm's variable, else Baton's own (a pool with `slurm: false` gives its jobs no SLURM_*).
std::string EnvOr(const char* slurm, const char* baton) {
  std::string v = Env(slurm);
  return v.empty() ? Env(baton) : v;
}

// An output pattern's file name: %j job id, %A array job id, %a task index, %x name, %u user,
// %N node, %n node index, %t task, %s step, %J job.step, %% a '%'; a number after % pads
// (%4a: 0007).
std::string ExpandPattern(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    size_t j = i + 1;
    int width = 0;
    while (j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9' && width < 10)
      width = width * 10 + (pattern[j++] - '0');
    if (j == pattern.size()) {
      out += pattern.substr(i);
      break;
    }
    std::string job = EnvOr("SLURM_JOB_ID", "BATON_JOB_ID"), value;
    bool number = true;
    switch (pattern[j]) {
      case 'j':
        value = job;
        break;
      case 'J':
        value = job + ".batch";
        number = false;
        break;
      case 'A':
        value = EnvOr("SLURM_ARRAY_JOB_ID", "BATON_ARRAY_JOB_ID");
        if (value.empty()) value = job;
        break;
      case 'a':
        // Slurm's own "no task" index, so that a name reads as it would there.
        value = EnvOr("SLURM_ARRAY_TASK_ID", "BATON_ARRAY_INDEX");
        if (value.empty()) value = "4294967294";
        break;
      case 'x':
        value = EnvOr("SLURM_JOB_NAME", "BATON_JOB_NAME");
        number = false;
        break;
      case 'u':
        value = Env("USER");
        number = false;
        break;
      case 'N':
        value = EnvOr("SLURMD_NODENAME", "BATON_NODE_NAME");
        number = false;
        break;
      case 'n':
      case 't':
        value = "0";
        break;
      case 's':
        value = "batch";
        number = false;
        break;
      case '%':
        value = "%";
        number = false;
        break;
      default:
        value = pattern.substr(i, j - i + 1);
        number = false;
        break;
    }
    if (number && static_cast<int>(value.size()) < width)
      value.insert(0, static_cast<size_t>(width) - value.size(), '0');
    out += value;
    i = j;
  }
  return out;
}

int OpenOutput(const std::string& pattern) {
  std::string path = ExpandPattern(pattern);
  bool again = std::atoi(Env("BATON_RESTART_COUNT").c_str()) > 0;  // a requeued run appends
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (again ? O_APPEND : O_TRUNC), 0600);
  if (fd < 0) {
    std::fprintf(stderr,
                 "baton: cannot write the output file %s: %s (the output is in `baton "
                 "logs` only)\n",
                 path.c_str(), strerror(errno));
  }
  return fd;
}

StepRequest ExitRequest(const std::string& key) {
  StepRequest r;
  r.key = key;
  r.verb = "exit";
  return r;
}

int BatchHost(const std::vector<std::string>& args) {
  std::string out_pattern, err_pattern;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if ((args[i] == "-o" || args[i] == "-e") && i + 1 < args.size()) {
      (args[i] == "-o" ? out_pattern : err_pattern) = args[i + 1];
      ++i;
    } else {
      std::fprintf(stderr, "baton-slurm --batch-host: unknown argument %s\n", args[i].c_str());
      return 2;
    }
  }
  std::vector<std::string> command(
      args.begin() + static_cast<std::ptrdiff_t>(std::min(i + 1, args.size())), args.end());
  if (command.empty()) {
    std::fprintf(stderr, "baton-slurm --batch-host: no command\n");
    return 2;
  }
  int out_file = out_pattern.empty() ? -1 : OpenOutput(out_pattern);
  int err_file = err_pattern.empty() ? out_file : OpenOutput(err_pattern);
  bool relay = out_file >= 0 || err_file >= 0;
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (relay && (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)) relay = false;
  const Notice notice = NoticeOf();
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "baton: cannot start the batch script: %s\n", strerror(errno));
    return 1;
  }
  if (child == 0) {
    // The job's notice is for its steps, not its shell (Slurm's --signal without B:): the shell
    // starts with it ignored, and srun passes it on to its tasks.
    if (notice.signal != 0 && !notice.shell) signal(notice.signal, SIG_IGN);
    if (relay) {
      dup2(out_pipe[1], 1);
      dup2(err_pipe[1], 2);
    }
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "baton: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  // The job's signals reach the script too (one process group): this one waits for its end,
  // noting a stop (the job is stopped on every node then).
  for (int s : {SIGUSR1, SIGUSR2}) signal(s, SIG_IGN);
  if (notice.signal != 0) signal(notice.signal, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (relay) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    int fds[2] = {out_pipe[0], err_pipe[0]};
    while (fds[0] >= 0 || fds[1] >= 0) {
      pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
      for (int k = 0; k < 2; ++k) {
        if (fds[k] < 0 || p[k].revents == 0) continue;
        char buf[65536];
        ssize_t got = ::read(fds[k], buf, sizeof buf);
        if (got > 0) {
          WriteAllTo(k == 0 ? 1 : 2, std::string_view(buf, static_cast<size_t>(got)));
          int file = k == 0 ? out_file : err_file;
          if (file >= 0) WriteAllTo(file, std::string_view(buf, static_cast<size_t>(got)));
        } else if (got == 0 || errno != EINTR) {
          ::close(fds[k]);
          fds[k] = -1;
        }
      }
    }
  }
  int ws = 0;
  while (waitpid(child, &ws, 0) < 0 && errno == EINTR) {
  }
  // The script has ended, and with it the job: the other nodes' step servers end too. Not
  // when the job is being stopped (a cancel, a preemption, its time limit): theirs are being
  // stopped as this one is, and asking them would only wait for their ports to answer.
  std::string addrs = g_stop != 0 ? "" : Env("BATON_STEP_ADDRS"), key = Env("BATON_STEP_KEY");
  int port = std::atoi(Env("BATON_STEP_PORT").c_str());
  size_t start = 0;
  for (int rank = 0; port > 0 && start <= addrs.size() && !addrs.empty(); ++rank) {
    size_t comma = addrs.find(',', start);
    std::string addr =
        addrs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? addrs.size() + 1 : comma + 1;
    if (rank == 0) continue;
    std::string error;
    int fd = ConnectTo(addr, port, 5, &error);
    if (fd < 0) continue;
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (SendRequest(fd, ExitRequest(key))) (void)ReadFrame(fd);
    ::close(fd);
  }
  if (WIFSIGNALED(ws)) {
    signal(WTERMSIG(ws), SIG_DFL);
    ::kill(getpid(), WTERMSIG(ws));
  }
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
}

}  // namespace
}  // namespace baton::slurm

int main(int argc, char** argv) {
  using namespace baton::slurm;
  std::string self = argv[0];
  self = self.substr(self.rfind('/') == std::string::npos ? 0 : self.rfind('/') + 1);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (self == "srun") return Srun(args);
  if (self == "scontrol") return Scontrol(args);
  std::string mode = args.empty() ? "" : args[0];
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (mode == "srun") return Srun(rest);
  if (mode == "scontrol") return Scontrol(rest);
  if (mode == "--step-server") return StepServer(false);
  if (mode == "--alloc-host") return StepServer(true);
  if (mode == "--batch-host") return BatchHost(rest);
  std::fprintf(stderr,
               "baton-slurm: what jobs written for Slurm call (docs/slurm.md):\n"
               "  srun [OPTIONS] CMD ...         (as srun: linked as srun on a job's PATH)\n"
               "  scontrol show hostnames [LIST] (as scontrol)\n"
               "  --step-server | --batch-host | --alloc-host   (started by the agent)\n");
  return 2;
}
