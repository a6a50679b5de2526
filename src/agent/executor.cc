#include "agent/executor.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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
    if (err == 0 || err == ENOENT || err == ESRCH) return Err(NotFound("no such user '" + name + "' on this node"));
    return Err(Unavailable("cannot look up user '" + name + "' on this node: " + std::strerror(err)));
  }
  return UnixUser{.uid = pw.pw_uid, .gid = pw.pw_gid, .home = pw.pw_dir != nullptr ? pw.pw_dir : "/"};
}

Result<std::string> ShimIdentity(const std::string& user) {
  ASSIGN_OR_RETURN(UnixUser u, LookupUnixUser(user));
  if (u.uid == 0 && user != "root") {
    return Err(PermissionDenied("user '" + user + "' has uid 0; a job runs as uid 0 only when its user is root"));
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

ProcessExecutor::ProcessExecutor(std::string shim_path) : shim_path_(std::move(shim_path)) {}

std::string ProcessExecutor::DefaultShimPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "baton-shim" : (self.parent_path() / "baton-shim").string();
}

Status ProcessExecutor::Check() const {
  if (access(shim_path_.c_str(), X_OK) != 0) {
    return Unavailable("cannot run jobs: " + shim_path_ + " is missing (it is built and installed beside baton)");
  }
  return Status::Ok();
}

Result<Started> ProcessExecutor::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Err(InvalidArgument("empty command"));
  std::string program = Lookup(spec.argv[0], spec.env);
  std::string identity = "-";
  if (!spec.run_as.empty()) { ASSIGN_OR_RETURN(identity, ShimIdentity(spec.run_as)); }
  // The job's argv follows the program's path: its argv[0] stays as typed.
  std::vector<std::string> args = {shim_path_,
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
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  (void)unlink(spec.status_path.c_str());
  (void)unlink(spec.pid_path.c_str());

  // posix_spawn starts the shim without copying this (large) process: with glibc it is a
  // vfork-style clone followed by exec. The shim starts with default signal handling and
  // nothing blocked, which the job inherits.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t shim = 0;
  int err = posix_spawn(&shim, shim_path_.c_str(), nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (err != 0) return Err(Unavailable("cannot start " + shim_path_ + ": " + strerror(err)));
  return Started{.shim_pid = shim, .job_pid = 0, .shim_start_ticks = ProcessStartTicks(shim)};
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

pid_t ReadJobPid(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  if (!(in >> pid) || pid <= 1) return 0;
  return static_cast<pid_t>(pid);
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
