#include "agent/executor.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/splice.h"

namespace baton::agent {
namespace {

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

Result<UnixUser> LookupUnixUser(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(1 << 16);
  int err = getpwnam_r(name.c_str(), &pw, buffer.data(), buffer.size(), &found);
  if (found == nullptr) {
    if (err == 0 || err == ENOENT || err == ESRCH)
      return Err(NotFound("no such user '" + name + "' on this node"));
    return Err(
        Unavailable("cannot look up user '" + name + "' on this node: " + std::strerror(err)));
  }
  return UnixUser{
      .uid = pw.pw_uid, .gid = pw.pw_gid, .home = pw.pw_dir != nullptr ? pw.pw_dir : "/"};
}

Result<gid_t> LookupUnixGroup(const std::string& name) {
  struct group gr {};
  struct group* found = nullptr;
  std::vector<char> buffer(1 << 16);
  int err = getgrnam_r(name.c_str(), &gr, buffer.data(), buffer.size(), &found);
  if (found == nullptr) {
    if (err == 0 || err == ENOENT || err == ESRCH)
      return Err(NotFound("no such group '" + name + "' on this node"));
    return Err(
        Unavailable("cannot look up group '" + name + "' on this node: " + std::strerror(err)));
  }
  return gr.gr_gid;
}

Result<std::string> ShimIdentity(const std::string& user) {
  ASSIGN_OR_RETURN(UnixUser u, LookupUnixUser(user));
  if (u.uid == 0 && user != "root") {
    return Err(PermissionDenied("user '" + user +
                                "' has uid 0; a job runs as uid 0 only when its user is root"));
  }
  std::vector<gid_t> groups(64);
  int count = static_cast<int>(groups.size());
  if (getgrouplist(user.c_str(), u.gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));  // count now says how many there are
    if (getgrouplist(user.c_str(), u.gid, groups.data(), &count) < 0) count = 0;
  }
  std::string text = std::to_string(u.uid) + ":" + std::to_string(u.gid) + ":";
  for (int i = 0; i < count; ++i) text += (i > 0 ? "," : "") + std::to_string(groups[i]);
  return text;
}

ProcessExecutor::ProcessExecutor(Env& env, std::string shim_path, bool zygote)
    : env_(env), shim_path_(std::move(shim_path)), use_zygote_(zygote) {}

ProcessExecutor::~ProcessExecutor() { DropZygote(); }

void ProcessExecutor::DropZygote() {
  if (zygote_.pid == 0) return;
  // Closing its request channel ends the zygote (and a stuck one is killed); the shims it made
  // run on.
  close(zygote_.requests);
  close(zygote_.notices);
  kill(zygote_.pid, SIGKILL);
  int status = 0;
  (void)waitpid(zygote_.pid, &status, 0);
  orphans_.insert(from_zygote_.begin(), from_zygote_.end());
  from_zygote_.clear();
  zygote_ = Zygote{};
}

Status ProcessExecutor::StartZygote() {
  int channel[2], notices[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    return Unavailable(std::string("zygote: socketpair: ") + strerror(errno));
  }
  if (pipe2(notices, O_CLOEXEC) != 0) {
    close(channel[0]);
    close(channel[1]);
    return Unavailable(std::string("zygote: pipe: ") + strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, channel[1], 3);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&fa, notices[1], 4);
  std::string zygote_flag = "--zygote";
  std::vector<char*> argv = {shim_path_.data(), zygote_flag.data(), nullptr};
  std::vector<char*> envp = {nullptr};
  auto pid = SpawnShim(argv, envp, &fa);
  posix_spawn_file_actions_destroy(&fa);
  close(channel[1]);
  close(notices[1]);
  if (!pid) {
    close(channel[0]);
    close(notices[0]);
    return pid.error();
  }
  fcntl(notices[0], F_SETFL, fcntl(notices[0], F_GETFL) | O_NONBLOCK);
  zygote_ = Zygote{.pid = *pid, .requests = channel[0], .notices = notices[0]};
  return Status::Ok();
}

namespace {

void PutU32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

// One request to the zygote (the framing is in shim_main.cc): the shim's pid, or an error when
// the zygote is gone, does not answer within 10 s, or could not fork.
Result<Started> ProcessExecutor::ForkShim(const std::vector<std::string>& args,
                                          const std::vector<std::string>& env, bool* sent) {
  *sent = false;
  std::string body;
  PutU32(body, static_cast<uint32_t>(args.size()));
  PutU32(body, static_cast<uint32_t>(env.size()));
  for (const auto& a : args) body.append(a.c_str(), a.size() + 1);
  for (const auto& e : env) body.append(e.c_str(), e.size() + 1);
  std::string frame;
  PutU32(frame, static_cast<uint32_t>(body.size()));
  frame += body;
  if (!WriteAllTo(zygote_.requests, frame)) return Err(Unavailable("the zygote is gone"));
  *sent = true;
  int64_t answer[2] = {0, 0};
  pollfd reply{.fd = zygote_.requests, .events = POLLIN, .revents = 0};
  if (poll(&reply, 1, 10'000) != 1 || !ReadExactFrom(zygote_.requests, answer, sizeof answer)) {
    return Err(Unavailable("the zygote did not answer"));
  }
  if (answer[0] <= 0) {
    return Err(Unavailable(std::string("the zygote cannot fork: ") +
                           strerror(static_cast<int>(-answer[0]))));
  }
  return Started{.shim_pid = static_cast<pid_t>(answer[0]),
                 .job_pid = 0,
                 .shim_start_ticks = static_cast<uint64_t>(answer[1])};
}

std::string ProcessExecutor::DefaultShimPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "baton-shim" : (self.parent_path() / "baton-shim").string();
}

Status ProcessExecutor::Check() const {
  if (access(shim_path_.c_str(), X_OK) != 0) {
    return Unavailable("cannot run jobs: " + shim_path_ +
                       " is missing (it is built and installed beside baton)");
  }
  return Status::Ok();
}

Result<Started> ProcessExecutor::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Err(InvalidArgument("empty command"));
  std::string program = Lookup(spec.argv[0], spec.env);
  std::string identity = "-";
  if (!spec.run_as.empty()) {
    ASSIGN_OR_RETURN(identity, ShimIdentity(spec.run_as));
  }
  // The job's argv follows the program's path: its argv[0] stays as typed.
  std::vector<std::string> args = {
      shim_path_,
      spec.log_path,
      spec.status_path,
      spec.pid_path,
      spec.workdir,
      spec.cpus.empty() ? "-" : spec.cpus,
      spec.memory_node < 0 ? "-" : std::to_string(spec.memory_node),
      spec.cgroup.empty() ? "-" : spec.cgroup,
      identity,
      spec.processes > 1 ? std::to_string(spec.processes) + ":" + std::to_string(spec.rank0) : "-",
      program};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  if (!spec.session.empty())
    args.insert(args.begin() + 1, {"--session", spec.session_socket, spec.session});
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // An earlier attempt's files would be read as this one's.
  for (const std::string& stale : {spec.status_path, spec.pid_path}) {
    if (Status st = env_.RemoveFile(stale); !st.ok())
      return Err(Unavailable("cannot start the job: " + st.message()));
  }

  if (use_zygote_) {
    // Through the zygote; if it died, through a new one; if none can be had, on our own.
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (zygote_.pid == 0 && !StartZygote().ok()) break;
      bool sent = false;
      auto started = ForkShim(args, spec.env, &sent);
      if (started) {
        from_zygote_[started->shim_pid] = started->shim_start_ticks;
        return started;
      }
      DropZygote();
      // A request the zygote got may have started the job before it failed: not again.
      if (sent) return Err(Unavailable("cannot start the job: " + started.error().message()));
    }
  }
  ASSIGN_OR_RETURN(pid_t shim, SpawnShim(argv, envp, nullptr));
  return Started{.shim_pid = shim, .job_pid = 0, .shim_start_ticks = env_.ProcessStartTicks(shim)};
}

std::string FindExecutable(const std::string& dirs, const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(at, end - at);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
    at = end + 1;
  }
  return "";
}

void SetDefaultSignals(posix_spawnattr_t* attr) {
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(attr, &all);
  posix_spawnattr_setsigmask(attr, &none);
  posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
}

Result<pid_t> ProcessExecutor::SpawnShim(std::vector<char*>& argv, std::vector<char*>& envp,
                                         const posix_spawn_file_actions_t* actions) {
  // posix_spawn starts the shim without copying this (large) process: with glibc it is a
  // vfork-style clone followed by exec. The shim starts with default signal handling and
  // nothing blocked, which the job inherits.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  SetDefaultSignals(&attr);
  pid_t shim = 0;
  int err = posix_spawn(&shim, shim_path_.c_str(), actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (err != 0) return Err(Unavailable("cannot start " + shim_path_ + ": " + strerror(err)));
  return shim;
}

void ProcessExecutor::Signal(pid_t job_pid, int sig) {
  // A group that has ended is no error: the signal had nothing left to stop.
  if (job_pid > 1) (void)env_.Signal(-job_pid, sig);
}

std::vector<pid_t> ProcessExecutor::Reap() {
  std::vector<pid_t> out;
  bool zygote_died = false;
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (pid == zygote_.pid) {
      zygote_died = true;
      continue;
    }
    out.push_back(pid);
  }
  if (zygote_.pid != 0) {
    int32_t ended[256];
    for (;;) {
      ssize_t n = read(zygote_.notices, ended, sizeof ended);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(int32_t)); ++i) {
        out.push_back(ended[i]);
        from_zygote_.erase(ended[i]);
      }
    }
  }
  if (zygote_died) {
    // Its shims are init's children now: their ends are found by looking.
    close(zygote_.requests);
    close(zygote_.notices);
    orphans_.insert(from_zygote_.begin(), from_zygote_.end());
    from_zygote_.clear();
    zygote_ = Zygote{};
  }
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    if (!Alive(it->first, it->second)) {  // gone, a zombie, or its pid reused
      out.push_back(it->first);
      it = orphans_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

bool ProcessExecutor::Alive(pid_t shim_pid, uint64_t start_ticks) {
  uint64_t ticks = env_.ProcessStartTicks(shim_pid);
  return ticks != 0 && (start_ticks == 0 || ticks == start_ticks);
}

namespace {

// The first line of a file the shim writes, without its newline; nothing while that line is not
// there whole (no file yet, or one the shim is writing).
std::optional<std::string> ReadShimLine(Env& env, const std::string& path) {
  auto text = env.ReadRange(path, 0, 64);
  if (!text) return std::nullopt;
  size_t nl = text->find('\n');
  if (nl == std::string::npos) return std::nullopt;
  return text->substr(0, nl);
}

// The whole of `text` as a decimal number, else nothing.
std::optional<long> WholeNumber(std::string_view text) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

pid_t ReadJobPid(Env& env, const std::string& path) {
  std::optional<std::string> line = ReadShimLine(env, path);
  std::optional<long> pid = line ? WholeNumber(*line) : std::nullopt;
  if (!pid || *pid <= 1 || *pid > std::numeric_limits<pid_t>::max()) return 0;
  return static_cast<pid_t>(*pid);
}

std::optional<ExitStatus> ReadExitStatus(Env& env, const std::string& path) {
  std::optional<std::string> line = ReadShimLine(env, path);
  if (!line) return std::nullopt;
  std::string_view text = *line;
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view kind = text.substr(0, space);
  std::optional<long> value = WholeNumber(text.substr(space + 1));
  if (!value || *value < 0 || *value > 255 ||
      (kind != "exit" && kind != "signal" && kind != "unstarted" && kind != "fenced" &&
       kind != "fenced-exit"))
    return std::nullopt;
  // A signal is 1 to 64 (SIGRTMAX): anything else is not one, and is never reported as one
  // (the controller refuses a job event with a signal past 128, and with it the whole report).
  if (kind == "signal" && (*value < 1 || *value > kMaxSignal)) return std::nullopt;
  ExitStatus s;
  // "fenced N" of a shim before "fenced-exit" was N whether a signal or the job's own exit
  // code: past the last signal it can only have been an exit code (143 after a SIGTERM trap).
  if (kind == "signal" || (kind == "fenced" && *value <= kMaxSignal))
    s.signal = static_cast<int>(*value);
  else
    s.exit_code = static_cast<int>(*value);
  s.unstarted = kind == "unstarted";
  s.fenced = kind == "fenced" || kind == "fenced-exit";
  return s;
}

}  // namespace baton::agent
