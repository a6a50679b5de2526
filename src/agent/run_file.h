// The agent's durable record of the jobs it runs, its only way to find them again after a
// restart: one run file per job attempt in DATA_DIR/run/, written (atomically, through the Env)
// when the attempt starts and removed once the controller has acknowledged how it ended. The
// shim's status and pid files for the attempt lie beside it (run file + ".exit", + ".pid").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/env.h"
#include "agent/executor.h"
#include "core/log.h"
#include "core/protocol.h"

namespace baton::agent {

struct RunRecord {
  LaunchOrder order;
  Started process;
  TimePoint started_at{};
  bool operator==(const RunRecord&) const = default;
};

// Line 1 "shim_pid job_pid shim_start_ticks started_at_ms", line 2 the launch order as the
// protocol encodes it.
std::string EncodeRunRecord(const RunRecord& record);
Result<RunRecord> DecodeRunRecord(std::string_view text);

class RunFiles {
 public:
  // `dir` is DATA_DIR/run; `env` must outlive this. `context` says whose run files these are
  // in log lines.
  RunFiles(Env& env, std::string dir, LogContext context);

  std::string PathOf(JobId job, int attempt) const;
  // Replaces the attempt's run file, mode 0600 (it holds the job's whole environment). Not
  // fsynced: the file need only outlive the agent
  // process; a machine that crashes takes its jobs with it (and a torn file is read back as
  // unreadable, and dropped).
  Status Write(const RunRecord& record);
  // Every record in `dir`. A file that cannot be decoded is removed (nothing can be adopted
  // from it) and one that cannot be read is left; both are logged. An error when `dir`
  // cannot be listed.
  Result<std::vector<RunRecord>> ReadAll();
  // Removes the attempt's run, status and pid files; the first failure is returned.
  Status Remove(JobId job, int attempt);

 private:
  Env& env_;
  std::string dir_;
  LogContext context_;
};

}  // namespace baton::agent
