// The jobs an agent runs, keyed by id and attempt, and what the controller's orders, the
// agent's clock and its jobs' ends decide for them, as effects the agent carries out: attempts
// to start, signals to send, run files to write again, events for the controller. No I/O, no
// threads, time passed in: the agent's main loop hands it an order, a tick, an end it read (a
// reaped shim's status, a launch that failed) or a run file read back, and does what it
// returns (agent.cc, agent_launch.cc); its tests drive it directly. Not thread-safe (the main
// loop's).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/executor.h"
#include "agent/job_end.h"
#include "agent/run_file.h"
#include "agent/stop_clock.h"
#include "core/ids.h"
#include "core/protocol.h"
#include "core/time.h"

namespace baton::agent {

// An attempt of a job on this node, from its launch until the controller has its end and all
// of its output.
struct RunningJob {
  LaunchOrder order;
  Started process;
  TimePoint started_at{};
  bool adopted = false;  // not our child: watch its status file instead of waitpid
  bool exited = false;
  ExitStatus status;
  bool lost = false;
  bool launch_failed = false;  // it never started: said so to the controller
  StopClock stop;              // its time limit, notice and stop (stop_clock.h)
  int64_t log_shipped = 0;     // bytes of the log the controller has (from its start)
  // Past its output limit (log_plan.h, agent_output.cc): how far the node's log was freed,
  // whether the controller was told, and how much of its marker and tail the controller has.
  int64_t punched_to = 0;
  bool limit_told = false;
  bool punch_failed = false;
  int64_t tail_sent = 0;
  // Signals due before the shim wrote the job's pid (it does within a millisecond or so of
  // starting): sent in order once it has, dropped if the shim ends first (TakeDueSignals).
  std::vector<int> unsent;
  int64_t metrics_scanned = 0;  // bytes of the metrics file looked at for checkpoints
  int64_t metrics_shipped = 0;  // bytes of the metrics file the controller has
  std::string last_checkpoint;  // the latest checkpoint its metrics file reported
  bool start_reported = false;
  bool exit_acked = false;  // the controller has how it ended
};

// What of a job's log a report carries: bytes of its head (else of its marker and tail), or
// that it cannot be read.
struct LogShipment {
  int64_t bytes = 0;
  bool head = true;
  bool unreadable = false;
};

// The job's signals that waited for its pid (RunningJob::unsent) to send now, taken, as the
// agent's look for the pid found: all, in order, once `pid_known`; none, all dropped, once its
// shim has ended without writing it (`shim_alive` false: the job never ran); else none yet.
std::vector<int> TakeDueSignals(RunningJob& job, bool pid_known, bool shim_alive);

class JobBook {
 public:
  using Map = std::map<JobAttempt, RunningJob>;

  // What the agent is to do, in this order.
  struct Effects {
    std::vector<LaunchOrder> launches;                // attempts to start (not here yet)
    std::vector<std::pair<JobAttempt, int>> signals;  // to each job's process group, in order
    std::vector<JobAttempt> relimited;  // a new time limit: their run files written again
    // Stops under way whose SIGKILL a later stop brought forward: their deadline files
    // ($BATON_PREEMPT_DEADLINE) written again.
    std::vector<JobAttempt> deadlines;
  };

  // A launch or stop order. A launch of an attempt not here is to be started; of one here that
  // runs, with another time limit (`baton update --time`), its clock re-armed and its run file
  // written again; else nothing. A stop of a job that runs: its clock's signals.
  Effects Take(const Order& order, TimePoint now);
  // What the running jobs' clocks say at `now`: time limits reached, notices due, graces over.
  Effects Tick(TimePoint now);

  // Attempt `key` (here) ended as `facts` say (its shim's status, or none: lost): kept as
  // ended, with its status and whether it was lost or never started; its exited event from
  // node `node` (EndEvent).
  JobEvent Exited(const JobAttempt& key, const EndFacts& facts, const std::string& node,
                  TimePoint now);
  // `job` could not be started (`code`, `message`: a launch that failed before it ran): kept as
  // ended, and its started and exited events, both saying the launch failed.
  std::vector<JobEvent> LaunchFailed(RunningJob job, int code, const std::string& message);
  // An attempt read back from its run file by a restarted agent: not its child (its shim's
  // status file says how it ends), its start known to the controller (the registration tells
  // it), its log and metrics shipped again from their start (offsets make that harmless).
  RunningJob& Adopt(RunRecord record);

  // A report was acknowledged: the controller has the bytes of each job's log and metrics file
  // it carried, and the ends it carried (JobAttempts).
  void Acknowledged(const std::map<JobAttempt, LogShipment>& logs,
                    const std::map<JobAttempt, int64_t>& metrics, const std::set<JobAttempt>& ends);
  // A registration told the controller every job's start and end. A new leader's
  // (`new_leader`) has only what reached the store, not the logs the old one was sent: they go
  // again from their start. The jobs in `held` were told as running: their end is still owed.
  void Registered(bool new_leader, const std::set<JobAttempt>& held = {});

  // Takes out the attempts the agent is done with: the controller has their end and, as
  // `all_shipped` says (the agent reads the files' sizes), all of their log and metrics; none
  // whose kill waits for a pid (a launch that failed after the shim started keeps it).
  std::vector<RunningJob> TakeDone(const std::function<bool(const RunningJob&)>& all_shipped);

  // Whether a job still runs or a signal waits for a pid: the main loop looks again soon.
  bool Busy() const;
  // Which of the node's `gpus` GPUs a running batch job holds (what simulated GPUs read as
  // load). A session's do not count: a shell mostly waits for its user.
  std::vector<bool> HeldGpus(size_t gpus) const;

  // As a std::map of the jobs by JobAttempt, for the agent's walks and records.
  RunningJob& operator[](const JobAttempt& key) { return jobs_[key]; }
  Map::iterator find(const JobAttempt& key) { return jobs_.find(key); }
  Map::const_iterator find(const JobAttempt& key) const { return jobs_.find(key); }
  Map::iterator erase(Map::iterator it) { return jobs_.erase(it); }
  Map::iterator begin() { return jobs_.begin(); }
  Map::iterator end() { return jobs_.end(); }
  Map::const_iterator begin() const { return jobs_.begin(); }
  Map::const_iterator end() const { return jobs_.end(); }
  size_t size() const { return jobs_.size(); }

 private:
  Map jobs_;
};

}  // namespace baton::agent
