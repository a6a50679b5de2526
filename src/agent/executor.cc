#include "agent/executor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace baton::agent {
namespace {

// Async-signal-safe helpers for the code between fork and exec.
size_t SafeLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

void SafeWrite(int fd, const char* s) {
  size_t n = SafeLen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Writes a non-negative integer in decimal.
char* SafeItoa(long v, char* end) {
  *--end = '\0';
  if (v == 0) *--end = '0';
  while (v > 0) {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return end;
}

[[noreturn]] void RunJob(const ProcessSpec& spec, const char* path, char* const* argv,
                         char* const* envp, int log_fd) {
  setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  close_range(3, ~0U, 0);
  if (!spec.workdir.empty() && chdir(spec.workdir.c_str()) != 0) {
    SafeWrite(2, "baton: cannot enter the working directory ");
    SafeWrite(2, spec.workdir.c_str());
    SafeWrite(2, ": ");
    SafeWrite(2, strerror(errno));
    SafeWrite(2, "\n");
    _exit(126);
  }
  execve(path, argv, envp);
  int err = errno;
  SafeWrite(2, "baton: cannot execute '");
  SafeWrite(2, argv[0]);
  SafeWrite(2, "': ");
  SafeWrite(2, strerror(err));
  SafeWrite(2, "\n");
  _exit(err == ENOENT ? 127 : 126);
}

[[noreturn]] void RunShim(const ProcessSpec& spec, const char* path, char* const* argv,
                          char* const* envp, int log_fd, int report_fd, const char* tmp_status) {
  setsid();  // out of the agent's session: terminal signals and the agent's death pass it by
  // vfork: the shim is a copy of the whole agent, and copying its page tables again costs
  // milliseconds (measured ~2.5 ms here) of every job's start. The child only calls
  // async-signal-safe functions and ends in execve or _exit, as vfork requires.
  pid_t job = vfork();
  if (job == 0) RunJob(spec, path, argv, envp, log_fd);
  // Both sides set the process group, so that it exists before the agent learns the pid and
  // may signal the group, whichever of the two runs first.
  if (job > 0) setpgid(job, job);
  char buf[32];
  long reported = job > 0 ? job : -1;
  if (job > 0) {
    char* s = SafeItoa(reported, buf + sizeof buf);
    SafeWrite(report_fd, s);
  } else {
    SafeWrite(report_fd, "-1");
  }
  close(report_fd);
  close(log_fd);
  close_range(3, ~0U, 0);
  int status = 0;
  const char* kind = "exit ";
  long value = 127;
  if (job > 0) {
    while (waitpid(job, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      kind = "signal ";
      value = WTERMSIG(status);
    } else {
      value = WEXITSTATUS(status);
    }
    // Whatever the job left behind in its group ends with it.
    kill(-job, SIGKILL);
  }
  int fd = open(tmp_status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    SafeWrite(fd, kind);
    SafeWrite(fd, SafeItoa(value, buf + sizeof buf));
    SafeWrite(fd, "\n");
    fsync(fd);
    close(fd);
    rename(tmp_status, spec.status_path.c_str());
  }
  _exit(0);
}

std::string Lookup(const std::string& program, const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  std::string path_var = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path_var = kv.substr(5);
  }
  std::stringstream ss(path_var);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return program;  // execve fails and the job's log says so
}

}  // namespace

Result<Started> ProcessExecutor::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Err(InvalidArgument("empty command"));
  // Everything the children need is built before fork: after it only async-signal-safe calls.
  std::string path = Lookup(spec.argv[0], spec.env);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::string tmp_status = spec.status_path + ".tmp";
  (void)unlink(spec.status_path.c_str());

  int log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Err(Internal("cannot open log " + spec.log_path + ": " + strerror(errno)));
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    close(log_fd);
    return Err(Internal(std::string("pipe: ") + strerror(errno)));
  }
  pid_t shim = fork();
  if (shim < 0) {
    int err = errno;
    close(log_fd);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return Err(Unavailable(std::string("fork: ") + strerror(err)));
  }
  if (shim == 0) {
    close(pipe_fds[0]);
    RunShim(spec, path.c_str(), argv.data(), envp.data(), log_fd, pipe_fds[1], tmp_status.c_str());
  }
  close(log_fd);
  close(pipe_fds[1]);
  char buf[32] = {0};
  size_t got = 0;
  for (;;) {
    ssize_t n = read(pipe_fds[0], buf + got, sizeof buf - 1 - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  close(pipe_fds[0]);
  long job_pid = std::strtol(buf, nullptr, 10);
  if (job_pid <= 0) return Err(Unavailable("the shim could not fork the job"));
  return Started{.shim_pid = shim, .job_pid = static_cast<pid_t>(job_pid),
                 .shim_start_ticks = ProcessStartTicks(shim)};
}

void ProcessExecutor::Signal(pid_t job_pid, int sig) {
  if (job_pid > 1) kill(-job_pid, sig);
}

std::vector<pid_t> ProcessExecutor::Reap() {
  std::vector<pid_t> out;
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    out.push_back(pid);
  }
  return out;
}

bool ProcessExecutor::Alive(pid_t shim_pid, uint64_t start_ticks) {
  uint64_t ticks = ProcessStartTicks(shim_pid);
  return ticks != 0 && (start_ticks == 0 || ticks == start_ticks);
}

std::optional<ExitStatus> ReadExitStatus(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string kind;
  int value = 0;
  if (!(in >> kind >> value)) return std::nullopt;
  ExitStatus s;
  if (kind == "signal") s.signal = value;
  else s.exit_code = value;
  return s;
}

uint64_t ProcessStartTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return 0;
  std::string line;
  std::getline(in, line);
  // Field 2 is "(comm)", which may hold spaces: count fields after the last ')'.
  size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(close_paren + 2));
  std::string field;
  char state = 0;
  rest >> state;
  if (state == 'Z' || state == 'X') return 0;  // a zombie is not alive
  for (int i = 4; i <= 22; ++i) {
    rest >> field;
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

}  // namespace baton::agent
