// The agent's launches: the job's process spec (launcher.h: its directory, environment, NUMA
// binding, user and cgroup) started through the Executor, its run file, and a launch that
// fails before the job ran (reported as the job's end with the reason, in its log too).
#include <signal.h>

#include "agent/agent.h"
#include "core/log.h"

namespace baton::agent {

void Agent::Launch(const LaunchOrder& order, TimePoint now) {
  std::string dir = JobDir(order.job);
  RunningJob job;
  job.order = order;
  job.started_at = now;
  job.log_shipped = SizeOf(dir + "/output.log");         // earlier attempts' output was shipped
  job.metrics_scanned = SizeOf(dir + "/metrics.jsonl");  // earlier attempts' checkpoints are old
  job.metrics_shipped = job.metrics_scanned;             // and their lines were shipped
  auto prepared = launcher_->Prepare(order, CgroupName(order.job, order.attempt));
  if (!prepared) {
    return FailLaunch(std::move(job), prepared.error().exit_code,
                      std::move(prepared.error().message));
  }
  ProcessSpec& spec = *prepared;
  spec.status_path = RunFile(order.job, order.attempt) + ".exit";
  spec.pid_path = RunFile(order.job, order.attempt) + ".pid";
  if (order.interactive != Interactive::kNone) {
    spec.session = std::string(InteractiveName(order.interactive));
    spec.session_socket = SessionSocket(order.job, order.attempt);
  }

  JobEvent started{.job = order.job,
                   .attempt = order.attempt,
                   .kind = JobEvent::Kind::kStarted,
                   .at = job.started_at};
  auto proc = executor_.Start(spec);
  if (!proc) {
    if (!spec.cgroup.empty()) (void)cgroups_.Remove(spec.cgroup);
    return FailLaunch(std::move(job), 127, proc.error().message());
  }
  job.process = *proc;
  // The run file is the agent's only record of the job: an agent that restarted without it
  // would never report the job's end, and the controller would give its GPUs to another job
  // while it still runs. So a job whose run file cannot be written is killed at once and
  // reported as a failed launch with the reason ("no space left on device"), which an
  // operator can act on; the controller fails or retries it as any failed launch. (The file
  // needs the shim's pid, so it cannot be written before the start.)
  if (Status st = WriteRunFile(job); !st.ok()) {
    LogError("job " + order.job.ToString() + " killed: " + st.message(), Context(order.job));
    SignalJob(job, SIGKILL);
    if (!spec.cgroup.empty()) (void)cgroups_.Remove(spec.cgroup);
    return FailLaunch(std::move(job), 127,
                      "node " + options_.name + " cannot record the job: " + st.message());
  }
  if (LogEnabled(LogLevel::kDebug)) {
    std::string gpus;
    for (int g : order.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    LogDebug("job " + order.job.ToString() + " attempt " + std::to_string(order.attempt) +
                 " started as pid " + std::to_string(job.process.shim_pid) + " on GPUs [" + gpus +
                 "]",
             Context(order.job));
  }
  outbox_.Add(started);
  job.start_reported = true;
  jobs_[JobAttempt{order.job, order.attempt}] = std::move(job);
}

void Agent::FailLaunch(RunningJob job, int code, const std::string& message) {
  const JobId id = job.order.job;
  for (JobEvent& e : jobs_.LaunchFailed(std::move(job), code, message)) outbox_.Add(std::move(e));
  // Said in the job's log too, where its user looks first.
  if (Status st = env_.AppendFile(JobDir(id) + "/output.log", "baton: " + message + "\n"); !st.ok())
    LogWarn(st.message(), Context(id));
  LogWarn("job " + id.ToString() + " could not start: " + message, Context(id));
}

}  // namespace baton::agent
