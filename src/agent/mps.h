// NVIDIA MPS on this node, owned by the agent (issue 42): one MPS control daemon per GPU that
// holds fractional jobs, started when the first of them starts there and stopped when the last
// one ends. Each daemon has a pipe directory and a log directory of its own (DATA/mps/gpuN/
// pipe and log) and sees its GPU alone (CUDA_VISIBLE_DEVICES); its defaults cap each client at
// the largest share of the jobs on the GPU (threads and pinned device memory), and each job's
// own CUDA_MPS_* variables cap it further at its share.
//
// MPS runs one server per GPU for one Unix user at a time: a client of another user waits
// until that server's clients are all gone. So a daemon serves one user's jobs: its pipe
// directory is that user's (0700) and no one else's client can reach it; a job of another user
// on the same GPU runs without MPS, and says so (`gpu_sharing` "none").
//
// The daemon is run as `nvidia-cuda-mps-control -d` and talked to as its own front end does
// (a command on its stdin, the answer on its stdout), with CUDA_MPS_PIPE_DIRECTORY naming it.
// It outlives an agent's restart, as the jobs do: a restarted agent keeps the daemons of GPUs
// that still hold fractional jobs and stops the rest (Recover). One that dies is started again
// with its limits (Check). Everything here runs on the agent's main loop.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/env.h"
#include "core/ids.h"
#include "core/log.h"
#include "core/status.h"
#include "core/time.h"

namespace baton::agent {

// A fractional job's share of its GPU, as MPS caps it.
struct MpsShare {
  int thread_percent = 100;  // of the GPU's SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), 1..100
  int64_t memory_bytes = 0;  // device memory it may pin; 0: it asked none
  bool operator==(const MpsShare&) const = default;
};

// The GPU a daemon serves: the agent's index for it (the directory's name: gpuN), the name CUDA
// knows it by (its UUID, else its ordinal on the host) and its memory.
struct MpsGpu {
  int index = 0;
  std::string cuda_name;
  int64_t memory_bytes = 0;
};

// Whose jobs a daemon serves.
struct MpsUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

class MpsDaemons {
 public:
  struct Options {
    std::string dir;                                  // DATA/mps
    std::string program = "nvidia-cuda-mps-control";  // "" = MPS off; else on PATH or a path
    Duration timeout = std::chrono::seconds(10);      // a start's or a command's longest wait
    LogContext context;                               // the agent's, for what is logged
  };
  MpsDaemons(Options options, Env& env);

  bool enabled() const { return !options_.program.empty(); }

  // `job` starts on `gpu` with `share`, as `user`: the GPU's daemon (started now when there is
  // none) caps it. Returns the pipe directory for the job's CUDA_MPS_PIPE_DIRECTORY, or why MPS
  // does not cap this job (MPS is off; the control program is missing or failed; the GPU's
  // daemon serves another user's jobs). The job is counted on the GPU only when it is capped.
  Result<std::string> Join(JobAttempt job, const MpsGpu& gpu, const MpsUser& user, MpsShare share);
  // `job` ended (or never started): a GPU left without jobs has its daemon stopped.
  void Leave(JobAttempt job);
  // Starts again, with its limits, each daemon that died. For the agent's main loop.
  void Check();

  // A job that outlived the agent's last run, on a shared GPU.
  struct Live {
    JobAttempt job;
    MpsGpu gpu;
    MpsUser user;
    MpsShare share;
  };
  // At the agent's start, before any Join: the daemons an earlier run left under `dir`. A GPU
  // that holds one of `live` keeps its daemon (or gets one again, if it died meanwhile); the
  // others, orphans, are stopped and their directories removed.
  void Recover(const std::vector<Live>& live);

  // What one daemon is now (tests, logs).
  struct Daemon {
    MpsGpu gpu;
    MpsUser user;
    pid_t pid = 0;
    uint64_t start_ticks = 0;  // with the pid, tells it from a later process given that pid
    std::map<JobAttempt, MpsShare> jobs;
    MpsShare caps;  // what its defaults were last set to
    int restarts = 0;
    std::chrono::steady_clock::time_point retry_at{};  // a failed start is tried again then
  };
  const Daemon* Find(int gpu) const;
  // Sends `command` to GPU `gpu`'s daemon, as `nvidia-cuda-mps-control` reads it, and returns
  // its answer without the trailing newline.
  Result<std::string> Command(int gpu, const std::string& command);
  std::string PipeDir(int gpu) const;
  std::string LogDir(int gpu) const;

 private:
  // Makes the GPU's directories afresh and starts its daemon; its pid found.
  Status Start(Daemon& d);
  // Sets the daemon's defaults (and its running servers') to the largest share of its jobs,
  // and reads them back.
  Status Cap(Daemon& d);
  // Asks the daemon to quit (then kills it if it does not) and removes its directories.
  void Stop(Daemon& d);
  Result<std::string> Talk(const std::string& pipe, const std::string& command);
  // The control daemon whose pipe directory is `pipe`: its pid, or 0.
  pid_t FindDaemon(const std::string& pipe) const;

  Options options_;
  Env& env_;
  std::map<int, Daemon> daemons_;  // by GPU index
};

// The share a fractional job of `milli` thousandths of a GPU, asking `memory_bytes` of its
// memory, is capped at.
MpsShare MpsShareOf(int64_t milli, int64_t memory_bytes);

}  // namespace baton::agent
