// Runs job processes. Each job is started through a small program, baton-shim (shim/), which
// leaves the agent's session, starts the job in its own process group with stdout and stderr
// appended to the job's log (in its cgroup and as its Unix user, when given), writes the job's
// pid to a file, waits for it, and writes how it ended to a status file. The shim outlives the
// agent, so a restarted agent finds every job's fate in its status file: running jobs survive
// agent restarts and are re-adopted (see Agent).
//
// ProcessExecutor starts the shims through a zygote (`baton-shim --zygote`, shim_main.cc): one
// long-lived shim that forks a copy of itself per job, which saves an exec per job (the dearest
// part of a short job on a node). A zygote that dies is replaced at the next start; the shims it
// made run on, and their ends are then noticed by polling them.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/env.h"
#include "core/status.h"

namespace baton::agent {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the PATH of `env` when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE"
  std::string workdir;
  std::string log_path;     // appended to, created 0644
  std::string status_path;  // written by the shim when the job ends
  std::string pid_path;     // written by the shim once the job runs: its pid
  std::string cpus;         // cpulist the job is bound to ("0-15,32-47"); "" = unbound
  int memory_node = -1;     // NUMA node whose memory the job prefers; -1 = none
  std::string cgroup;       // the cgroup v2 group the job joins (CgroupManager); "" = none
  int processes = 1;        // > 1: that many, with LOCAL_RANK 0.. and RANK rank0..
  int rank0 = 0;
  // A session (`baton run`): "stdin" (the first process's stdin comes from the attached
  // client) or "tty" (the job runs on a terminal of its own); the shim serves it on the Unix
  // socket `session_socket`. "": stdin is /dev/null.
  std::string session;
  std::string session_socket;
  std::string run_as;  // Unix user the job runs as (the shim must be root); "" = the
                       // agent's user. Uid 0 only when this is literally "root";
                       // an unknown user fails Start.
};

struct Started {
  pid_t shim_pid = 0;
  pid_t job_pid = 0;              // also the job's process group id; 0 until read from pid_path
  uint64_t shim_start_ticks = 0;  // /proc start time, to tell a reused pid apart
  bool operator==(const Started&) const = default;
};

// The highest signal number (SIGRTMAX on Linux).
constexpr int kMaxSignal = 64;

struct ExitStatus {
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;
  bool unstarted = false;  // the job never started: its user, working directory or program
  bool fenced = false;     // its shim stopped it: the agent's lease ran out (run/lease)
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual Result<Started> Start(const ProcessSpec& spec) = 0;
  // Sends `sig` to the job's whole process group.
  virtual void Signal(pid_t job_pid, int sig) = 0;
  // Collects shims that ended (children of this process). Non-blocking.
  virtual std::vector<pid_t> Reap() = 0;
  // Whether the shim with this pid and start time is still alive.
  virtual bool Alive(pid_t shim_pid, uint64_t start_ticks) = 0;
};

class ProcessExecutor : public Executor {
 public:
  // `zygote`: start shims through a zygote (else each with its own posix_spawn). `env` (which
  // asks after and signals the shims and jobs) must outlive the executor.
  explicit ProcessExecutor(Env& env, std::string shim_path = DefaultShimPath(), bool zygote = true);
  ~ProcessExecutor() override;
  ProcessExecutor(const ProcessExecutor&) = delete;
  ProcessExecutor& operator=(const ProcessExecutor&) = delete;
  // baton-shim beside the running executable.
  static std::string DefaultShimPath();
  // Whether the shim is there to run.
  Status Check() const;

  Result<Started> Start(const ProcessSpec& spec) override;
  void Signal(pid_t job_pid, int sig) override;
  std::vector<pid_t> Reap() override;
  bool Alive(pid_t shim_pid, uint64_t start_ticks) override;
  // The zygote's pid, 0 when there is none (for tests).
  pid_t zygote_pid() const { return zygote_.pid; }

 private:
  struct Zygote {
    pid_t pid = 0;
    int requests = -1;  // request in, pid out
    int notices = -1;   // pids of shims that ended (non-blocking)
  };
  Result<pid_t> SpawnShim(std::vector<char*>& argv, std::vector<char*>& envp,
                          const posix_spawn_file_actions_t* actions);
  // The new shim through the zygote. `sent` tells whether the request reached it (after which
  // it must not be asked again: the job may be running).
  Result<Started> ForkShim(const std::vector<std::string>& args,
                           const std::vector<std::string>& env, bool* sent);
  Status StartZygote();
  void DropZygote();

  Env& env_;
  std::string shim_path_;
  bool use_zygote_ = true;
  Zygote zygote_;
  std::map<pid_t, uint64_t> from_zygote_;  // shims of the current zygote not yet ended: start ticks
  std::map<pid_t, uint64_t> orphans_;      // shims of a zygote that died: polled until they end
};

// The path of the executable `name`: `name` itself when it has a '/', else the first of the
// ':'-separated directories `dirs` (a PATH) that has it; "" when there is none.
std::string FindExecutable(const std::string& dirs, const std::string& name);

// Sets `attr` (initialised) so that the program spawned with it starts with every signal's
// default handling and none blocked, whatever this process ignores (SIGPIPE) or blocks.
void SetDefaultSignals(posix_spawnattr_t* attr);

// A Unix user as the node's NSS knows them (files, LDAP...). NotFound names the user.
struct UnixUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};
Result<UnixUser> LookupUnixUser(const std::string& name);
// A Unix group's id, by name (a project's checkpoint_group).
Result<gid_t> LookupUnixGroup(const std::string& name);

// The shim's USER argument for a Unix user: "UID:GID:G1,G2,...". Looked up here, in the agent,
// because the shim is linked statically and cannot use NSS. Errors: no such user; a name other
// than "root" for uid 0.
Result<std::string> ShimIdentity(const std::string& user);

// Reads the job's pid from the file the shim writes ("PID\n"): 0 when not there whole (yet).
pid_t ReadJobPid(Env& env, const std::string& path);

// Reads a status file the shim wrote: "exit N", "signal N", "unstarted N" (it could not start
// the job), "fenced N" (the fence's signal N ended it) or "fenced-exit N" (it ended by itself,
// with code N, on the fence's SIGTERM). Nothing when not there whole (yet) or not of that form.
std::optional<ExitStatus> ReadExitStatus(Env& env, const std::string& path);

}  // namespace baton::agent
