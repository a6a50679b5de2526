#include "agent/mps.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "agent/executor.h"

extern char** environ;

namespace baton::agent {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

namespace {

constexpr std::string_view kPipeVariable = "CUDA_MPS_PIPE_DIRECTORY=";
// The longest path of a Unix socket (sun_path less its NUL) and the daemon's longest socket
// name in its pipe directory.
constexpr size_t kSocketPathMax = 107;
constexpr std::string_view kLongestSocket = "/control_privileged";

// The environment of a control program run for the daemon at `pipe`: this process's, with the
// daemon's variables in place of any it had.
std::vector<std::string> ControlEnvironment(const std::map<std::string, std::string>& set) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    std::string key(kv.substr(0, kv.find('=')));
    if (!set.count(key)) out.emplace_back(kv);
  }
  for (const auto& [k, v] : set) out.push_back(k + "=" + v);
  return out;
}

// Runs `argv` to its end, at most `timeout` (then killed): what it wrote (stdout and stderr)
// when `capture`, else nothing (a daemonising program's child keeps what it inherited open).
Result<std::string> RunControl(const std::vector<std::string>& argv,
                               const std::map<std::string, std::string>& vars,
                               const std::string& input, bool capture, Duration timeout) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0) return Err(Internal(std::string("pipe: ") + strerror(errno)));
  if (capture && pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return Err(Internal(std::string("pipe: ") + strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  if (capture) {
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  std::vector<std::string> env = ControlEnvironment(vars);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // Signals as a new program expects them (the agent ignores SIGPIPE, which would be inherited).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  SetDefaultSignals(&attr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  if (capture) close(out[1]);
  if (rc != 0) {
    close(in[1]);
    if (capture) close(out[0]);
    return Err(Unavailable("cannot run " + argv[0] + ": " + strerror(rc)));
  }
  // The input is a few short lines: far below a pipe's buffer.
  if (!input.empty() && write(in[1], input.data(), input.size()) < 0) {
    // It exited before reading: its status says why.
  }
  close(in[1]);
  const Steady::time_point deadline = Steady::now() + timeout;
  std::string said;
  bool timed_out = false;
  if (capture) {
    char buf[4096];
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      pollfd p{.fd = out[0], .events = POLLIN, .revents = 0};
      int n = poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        timed_out = n == 0;
        break;
      }
      ssize_t got = read(out[0], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      if (said.size() < 65536) said.append(buf, static_cast<size_t>(got));
    }
    close(out[0]);
  }
  // A daemonising program returns once its daemon listens; a front end once it has answered.
  int status = 0;
  bool killed = false;
  while (true) {
    pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0) {
      if (errno == EINTR) continue;
      return Err(Internal(std::string("waitpid: ") + strerror(errno)));
    }
    if (timed_out || Steady::now() >= deadline) {
      kill(pid, SIGKILL);
      killed = true;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (killed) {
    return Err(Unavailable(argv[0] + " gave no answer in " +
                           std::to_string(timeout.count() / 1000) + " s"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    return Err(Internal(argv[0] + " failed (" +
                        (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                           : "signal " + std::to_string(WTERMSIG(status))) +
                        ")" + (said.empty() ? "" : ": " + said.substr(0, 512))));
  }
  return said;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// "2G", "2048M", "1.5G" as the daemon prints a memory limit: in MiB; -1 when not one.
int64_t ParseMiB(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return -1;
  const char unit = text.back();
  if (unit != 'G' && unit != 'M') return -1;
  text.remove_suffix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return -1;
  return static_cast<int64_t>(value * (unit == 'G' ? 1024 : 1) + 0.5);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace

MpsShare MpsShareOf(int64_t milli, int64_t memory_bytes) {
  return MpsShare{.thread_percent = static_cast<int>(std::clamp<int64_t>(milli / 10, 1, 100)),
                  .memory_bytes = std::max<int64_t>(memory_bytes, 0)};
}

MpsDaemons::MpsDaemons(Options options, Env& env) : options_(std::move(options)), env_(env) {
  options_.dir = Absolute(options_.dir);
}

std::string MpsDaemons::PipeDir(int gpu) const {
  return options_.dir + "/gpu" + std::to_string(gpu) + "/pipe";
}

std::string MpsDaemons::LogDir(int gpu) const {
  return options_.dir + "/gpu" + std::to_string(gpu) + "/log";
}

const MpsDaemons::Daemon* MpsDaemons::Find(int gpu) const {
  auto it = daemons_.find(gpu);
  return it == daemons_.end() ? nullptr : &it->second;
}

Result<std::string> MpsDaemons::Talk(const std::string& pipe, const std::string& command) {
  return RunControl({options_.program}, {{"CUDA_MPS_PIPE_DIRECTORY", pipe}}, command + "\n",
                    /*capture=*/true, options_.timeout);
}

Result<std::string> MpsDaemons::Command(int gpu, const std::string& command) {
  if (!daemons_.count(gpu)) return Err(NotFound("no MPS daemon on GPU " + std::to_string(gpu)));
  ASSIGN_OR_RETURN(std::string said, Talk(PipeDir(gpu), command));
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  return said;
}

pid_t MpsDaemons::FindDaemon(const std::string& pipe) const {
  const std::string program = fs::path(options_.program).filename().string();
  const std::string wanted = std::string(kPipeVariable) + pipe;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    // The daemon alone ("PROGRAM -d"): its front ends (a command) have ended, and its servers
    // are another program.
    const std::string cmdline = ReadWhole(e.path().string() + "/cmdline");
    const size_t end0 = cmdline.find('\0');
    if (end0 == std::string::npos || cmdline.compare(end0, 4, std::string("\0-d\0", 4)) != 0 ||
        fs::path(cmdline.substr(0, end0)).filename().string() != program)
      continue;
    std::string environ_text = ReadWhole(e.path().string() + "/environ");
    size_t at = 0;
    while (at < environ_text.size()) {
      size_t end = environ_text.find('\0', at);
      if (end == std::string::npos) end = environ_text.size();
      if (std::string_view(environ_text).substr(at, end - at) == wanted) {
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        if (env_.ProcessStartTicks(pid) != 0) return pid;
      }
      at = end + 1;
    }
  }
  return 0;
}

Status MpsDaemons::Start(Daemon& d) {
  const std::string base = options_.dir + "/gpu" + std::to_string(d.gpu.index);
  const std::string pipe = PipeDir(d.gpu.index), log = LogDir(d.gpu.index);
  if (pipe.size() + kLongestSocket.size() > kSocketPathMax) {
    return InvalidArgument("the MPS pipe directory " + pipe +
                           " is too long a path for the daemon's sockets (data directory with a "
                           "shorter path needed)");
  }
  // DATA/mps and gpuN are the agent's and readable (the user's client finds the pipe directory
  // through them); the pipe directory is the served user's alone, the log directory the
  // agent's alone. A dead daemon's sockets are cleared away with its pipe directory.
  for (const std::string& d_ : {options_.dir, base}) {
    RETURN_IF_ERROR(env_.CreateDirs(d_));
    RETURN_IF_ERROR(env_.SetMode(d_, 0755));
  }
  std::error_code ec;
  fs::remove_all(pipe, ec);
  if (ec) return Internal("cannot clear " + pipe + ": " + ec.message());
  RETURN_IF_ERROR(env_.CreateDirs(pipe));
  RETURN_IF_ERROR(env_.SetMode(pipe, 0700));
  if (env_.RunsAsRoot()) RETURN_IF_ERROR(env_.SetOwner(pipe, d.user.uid, d.user.gid));
  RETURN_IF_ERROR(env_.CreateDirs(log));
  RETURN_IF_ERROR(env_.SetMode(log, 0700));
  // One earlier log is kept beside the new one: a daemon that died said why there.
  if (fs::exists(log + "/control.log", ec))
    fs::rename(log + "/control.log", log + "/control.log.1", ec);
  Result<std::string> started = RunControl({options_.program, "-d"},
                                           {{"CUDA_MPS_PIPE_DIRECTORY", pipe},
                                            {"CUDA_MPS_LOG_DIRECTORY", log},
                                            {"CUDA_VISIBLE_DEVICES", d.gpu.cuda_name}},
                                           "", /*capture=*/false, options_.timeout);
  if (!started) return started.error();
  // `-d` returns once the daemon listens; its pid is found by its pipe directory.
  const Steady::time_point deadline = Steady::now() + std::chrono::seconds(2);
  while ((d.pid = FindDaemon(pipe)) == 0 && Steady::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (d.pid == 0) return Internal(options_.program + " -d started no daemon for " + pipe);
  d.start_ticks = env_.ProcessStartTicks(d.pid);
  d.caps = MpsShare{.thread_percent = 0, .memory_bytes = -1};  // none set yet
  LogInfo("MPS daemon for GPU " + std::to_string(d.gpu.index) + " (" + d.gpu.cuda_name +
              ") started as pid " + std::to_string(d.pid) + " for user " + d.user.name +
              " (pipe directory " + pipe + ")",
          options_.context);
  return Status::Ok();
}

Status MpsDaemons::Cap(Daemon& d) {
  MpsShare caps{.thread_percent = 1, .memory_bytes = 0};
  bool unbounded_memory = false;
  for (const auto& [job, share] : d.jobs) {
    caps.thread_percent = std::max(caps.thread_percent, share.thread_percent);
    if (share.memory_bytes <= 0) unbounded_memory = true;
    caps.memory_bytes = std::max(caps.memory_bytes, share.memory_bytes);
  }
  // A job that asked no memory may use the GPU's: the default is then the whole of it.
  if (unbounded_memory) caps.memory_bytes = d.gpu.memory_bytes;
  if (caps == d.caps) return Status::Ok();
  const std::string pipe = PipeDir(d.gpu.index);
  const std::string threads = std::to_string(caps.thread_percent);
  const int64_t mib = std::max<int64_t>(caps.memory_bytes >> 20, 1);
  const std::string memory = std::to_string(mib) + "M";
  std::string commands = "set_default_active_thread_percentage " + threads + "\n";
  if (caps.memory_bytes > 0) commands += "set_default_device_pinned_mem_limit 0 " + memory + "\n";
  // Its running server (one user's) caps the clients that connect from now on.
  ASSIGN_OR_RETURN(std::string servers, Talk(pipe, "get_server_list"));
  for (const std::string& server : Lines(servers)) {
    if (!std::all_of(server.begin(), server.end(), ::isdigit)) continue;
    commands += "set_active_thread_percentage " + server + " " + threads + "\n";
    if (caps.memory_bytes > 0)
      commands += "set_device_pinned_mem_limit " + server + " 0 " + memory + "\n";
  }
  commands.pop_back();
  ASSIGN_OR_RETURN(std::string said, Talk(pipe, commands));
  // Read back: what the daemon holds now is what was asked.
  std::string ask = "get_default_active_thread_percentage";
  if (caps.memory_bytes > 0) ask += "\nget_default_device_pinned_mem_limit 0";
  ASSIGN_OR_RETURN(std::string back, Talk(pipe, ask));
  std::vector<std::string> lines = Lines(back);
  double got_threads = -1;
  if (!lines.empty()) {
    std::from_chars(lines[0].data(), lines[0].data() + lines[0].size(), got_threads);
  }
  const bool threads_ok = static_cast<int>(got_threads + 0.5) == caps.thread_percent;
  const bool memory_ok = caps.memory_bytes <= 0 || (lines.size() > 1 && ParseMiB(lines[1]) == mib);
  if (!threads_ok || !memory_ok) {
    return Internal("the MPS daemon of GPU " + std::to_string(d.gpu.index) +
                    " did not take its limits (" + threads + " % of threads" +
                    (caps.memory_bytes > 0 ? ", " + memory + " of memory" : "") + "): it said '" +
                    back.substr(0, 200) + "' to '" + said.substr(0, 200) + "'");
  }
  d.caps = caps;
  return Status::Ok();
}

void MpsDaemons::Stop(Daemon& d) {
  const std::string pipe = PipeDir(d.gpu.index);
  // It quits when its clients have; a job's processes are gone when its last one ended, so
  // the wait is short: one that does not quit in time is killed, with its servers.
  Result<std::string> quit = RunControl({options_.program}, {{"CUDA_MPS_PIPE_DIRECTORY", pipe}},
                                        "quit -t 5\n", /*capture=*/true, options_.timeout);
  if (d.pid != 0 && env_.ProcessStartTicks(d.pid) == d.start_ticks) {
    const Steady::time_point deadline = Steady::now() + std::chrono::seconds(1);
    while (env_.ProcessStartTicks(d.pid) == d.start_ticks && Steady::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (env_.ProcessStartTicks(d.pid) == d.start_ticks) {
      LogWarn("MPS daemon of GPU " + std::to_string(d.gpu.index) + " (pid " +
                  std::to_string(d.pid) + ") did not quit" +
                  (quit ? "" : " (" + quit.error().message() + ")") + ": killed",
              options_.context);
      (void)env_.Signal(d.pid, SIGKILL);
    }
  }
  std::error_code ec;
  fs::remove_all(pipe, ec);
  if (d.pid != 0) {
    LogInfo(
        "MPS daemon for GPU " + std::to_string(d.gpu.index) + " stopped: no shared job left on it",
        options_.context);
  }
}

Result<std::string> MpsDaemons::Join(JobAttempt job, const MpsGpu& gpu, const MpsUser& user,
                                     MpsShare share) {
  if (!enabled())
    return Err(Unavailable("MPS is off on this node (baton agent --mps-control off)"));
  auto it = daemons_.find(gpu.index);
  if (it != daemons_.end() && it->second.user.uid != user.uid) {
    return Err(Conflict("GPU " + std::to_string(gpu.index) + "'s MPS daemon serves user " +
                        it->second.user.name +
                        "'s jobs (MPS runs one user's jobs on a GPU at a time)"));
  }
  const bool fresh = it == daemons_.end();
  if (fresh) it = daemons_.emplace(gpu.index, Daemon{.gpu = gpu, .user = user}).first;
  Daemon& d = it->second;
  d.jobs[job] = share;
  Status st = fresh ? Start(d) : Status::Ok();
  if (st.ok()) st = Cap(d);
  if (!st.ok()) {
    d.jobs.erase(job);
    if (d.jobs.empty()) {
      Stop(d);  // also one that started but was not found: asked to quit through its pipe
      daemons_.erase(it);
    }
    return Err(st);
  }
  return PipeDir(gpu.index);
}

void MpsDaemons::Leave(JobAttempt job) {
  for (auto it = daemons_.begin(); it != daemons_.end(); ++it) {
    Daemon& d = it->second;
    if (!d.jobs.erase(job)) continue;
    if (d.jobs.empty()) {
      Stop(d);
      daemons_.erase(it);
    } else if (Status st = Cap(d); !st.ok()) {
      LogWarn(st.message(), options_.context);
    }
    return;
  }
}

void MpsDaemons::Check() {
  const Steady::time_point now = Steady::now();
  for (auto& [gpu, d] : daemons_) {
    if (d.pid != 0 && env_.ProcessStartTicks(d.pid) == d.start_ticks) continue;
    if (now < d.retry_at) continue;
    if (d.pid != 0) {
      LogWarn("MPS daemon of GPU " + std::to_string(gpu) + " (pid " + std::to_string(d.pid) +
                  ") died: starting it again (its jobs' processes reconnect when they next "
                  "start CUDA)",
              options_.context);
    }
    d.pid = 0;
    ++d.restarts;
    Status st = Start(d);
    if (st.ok()) st = Cap(d);
    if (!st.ok()) {
      d.retry_at = now + std::chrono::seconds(5);  // not a start a loop while it cannot
      LogError("MPS daemon of GPU " + std::to_string(gpu) + ": " + st.message() +
                   " (tried again in 5 s)",
               options_.context);
    }
  }
}

void MpsDaemons::Recover(const std::vector<Live>& live) {
  // The daemons an earlier run left: GPU index -> pid.
  std::map<int, pid_t> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(options_.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 4 || name.rfind("gpu", 0) != 0 ||
        !std::all_of(name.begin() + 3, name.end(), ::isdigit))
      continue;
    const int gpu = std::stoi(name.substr(3));
    if (pid_t pid = FindDaemon(PipeDir(gpu)); pid != 0) found[gpu] = pid;
  }
  std::set<int> kept;
  for (const Live& l : live) {
    auto [it, fresh] = daemons_.try_emplace(l.gpu.index, Daemon{.gpu = l.gpu, .user = l.user});
    Daemon& d = it->second;
    if (fresh) {
      // The pipe directory's owner is the user the daemon served.
      struct stat st {};
      if (found.count(l.gpu.index) && env_.RunsAsRoot() &&
          stat(PipeDir(l.gpu.index).c_str(), &st) == 0 && st.st_uid != l.user.uid) {
        daemons_.erase(it);
        continue;  // another user's job on that GPU: it ran without MPS
      }
    } else if (d.user.uid != l.user.uid) {
      continue;
    }
    d.jobs[l.job] = l.share;
    kept.insert(l.gpu.index);
  }
  for (auto& [gpu, d] : daemons_) {
    if (auto f = found.find(gpu); f != found.end()) {
      d.pid = f->second;
      d.start_ticks = env_.ProcessStartTicks(d.pid);
      d.caps = MpsShare{.thread_percent = 0, .memory_bytes = -1};
      LogInfo("MPS daemon for GPU " + std::to_string(gpu) + " (pid " + std::to_string(d.pid) +
                  ") kept for its " + std::to_string(d.jobs.size()) + " job(s)",
              options_.context);
    }
  }
  for (const auto& [gpu, pid] : found) {
    if (kept.count(gpu)) continue;
    Daemon orphan;  // built step by step: GCC 12 misreads the aggregate (bug 107919)
    orphan.gpu.index = gpu;
    orphan.pid = pid;
    orphan.start_ticks = env_.ProcessStartTicks(pid);
    LogInfo("MPS daemon for GPU " + std::to_string(gpu) + " (pid " + std::to_string(pid) +
                ") left by an earlier run holds no job: stopping it",
            options_.context);
    Stop(orphan);
  }
  Check();  // those that died meanwhile start again, and every kept one gets its limits
  for (auto& [gpu, d] : daemons_) {
    if (Status st = Cap(d); !st.ok()) LogWarn(st.message(), options_.context);
  }
}

}  // namespace baton::agent
