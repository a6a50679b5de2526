// Runs job processes. Each job is started through a small "shim": a forked copy of the agent
// that leaves the agent's session, starts the job in its own process group with stdout and
// stderr appended to the job's log, waits for it, and writes how it ended to a status file.
// The shim outlives the agent, so a restarted agent finds every job's fate in its status
// file: running jobs survive agent restarts and are re-adopted (see Agent).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace baton::agent {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the PATH of `env` when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE"
  std::string workdir;
  std::string log_path;           // appended to, created 0644
  std::string status_path;        // written by the shim when the job ends
};

struct Started {
  pid_t shim_pid = 0;
  pid_t job_pid = 0;              // also the job's process group id
  uint64_t shim_start_ticks = 0;  // /proc start time, to tell a reused pid apart
};

struct ExitStatus {
  int exit_code = 0;              // valid when signal == 0
  int signal = 0;
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
  Result<Started> Start(const ProcessSpec& spec) override;
  void Signal(pid_t job_pid, int sig) override;
  std::vector<pid_t> Reap() override;
  bool Alive(pid_t shim_pid, uint64_t start_ticks) override;
};

// Reads a status file the shim wrote: "exit N" or "signal N". Nothing when not there yet.
std::optional<ExitStatus> ReadExitStatus(const std::string& path);
// The start time of a process from /proc/PID/stat, or 0 when it does not exist.
uint64_t ProcessStartTicks(pid_t pid);

}  // namespace baton::agent
