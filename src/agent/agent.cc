#include "agent/agent.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "agent/executor.h"
#include "agent/job_end.h"
#include "agent/metrics_scan.h"
#include "agent/mig_places.h"
#include "codec/json_codec.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/quantity.h"
#include "net/http_client.h"

namespace baton::agent {
namespace fs = std::filesystem;
namespace {

constexpr size_t kLogChunk = 256 * 1024;
// Log bytes in one report, all jobs together: base64 and JSON keep the report well under the
// server's 1 MiB body limit. What does not fit goes in the next report.
constexpr size_t kReportLogBudget = 512 * 1024;

}  // namespace

Agent::Agent(AgentOptions options, AgentDeps deps)
    : options_(std::move(options)),
      places_(options_.mig_reconfigure ? std::make_unique<MigPlacesBackend>(deps.backend)
                                       : nullptr),
      backend_(places_ != nullptr ? *places_ : deps.backend),
      executor_(deps.executor),
      env_(deps.env),
      clock_(deps.clock),
      run_files_(deps.env, options_.data_dir + "/run", Context()) {}

Agent::~Agent() { Stop(); }

std::string Agent::JobDir(JobId id) const { return JobDirOf(options_.data_dir, id); }
std::string Agent::RunFile(JobId id, int attempt) const { return run_files_.PathOf(id, attempt); }

int64_t Agent::SizeOf(const std::string& path) const { return env_.FileSize(path).value_or(0); }

std::string Agent::CgroupName(JobId id, int attempt) const {
  return cgroup_prefix_ + "-" + JobAttempt{id, attempt}.ToString();
}

Status Agent::Start() {
  for (const char* sub : {"/run", "/jobs", "/code-cache", "/deadlines"}) {
    if (Status st = env_.CreateDirs(options_.data_dir + sub); !st.ok())
      return Internal("agent: " + st.message());
  }
  as_root_ = env_.RunsAsRoot();
  RETURN_IF_ERROR(MakePrivate());
  // Without a fence no lease is left for the shims to stop the jobs by (one an earlier run
  // wrote stays with a fencing agent: adopted jobs keep its deadline until a controller is
  // reached).
  if (!options_.fence) {
    if (Status st = env_.RemoveFile(LeasePath()); !st.ok())
      return Internal("agent: " + st.message());
  }
  std::error_code ec;  // absolute() only fails without a working directory: then as given
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "baton-%08x",
                static_cast<unsigned>(
                    std::hash<std::string>{}(fs::absolute(options_.data_dir, ec).string())));
  cgroup_prefix_ = prefix;
  if (options_.cgroups) {
    cgroups_ = CgroupManager::Detect(options_.cgroup_root);
    LogInfo(cgroups_.describe(), Context());
    for (const std::string& w : cgroups_.warnings()) LogWarn(w, Context());
  } else {
    LogWarn("cgroups turned off (--no-cgroups): jobs run without memory, CPU or process limits",
            Context());
  }
  gpus_ = backend_.Discover();
  gpu_addresses_ = backend_.PciAddresses();
  std::vector<int> physical;
  for (const Gpu& g : gpus_) physical.push_back(g.physical >= 0 ? g.physical : g.index);
  health_ = HealthMonitor(std::move(physical), options_.health);
  launcher_.emplace(
      Launcher::Deps{.options = options_,
                     .env = env_,
                     .cgroups = cgroups_,
                     .gpus = gpus_,
                     .gpu_addresses = gpu_addresses_,
                     .backend = backend_.kind(),
                     .as_root = as_root_,
                     .fetch_code = [this](const std::string& id) { return FetchCode(id); }});
  mps_.emplace(
      MpsDaemons::Options{
          .dir = options_.data_dir + "/mps", .program = options_.mps_control, .context = Context()},
      env_);
  const char* path = std::getenv("PATH");
  mps_found_ =
      mps_->enabled() && !FindExecutable(path != nullptr ? path : "", options_.mps_control).empty();
  auto servers = net::ServerList::Parse(options_.server);
  if (!servers) return servers.error();
  servers_ = std::move(*servers);
  RETURN_IF_ERROR(ReadCredential());
  auto poll = net::HttpClient::Create(servers_->Current(), Credential(), options_.tls);
  if (!poll) return poll.error();
  poll_client_ = std::move(*poll);
  auto report = net::HttpClient::Create(servers_->Current(), Credential(), options_.tls);
  if (!report) return report.error();
  report_client_ = std::move(*report);
  if (auto epoch = env_.ReadFile(options_.data_dir + "/epoch")) {
    epoch_ = std::strtoll(epoch->c_str(), nullptr, 10);
  }
  RETURN_IF_ERROR(Recover());
  stopping_ = false;
  if (options_.reclaim) {
    // A first look before the first registration: an agent started again on a node its cloud
    // is taking back says so from the start, and is never offered a job meanwhile.
    reclaim_watch_ = std::make_unique<ReclaimWatch>(*options_.reclaim);
    if (auto first = reclaim_watch_->Look(clock_.Now()); first && *first) {
      std::lock_guard lock(mu_);
      reclaim_seen_ = **first;
    }
    reclaim_thread_ = std::thread([this] { WatchReclaim(); });
  }
  main_thread_ = std::thread([this] { MainLoop(); });
  poll_thread_ = std::thread([this] { PollLoop(); });
  return Status::Ok();
}

void Agent::Stop() {
  if (stopping_.exchange(true)) return;
  { std::lock_guard lock(mu_); }  // a waiter has read stopping_ false and waits, or reads true
  cv_.notify_all();
  if (poll_client_) poll_client_->Cancel();
  if (reclaim_watch_) reclaim_watch_->Cancel();
  if (poll_thread_.joinable()) poll_thread_.join();
  if (reclaim_thread_.joinable()) reclaim_thread_.join();
  if (main_thread_.joinable()) main_thread_.join();
  StopTunnels();
}

// Who may read what the agent keeps (docs/security.md, "Security model"): its run files
// (each job's launch order, environment included), credential and code cache are its own
// (0700 directories); each job's directory is its user's alone (0700, given to the user at
// launch). Jobs run as their users only under root: then the data directory and jobs/ are
// 0711, so that a user passes through to their own job's directory by name and lists
// nothing. Job directories left by an older agent (0755) are closed here too.
Status Agent::MakePrivate() {
  const std::string& data = options_.data_dir;
  std::vector<std::pair<std::string, mode_t>> modes = {
      {data, as_root_ ? 0711 : 0700},
      {data + "/run", 0700},
      {data + "/jobs", as_root_ ? 0711 : 0700},
      {data + "/code-cache", 0700},
      {data + "/deadlines", as_root_ ? 0711 : 0700}};
  for (const auto& [dir, mode] : modes) {
    if (Status st = env_.SetMode(dir, mode); !st.ok()) return Internal("agent: " + st.message());
  }
  auto jobs = env_.ListDir(data + "/jobs");
  if (!jobs) return Internal("agent: " + jobs.error().message());
  for (const std::string& name : *jobs) {
    if (Status st = env_.SetMode(data + "/jobs/" + name, 0700); !st.ok())
      LogWarn(st.message() + ": others may read that job's files", Context());
  }
  return Status::Ok();
}

namespace {

// The clock the shims read their lease by: it counts a suspended machine's sleep too.
int64_t BootMillis() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

void Agent::RenewLease(TimePoint sent) {
  if (!options_.fence) return;
  // `sent` on the boot clock the shims read the deadline by.
  std::optional<int64_t> deadline =
      lease_.Renewal(BootMillis() - ToMillis(clock_.Now()) + ToMillis(sent));
  if (!deadline) return;
  Status st = env_.WriteFileAtomic(
      LeasePath(), std::to_string(*deadline) + " " + std::to_string(lease_.grace_ms()) + "\n",
      {.mode = 0600, .sync = false});
  if (!st.ok()) {
    LogWarn("cannot renew the jobs' lease: " + st.message(), Context());
    return;
  }
  if (lease_.Written(*deadline))
    LogInfo("reached a controller again: the jobs' lease is renewed", Context());
}

void Agent::WatchLease() {
  if (!lease_.RunOut(BootMillis())) return;
  size_t running = 0;
  for (const auto& [key, job] : jobs_) running += job.exited ? 0 : 1;
  LogWarn("no controller reached for " +
              FormatDuration(std::chrono::milliseconds(lease_.fence_ms())) +
              ": a controller may now run this node's jobs elsewhere, so their shims stop the " +
              std::to_string(running) + " still running here (SIGTERM, SIGKILL " +
              FormatDuration(std::chrono::milliseconds(lease_.grace_ms())) + " later)",
          Context());
}

Status Agent::WriteRunFile(const RunningJob& job) {
  return run_files_.Write(
      RunRecord{.order = job.order, .process = job.process, .started_at = job.started_at});
}

Status Agent::Recover() {
  auto records = run_files_.ReadAll();
  if (!records) return Internal("agent: cannot read back its jobs: " + records.error().message());
  for (RunRecord& r : *records) {
    RunningJob& job = jobs_.Adopt(std::move(r));
    job.limit_told = PlanOf(job).over;  // said before the restart
    // Checkpoints it announced before the restart were reported then (or are stale now).
    job.metrics_scanned = SizeOf(JobDir(job.order.job) + "/metrics.jsonl");
  }
  RecoverMps();  // before the ends found next, which stop the daemons they leave without jobs
  CollectExits(clock_.Now());
  return Status::Ok();
}

namespace {

// When the main loop may next contact the controller. While the controller cannot be reached,
// jobs run on and contact is tried again after 1 s, 2 s, 4 s ... up to 30 s, each with up to a
// quarter more at random, so that a restarted controller is not met by every agent at once.
class ContactBackoff {
 public:
  // `seed` (the node's name) makes each agent's jitter its own.
  explicit ContactBackoff(const std::string& seed)
      : jitter_state_(std::hash<std::string>{}(seed) | 1) {}

  bool Due(TimePoint now) const { return now >= next_contact_; }
  // The longest wait between tries (30 s unless a fence asks for less).
  void Cap(Duration max) {
    max_backoff_ = max;
    backoff_ = std::min(backoff_, max_backoff_);
  }
  void NotBefore(TimePoint t) { next_contact_ = std::max(next_contact_, t); }
  // How long the controller had been out of reach (0 when it had not).
  Duration Succeeded(TimePoint now) {
    backoff_ = std::chrono::seconds(1);
    Duration out = failing_ ? now - failing_since_ : Duration(0);
    failing_ = false;
    return out;
  }
  // Whether to say so in the log: at the first failure, then once a minute while it lasts.
  bool Failed(TimePoint now) {
    Backoff(now);
    if (!failing_) {
      failing_ = true;
      failing_since_ = now;
      last_said_ = now;
      return true;
    }
    if (now - last_said_ < std::chrono::minutes(1)) return false;
    last_said_ = now;
    return true;
  }
  Duration failing_for(TimePoint now) const {
    return failing_ ? now - failing_since_ : Duration(0);
  }

 private:
  void Backoff(TimePoint now) {
    jitter_state_ ^= jitter_state_ << 13;
    jitter_state_ ^= jitter_state_ >> 7;
    jitter_state_ ^= jitter_state_ << 17;
    Duration jitter(
        static_cast<int64_t>(jitter_state_ % static_cast<uint64_t>(backoff_.count() / 4 + 1)));
    next_contact_ = now + backoff_ + jitter;
    backoff_ = std::min<Duration>(backoff_ * 2, max_backoff_);
  }

  TimePoint next_contact_{};
  // Not a std::optional: GCC 12 at -O3 warns (falsely) that it may be read uninitialised.
  bool failing_ = false;
  TimePoint failing_since_{};
  TimePoint last_said_{};
  Duration backoff_ = std::chrono::seconds(1);
  Duration max_backoff_ = std::chrono::seconds(30);
  uint64_t jitter_state_;
};

}  // namespace

void Agent::Unreachable(Duration for_how_long) const {
  // The last failure says why (refused, a certificate not trusted, ...).
  LogWarn("cannot reach the controller at " + servers_->ToString() +
              (for_how_long.count() > 0 ? " for " + FormatDuration(for_how_long) : "") +
              (last_contact_error_.empty() ? "" : " (" + last_contact_error_ + ")") +
              "; retrying (every address in turn, then at most every 30 s); jobs run on",
          Context());
}

void Agent::Reached(Duration after) const {
  if (after.count() > 0)
    LogInfo("reached the controller at " + servers_->Current() + " again after " +
                FormatDuration(after),
            Context());
}

void Agent::MainLoop() {
  ContactBackoff contact(options_.name);
  while (!stopping_) {
    bool need_register;
    std::deque<Order> orders;
    {
      std::lock_guard lock(mu_);
      need_register = need_register_;
      orders.swap(orders_);
    }
    TimePoint now = clock_.Now();
    TakeReclaim(now);  // before a registration, which then says it
    // With a fence, tries come at least ten times within it (up to 1.25 × a tenth with the
    // jitter): a controller back well within its node timeout is reached before any job here
    // is stopped.
    if (std::optional<Duration> cap = lease_.ContactCap(); options_.fence && cap) contact.Cap(*cap);
    if (ToMillis(now) < silent_until_ms_) contact.NotBefore(FromMillis(silent_until_ms_));
    if (need_register && contact.Due(now)) {
      bool tried_every_server = true;
      if (RegisterWithController(&tried_every_server)) {
        RenewLease(now);
        Reached(contact.Succeeded(now));
      } else if (tried_every_server && contact.Failed(now))
        Unreachable(contact.failing_for(now));
    }
    for (const Order& o : orders) HandleOrder(o);
    now = clock_.Now();
    size_t events_before = outbox_.events();
    CollectExits(now);
    mps_->Check();
    bool active = !orders.empty() || outbox_.events() != events_before;
    StepStops(now);
    bool samples_due =
        now - last_sample_ >= std::max(options_.sample_interval, asked_sample_interval_);
    bool logs_due = now - last_logs_ >= options_.log_interval;
    bool logs_waiting = logs_due && PollHealthAndLogs(now);
    std::vector<GpuSample> samples;
    if (samples_due) outbox_.HealthChanged(SampleGpus(&samples, now));
    if (!need_register && contact.Due(now) &&
        (outbox_.events() > 0 || samples_due || logs_waiting || outbox_.health_news() ||
         (reclaim_ && !reclaim_told_))) {
      if (SendReport(std::move(samples))) {
        if (samples_due) last_sample_ = now;
        if (logs_due) last_logs_ = now;
        RenewLease(now);
        Reached(contact.Succeeded(now));
      } else {
        std::lock_guard lock(mu_);
        // A 409 asks to register again, at once.
        if (!need_register_ && contact.Failed(now)) Unreachable(contact.failing_for(now));
      }
    }
    WatchLease();
    WaitForWork(now, active, need_register);
  }
}

bool Agent::PollHealthAndLogs(TimePoint now) {
  ScanCheckpoints(now);
  for (const XidEvent& x : backend_.PollXids())
    outbox_.HealthChanged(health_.ObserveXid(x.gpu, x.xid, now));
  for (GpuNotice& n : health_.TakeNotices()) outbox_.Notice(std::move(n));
  bool logs_waiting = false;
  for (auto& [key, job] : jobs_) {
    EnforceOutputLimit(job, now);
    if (LogWaiting(job)) logs_waiting = true;
  }
  return logs_waiting;
}

void Agent::WaitForWork(TimePoint now, bool active, bool need_register) {
  std::unique_lock lock(mu_);
  // How long until the next look at the jobs: 2 ms within a second of a job starting or
  // ending (short jobs end fast, and a signal sent just after a start waits for the job's
  // pid), then doubling up to 100 ms for long-running ones. Orders wake the loop at once
  // whatever the wait.
  bool busy = jobs_.Busy();
  if (active) last_active_ = now;
  idle_wait_ = now - last_active_ < std::chrono::seconds(1)
                   ? std::chrono::milliseconds(2)
                   : std::min<Duration>(idle_wait_ * 2, std::chrono::milliseconds(100));
  cv_.wait_for(lock, busy ? idle_wait_ : std::chrono::milliseconds(100), [&] {
    return stopping_ || !orders_.empty() || (need_register_ && !need_register) ||
           (reclaim_seen_ && !reclaim_);
  });
}

void Agent::HandleOrder(const Order& order) {
  // Read here, not before: registering may have taken a while.
  TimePoint now = clock_.Now();
  if (order.kind == Order::Kind::kReadmit) {
    outbox_.HealthChanged(health_.Readmit(order.inject.gpu, now));
    return;
  }
  if (order.kind == Order::Kind::kInject && order.inject.fault == FaultKind::kSilence) {
    LogWarn("silent for " + FormatDuration(order.inject.duration) +
                " (an injected fault): its jobs run on",
            Context());
    silent_until_ms_ = ToMillis(now + order.inject.duration);
    return;
  }
  if (order.kind == Order::Kind::kInject) {
    Status st = backend_.Inject(order.inject);
    if (!st.ok()) LogWarn("cannot inject a fault: " + st.message(), Context());
    last_sample_ = TimePoint{};  // look at the GPUs now
    last_logs_ = TimePoint{};
    return;
  }
  if (order.kind == Order::Kind::kTunnel) return OpenTunnel(order.tunnel);
  if (order.kind == Order::Kind::kNote) return DeliverNote(order.note);
  if (order.kind == Order::Kind::kMig) return ChangeMig(order.mig);
  Carry(jobs_.Take(order, now), now);  // a launch or a stop
}

void Agent::ChangeMig(const MigOrder& order) {
  auto words = [](const std::vector<MigSlice>& list) {
    std::string out;
    for (const MigSlice& m : list)
      out += (out.empty() ? "" : ", ") + m.profile + " at " + std::to_string(m.start);
    return out.empty() ? std::string("none") : out;
  };
  const std::string what = "GPU " + std::to_string(order.physical) + "'s MIG instances (destroy " +
                           words(order.destroy) + "; create " + words(order.create) + ")";
  // The controller orders only idle instances destroyed; one a job holds here (its launch
  // crossed the order) is not taken from under it.
  std::string held_words;
  const std::vector<bool> held = jobs_.HeldGpus(gpus_.size());
  for (const MigSlice& d : order.destroy) {
    for (const Gpu& g : gpus_) {
      if (!g.vacant && g.physical == order.physical && g.mig_start == d.start &&
          g.mig_profile == d.profile && held[static_cast<size_t>(g.index)])
        held_words = "its " + d.profile + " at memory slice " + std::to_string(d.start) + " (GPU " +
                     std::to_string(g.index) + ") runs a job";
    }
  }
  if (!options_.mig_reconfigure) {
    LogWarn("refused a change of " + what + ": this agent re-plans no MIG (--mig-reconfigure)",
            Context());
  } else if (!held_words.empty()) {
    LogWarn("refused a change of " + what + ": " + held_words, Context());
  } else if (Status st = backend_.ChangeMig(order.physical, order.destroy, order.create);
             !st.ok()) {
    LogWarn("could not change " + what + ": " + st.message(), Context());
  } else {
    LogInfo("changed " + what, Context());
  }
  // What the GPU has now, done or not, goes to the controller with a registration: it takes
  // the GPU's instances from there, and the GPU out of `reconfiguring`. The indices of the
  // devices that stayed are where they were (MigPlacesBackend), so no running job moves.
  gpus_ = backend_.Discover();
  gpu_addresses_ = backend_.PciAddresses();  // the launcher reads both where they are
  std::lock_guard lock(mu_);
  need_register_ = true;
}

void Agent::Carry(const JobBook::Effects& fx, TimePoint now) {
  for (const LaunchOrder& o : fx.launches) Launch(o, now);
  for (const JobAttempt& key : fx.relimited) {
    if (Status st = WriteRunFile(jobs_[key]); !st.ok())
      LogWarn("job " + key.job.ToString() + ": its new time limit is not recorded: " + st.message(),
              Context(key.job));
  }
  WriteDeadlines(fx);
  for (const auto& [key, sig] : fx.signals) SignalJob(jobs_[key], sig);
}

void Agent::SignalJob(RunningJob& job, int sig) {
  job.unsent.push_back(sig);  // after any that wait for the pid, in order
  SendUnsent(job);
}

bool Agent::LearnJobPid(RunningJob& job) {
  if (job.process.job_pid != 0) return true;
  job.process.job_pid = ReadJobPid(env_, RunFile(job.order.job, job.order.attempt) + ".pid");
  if (job.process.job_pid == 0) return false;
  // Harmless when it fails: a restarted agent reads the pid from the shim's file again.
  if (Status st = WriteRunFile(job); !st.ok()) LogWarn(st.message(), Context(job.order.job));
  return true;
}

void Agent::SendUnsent(RunningJob& job) {
  const bool known = LearnJobPid(job);
  const bool alive = known || executor_.Alive(job.process.shim_pid, job.process.shim_start_ticks);
  for (int sig : TakeDueSignals(job, known, alive)) executor_.Signal(job.process.job_pid, sig);
}

void Agent::StepStops(TimePoint now) {
  for (auto& [key, job] : jobs_) {
    if (!job.unsent.empty()) SendUnsent(job);
  }
  Carry(jobs_.Tick(now), now);
}

void Agent::ScanCheckpoints(TimePoint now) {
  for (auto& [key, job] : jobs_) {
    if (!job.exited) ScanMetrics(job, now);
  }
}

void Agent::ScanMetrics(RunningJob& job, TimePoint now) {
  std::string path = JobDir(job.order.job) + "/metrics.jsonl";
  if (SizeOf(path) <= job.metrics_scanned) return;
  std::string data = env_.ReadRange(path, job.metrics_scanned, kMetricsRead).value_or("");
  MetricsScan scan = ScanMetricsLines(data, job.order, &job.last_checkpoint, now);
  job.metrics_scanned += scan.consumed;
  for (JobEvent& e : scan.events) outbox_.Add(std::move(e));
}

// The last "baton: ..." line the shim wrote to a job's log (why it could not start), without
// the prefix; "" when there is none.
std::string Agent::ShimsWords(const std::string& log) {
  auto size = env_.FileSize(log);
  if (!size) return "";
  const int64_t from = std::max<int64_t>(0, *size - 4096);
  auto tail = env_.ReadRange(log, from, 4096);
  if (!tail) return "";
  size_t at = tail->rfind("baton: ");
  if (at == std::string::npos || (at > 0 && (*tail)[at - 1] != '\n')) return "";
  std::string line = tail->substr(at + 7);
  if (size_t nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  return line.substr(0, 400);
}

void Agent::CollectExits(TimePoint now) {
  std::vector<pid_t> reaped = executor_.Reap();
  std::set<pid_t> ended(reaped.begin(), reaped.end());
  for (auto& [key, job] : jobs_) {
    if (job.exited) continue;
    std::string status_path = RunFile(job.order.job, job.order.attempt) + ".exit";
    std::optional<ExitStatus> status;
    bool gone = false;
    if (!job.adopted) {
      if (!ended.count(job.process.shim_pid)) continue;
      status = ReadExitStatus(env_, status_path);
      gone = true;
    } else {
      status = ReadExitStatus(env_, status_path);
      if (!status) gone = !executor_.Alive(job.process.shim_pid, job.process.shim_start_ticks);
      if (!status && gone) status = ReadExitStatus(env_, status_path);  // it may have just finished
    }
    if (!status && !gone) continue;
    ScanMetrics(job, now);         // the lines it wrote last go before its end
    EnforceOutputLimit(job, now);  // a job that printed fast may have ended before a look
    EndFacts facts{
        .status = status, .timed_out = job.stop.timed_out(), .fence_ms = lease_.fence_ms()};
    if (!status) {
      SignalJob(job, SIGKILL);  // the shim died without a word: whatever it left, ended
    } else if (status->unstarted) {
      facts.shims_words = ShimsWords(JobDir(job.order.job) + "/output.log");
    }
    std::string group;
    if (cgroups_.usable()) {
      group = cgroups_.GroupPath(CgroupName(job.order.job, job.order.attempt));
      facts.oom_killed = cgroups_.OomKills(group) > 0;
    }
    JobEvent e = jobs_.Exited(key, facts, options_.name, now);
    mps_->Leave(key);  // its GPU's daemon stops with the GPU's last shared job
    if (facts.oom_killed) {
      if (Status st =
              env_.AppendFile(JobDir(job.order.job) + "/output.log", "baton: " + e.message + "\n");
          !st.ok())
        LogWarn(st.message(), Context(job.order.job));
    }
    if (!group.empty()) {
      Status st = cgroups_.Remove(group);  // and whatever the job left running in it
      if (!st.ok()) LogWarn(st.message(), Context(job.order.job));
    }
    if (LogEnabled(LogLevel::kDebug)) {
      LogDebug("job " + job.order.job.ToString() + " attempt " + std::to_string(job.order.attempt) +
                   " ended: " +
                   (job.lost        ? "lost"
                    : e.signal != 0 ? "signal " + std::to_string(e.signal)
                                    : "exit code " + std::to_string(e.exit_code)),
               Context(job.order.job));
    }
    outbox_.Add(e);
  }
}

bool Agent::SampleGpus(std::vector<GpuSample>* samples, TimePoint now) {
  // Which GPUs a job holds: what simulated GPUs read as load (NVML reads the real thing).
  // A session's do not count: a shell mostly waits for its user, so simulated sessions read
  // idle, and an interactive pool's idle reclaim can be tried without GPUs.
  *samples = backend_.Sample(jobs_.HeldGpus(gpus_.size()));
  bool changed = health_.ObserveSamples(*samples, now);
  changed |= health_.Recheck([this](int device) { return backend_.CheckGpu(device); }, now);
  return changed;
}

// The metrics lines of each job the controller does not have yet, within `budget`: whole lines
// while the job runs, the rest once it has ended. Returns the bytes added per job; a file that
// cannot be read counts as shipped, so that it never holds its job back.
std::map<JobAttempt, int64_t> Agent::ShipMetrics(size_t* budget, std::vector<LogChunk>* out) {
  std::map<JobAttempt, int64_t> added;
  for (auto& [key, job] : jobs_) {
    if (*budget == 0) break;
    const std::string path = JobDir(job.order.job) + "/metrics.jsonl";
    const int64_t size = SizeOf(path);
    if (size <= job.metrics_shipped) continue;
    Result<std::string> read =
        env_.ReadRange(path, job.metrics_shipped, std::min(kLogChunk, *budget));
    if (!read) {
      added[key] = size - job.metrics_shipped;
      continue;
    }
    std::string data = std::move(*read);
    if (!job.exited) {
      size_t end = data.rfind('\n');
      // A line longer than a chunk goes as it is; otherwise only whole lines.
      if (end == std::string::npos && data.size() < kLogChunk) continue;
      if (end != std::string::npos) data.resize(end + 1);
    }
    if (data.empty()) continue;
    *budget -= std::min(*budget, data.size());
    added[key] = static_cast<int64_t>(data.size());
    out->push_back(LogChunk{.job = job.order.job,
                            .offset = job.metrics_shipped,
                            .data = std::move(data),
                            .metrics = true});
  }
  return added;
}

bool Agent::SendReport(std::vector<GpuSample> samples) {
  ReportRequest rep;
  rep.node = options_.name;
  {
    std::lock_guard lock(mu_);
    rep.session = session_;
  }
  // What of each job's log is in this report; a log that cannot be read is marked so (its end
  // is not held back for output that will never come).
  std::map<JobAttempt, LogShipment> shipped;
  size_t budget = kReportLogBudget;
  for (auto& [key, job] : jobs_) {
    if (budget == 0) break;
    auto next = NextLogChunk(job, std::min(kLogChunk, budget));
    if (!next) {
      shipped[key].unreadable = true;
      continue;
    }
    if (!*next) continue;
    auto& [chunk, head] = **next;
    budget -= chunk.data.size();
    shipped[key] = LogShipment{.bytes = static_cast<int64_t>(chunk.data.size()), .head = head};
    rep.logs.push_back(std::move(chunk));
  }
  std::map<JobAttempt, int64_t> metrics_shipped = ShipMetrics(&budget, &rep.logs);
  // A job's end waits while the controller would lack some of its log after this report.
  ReportOutbox::Draft draft = outbox_.Compose([&](const JobAttempt& key) {
    auto job = jobs_.find(key);
    if (job == jobs_.end()) return false;
    auto n = shipped.find(key);
    if (n != shipped.end() && n->second.unreadable) return false;  // it will never come
    // As the controller will have it once this report is through.
    LogShipped after{.head = job->second.log_shipped, .tail = job->second.tail_sent};
    if (n != shipped.end()) (n->second.head ? after.head : after.tail) += n->second.bytes;
    return agent::LogWaiting(PlanOf(job->second), after);
  });
  rep.events = std::move(draft.events);  // the draft keeps where they were (sent)
  rep.gpus = std::move(samples);
  if (draft.health) rep.health = health_.health();
  rep.notices = draft.notices;
  rep.attached = AttachedSessions();
  rep.reclaim = reclaim_;
  FollowServers(*report_client_, &report_generation_);
  std::string url = servers_->Current();
  auto res = report_client_->Request("POST", "/v1/agent/report", codec::EncodeReport(rep));
  NoteContact(res);
  if (!res || res->standby) {
    if (res || servers_->size() > 1) SeekLeader(url, res);
    return false;
  }
  if (res->status == 409) {
    std::lock_guard lock(mu_);
    need_register_ = true;
    return false;
  }
  if (res->status != 200) return false;  // refused: NoteContact kept what it answered
  // An answer it cannot read leaves the interval as it was: the report was taken all the same.
  if (auto asked = codec::DecodeReportReply(res->body)) asked_sample_interval_ = *asked;
  outbox_.Acknowledged(draft);
  jobs_.Acknowledged(shipped, metrics_shipped, draft.ends);
  if (rep.reclaim) reclaim_told_ = true;
  DropAcknowledged();
  return true;
}

// Whether the controller has all of an ended job's output and metrics lines.
bool Agent::AllShipped(const RunningJob& job) const {
  const std::string dir = JobDir(job.order.job);
  return !LogWaiting(job) && job.metrics_shipped >= SizeOf(dir + "/metrics.jsonl");
}

void Agent::DropAcknowledged() {
  for (const RunningJob& job :
       jobs_.TakeDone([this](const RunningJob& j) { return AllShipped(j); })) {
    // A run file left behind re-adopts an ended job after a restart, which reports its end
    // again: harmless, but worth a line.
    if (Status st = run_files_.Remove(job.order.job, job.order.attempt); !st.ok())
      LogWarn(st.message(), Context(job.order.job));
    if (Status st =
            env_.RemoveFile(DeadlineFileOf(options_.data_dir, job.order.job, job.order.attempt));
        !st.ok())
      LogWarn(st.message(), Context(job.order.job));
  }
}

}  // namespace baton::agent
