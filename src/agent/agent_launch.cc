// The agent's launches: the job's process spec (launcher.h: its directory, environment, NUMA
// binding, user and cgroup) started through the Executor, its run file, and a launch that
// fails before the job ran (reported as the job's end with the reason, in its log too).
#include <signal.h>
#include <unistd.h>

#include <algorithm>

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
                   .at = job.started_at,
                   .gpu_sharing = ShareGpu(order, spec)};
  const JobAttempt attempt{order.job, order.attempt};
  auto proc = executor_.Start(spec);
  if (!proc) {
    if (!spec.cgroup.empty()) (void)cgroups_.Remove(spec.cgroup);
    mps_->Leave(attempt);
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
    mps_->Leave(attempt);
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

namespace {

void SetVariable(std::vector<std::string>& env, const std::string& key, const std::string& value) {
  const std::string prefix = key + "=";
  std::erase_if(env, [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  env.push_back(prefix + value);
}

// The GPU as its MPS daemon knows it: by its UUID (else its ordinal on the host).
MpsGpu MpsGpuOf(const Gpu& gpu, int index) {
  return MpsGpu{.index = index,
                .cuda_name = !gpu.uuid.empty()
                                 ? gpu.uuid
                                 : std::to_string(gpu.physical >= 0 ? gpu.physical : gpu.index),
                .memory_bytes = gpu.memory_bytes};
}

// Whose a job's processes are: its user's when the agent is root (Prepare found the user),
// else the agent's own.
Result<MpsUser> MpsUserOf(const std::string& name, bool as_root) {
  MpsUser user{.uid = geteuid(), .gid = getegid(), .name = name};
  if (as_root) {
    ASSIGN_OR_RETURN(UnixUser found, LookupUnixUser(name));
    user.uid = found.uid;
    user.gid = found.gid;
  }
  return user;
}

// Whether the job shares one whole GPU that an MPS daemon may serve: not a MIG instance (MIG
// caps its own), not in a container (which would not see the daemon's pipe directory).
bool MpsMayServe(const LaunchOrder& o) {
  return o.milli_per_gpu < 1000 && o.gpus.size() == 1 && o.image.empty();
}

}  // namespace

std::string Agent::ShareGpu(const LaunchOrder& order, ProcessSpec& spec) {
  if (order.milli_per_gpu >= 1000 || order.gpus.size() != 1) return "";
  const int index = order.gpus[0];
  auto uncapped = [&](const std::string& why) -> std::string {
    std::string line = "baton: no MPS daemon caps this job's share of GPU " +
                       std::to_string(index) + " (" + why +
                       "); its CUDA_MPS_* variables ask it to keep to its share\n";
    if (Status st = env_.AppendFile(JobDir(order.job) + "/output.log", line); !st.ok())
      LogWarn(st.message(), Context(order.job));
    LogInfo("job " + order.job.ToString() + ": " + line.substr(7, line.size() - 8),
            Context(order.job));
    return "none";
  };
  if (index < 0 || static_cast<size_t>(index) >= gpus_.size()) return uncapped("no such GPU");
  const Gpu& gpu = gpus_[static_cast<size_t>(index)];
  if (!gpu.mig_profile.empty()) return uncapped("a MIG instance is shared by MIG's own limits");
  if (!MpsMayServe(order)) return uncapped("a job in a container image does not see the daemon");
  Result<MpsUser> user = MpsUserOf(order.user, as_root_);
  if (!user) return uncapped(user.error().message());
  auto pipe = mps_->Join(JobAttempt{order.job, order.attempt}, MpsGpuOf(gpu, index), *user,
                         MpsShareOf(order.milli_per_gpu, order.gpu_memory_bytes));
  if (!pipe) return uncapped(pipe.error().message());
  SetVariable(spec.env, "CUDA_MPS_PIPE_DIRECTORY", *pipe);
  // The daemon sees its GPU alone, by this name: a client naming it otherwise would not find
  // it (NVIDIA's MPS guide: UUIDs, not indices).
  SetVariable(spec.env, "CUDA_VISIBLE_DEVICES", gpu.uuid.empty() ? "0" : gpu.uuid);
  return "mps";
}

void Agent::RecoverMps() {
  std::vector<MpsDaemons::Live> live;
  for (const auto& [key, job] : jobs_) {
    const LaunchOrder& o = job.order;
    if (job.exited || !MpsMayServe(o)) continue;
    const int index = o.gpus[0];
    if (index < 0 || static_cast<size_t>(index) >= gpus_.size()) continue;
    const Gpu& gpu = gpus_[static_cast<size_t>(index)];
    Result<MpsUser> user = MpsUserOf(o.user, as_root_);
    if (!gpu.mig_profile.empty() || !user) continue;
    live.push_back(MpsDaemons::Live{.job = key,
                                    .gpu = MpsGpuOf(gpu, index),
                                    .user = *user,
                                    .share = MpsShareOf(o.milli_per_gpu, o.gpu_memory_bytes)});
  }
  mps_->Recover(live);
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
