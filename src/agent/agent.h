// The node agent: registers its GPUs with the controller, long-polls for orders, runs jobs
// through an Executor, enforces time limits (SIGTERM, grace, SIGKILL), ships
// job logs and reports exits. The same code runs inside `baton up` and as `baton agent`.
//
// Durable state is the directory `data_dir/run/`: one file per job attempt it runs, removed
// once the controller has acknowledged how the job ended. A restarted agent reads it back,
// re-adopts the jobs still running and reports the ones that ended while it was away.
//
// All its access to files and processes goes through an Env (env.h), its time through a Clock
// (core/clock.h), and the running of jobs through an Executor: tests drive it over fakes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/cgroup.h"
#include "agent/env.h"
#include "agent/executor.h"
#include "agent/gpu_backend.h"
#include "agent/health.h"
#include "agent/host_topology.h"
#include "agent/job_book.h"
#include "agent/job_lease.h"
#include "agent/launcher.h"
#include "agent/log_plan.h"
#include "agent/mps.h"
#include "agent/reclaim_watch.h"
#include "agent/report_outbox.h"
#include "agent/run_file.h"
#include "agent/stop_clock.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/protocol.h"
#include "net/http_client.h"
#include "net/server_list.h"

namespace baton::agent {

struct AgentOptions {
  std::string name;              // node name; defaults to the host name
  std::string data_dir;          // job directories, logs, run files
  std::string server;            // controller URL(s), https://HOST:PORT or http://HOST:PORT
  net::TlsClientOptions tls;     // what an https:// controller's certificate is checked against
  std::string token;             // agent join token
  std::string pool = "default";  // the pool (partition) this node serves
  std::string address;           // where other nodes reach its jobs (MASTER_ADDR); "" = name
  // The host's NUMA nodes and their CPUs, which jobs are bound to (LoadHostTopology); empty:
  // jobs run unbound.
  HostTopology topology;
  Duration sample_interval = std::chrono::seconds(2);
  Duration log_interval = std::chrono::milliseconds(250);  // also how often XIDs are looked for
  HealthLimits health;
  // Isolation (when the agent runs as root, jobs run as their users, PRODUCT §1 Execution).
  bool allow_root_jobs = false;  // a job whose user is root may run as root
  bool cgroups = true;           // a cgroup v2 group per job, where the host allows it
  std::string cgroup_root;       // "" = this process's group + "/baton-jobs"
  int64_t job_pids_max = 16384;  // pids.max of each job; 0 = unlimited
  // Whether its jobs are stopped once it has not reached a controller for the controller's
  // node timeout (its fence: run/lease, read by each job's shim). Off only for `baton up`'s
  // local agent, which shares the controller's process and cannot be cut off from it.
  bool fence = true;
  bool spot = false;  // a spot node (NodeInfo::spot, `baton agent --spot`)
  // Where a reclaim notice comes from (`--reclaim-notice`, reclaim_watch.h), looked at every
  // reclaim_poll; none: the node has no notices.
  std::optional<ReclaimSource> reclaim;
  Duration reclaim_poll = std::chrono::seconds(5);
  // NVIDIA MPS's control program, run for each GPU that holds fractional jobs (agent/mps.h);
  // "" = no MPS daemons (`--mps-control off`).
  std::string mps_control = "nvidia-cuda-mps-control";
  // Its GPUs in MIG mode have their instances changed when the controller orders it
  // (`--mig-reconfigure`, issue 42): numbered by MigPlacesBackend, told as NodeInfo::mig_gpus.
  bool mig_reconfigure = false;
};

// What the agent works through. All must outlive it.
struct AgentDeps {
  GpuBackend& backend;
  Executor& executor;
  Env& env;
  Clock& clock;
};

class Agent {
 public:
  Agent(AgentOptions options, AgentDeps deps);
  ~Agent();

  // Reads back the jobs of a previous run, then starts the agent's threads.
  Status Start();
  // Stops the threads. Jobs keep running; the next Start re-adopts them.
  void Stop();
  // The GPUs Start discovered.
  const std::vector<Gpu>& gpus() const { return gpus_; }

 private:
  // The plan of the job's log now (log_plan.h).
  LogPlan PlanOf(const RunningJob& job) const;
  // Whether the controller lacks some of what the job's log plan says it is to have now.
  bool LogWaiting(const RunningJob& job) const;
  // Up to `max` bytes of the log to ship next: the chunk, and whether it is of the head (else
  // of the tail); nothing when there is nothing now; an error when the log cannot be read.
  Result<std::optional<std::pair<LogChunk, bool>>> NextLogChunk(const RunningJob& job, size_t max);
  // Past its limit: marks the drop in the node's log, tells the controller once, and frees the
  // log's middle on the node's disk, keeping the tail.
  void EnforceOutputLimit(RunningJob& job, TimePoint now);

  void MainLoop();
  void PollLoop();
  // The poll thread's pause before it asks again (real time: the link's own pace), cut short
  // when the agent stops; whether it goes on.
  bool PauseLink(Duration wait);
  // Registers with the controller in use; when that fails, *tried_every_server says whether
  // every listed controller has now failed in a row (time to back off).
  bool RegisterWithController(bool* tried_every_server);
  // This node's credential (DATA/credential, made by joining), else the join token given.
  std::string Credential();
  Status ReadCredential();
  // Joins as a new node with the join token (--token): the credential, kept in DATA/credential.
  bool Join(net::HttpClient& client, const std::string& url);
  // Points `client` at the controller in use, if it changed since `*generation`.
  void FollowServers(net::HttpClient& client, uint64_t* generation);
  // What a standby's answer or an unreachable controller means: look for the leader elsewhere.
  void SeekLeader(const std::string& url, const Result<net::HttpResponse>& res);
  // Whether an order or registration of `epoch` may be followed: not when an agent has seen a
  // newer one (a deposed leader's). A newer one is kept, in DATA/epoch too.
  bool AcceptEpoch(int64_t epoch);
  void HandleOrder(const Order& order);
  // Carries out what the JobBook decided: starts, run files written again, signals.
  void Carry(const JobBook::Effects& fx, TimePoint now);
  // Starts the job of `order` on the spec its Launcher prepares, or records why it could not.
  void Launch(const LaunchOrder& order, TimePoint now);
  // A fractional job's share of its GPU: capped by the GPU's MPS daemon ("mps", its pipe
  // directory and the GPU's name put in `spec`), else by its CUDA_MPS_* variables alone
  // ("none", said in its log with why); "" for a job of whole GPUs.
  std::string ShareGpu(const LaunchOrder& order, ProcessSpec& spec);
  // The jobs that outlived the last run's agent on shared GPUs, to their MPS daemons.
  void RecoverMps();
  // Code snapshot `id`'s archive from the controller in use (a job's Launcher asks).
  Result<std::string> FetchCode(const std::string& id);
  std::string ShimsWords(const std::string& log);
  // Signals the job's process group, learning its pid from the shim's pid file if need be;
  // while the shim has not written it, the signal waits in RunningJob::unsent (no wait here).
  void SignalJob(RunningJob& job, int sig);
  // Whether the job's pid is known, reading the shim's pid file if it is not yet (and keeping
  // it in the run file).
  bool LearnJobPid(RunningJob& job);
  // Looks for the pid of a job with signals waiting for it, and sends what TakeDueSignals
  // (job_book.h) says is due.
  void SendUnsent(RunningJob& job);
  // The signals that waited for a pid sent, and what the jobs' clocks say at `now` (time
  // limits, notices, graces over, JobBook::Tick) carried out.
  void StepStops(TimePoint now);
  // Reports checkpoints jobs announced in their metrics file since the last look, and the
  // values of their tracked metric (ScanMetrics: one job's).
  void ScanCheckpoints(TimePoint now);
  void ScanMetrics(RunningJob& job, TimePoint now);
  void CollectExits(TimePoint now);
  // Samples the GPUs and judges their health; true when some GPU's health changed.
  bool SampleGpus(std::vector<GpuSample>* samples, TimePoint now);
  // The log lines of a controller out of reach (once a minute while it lasts) and back.
  void Unreachable(Duration for_how_long) const;
  // What the main loop's last request to a controller made of it: its transport's error, or
  // the controller's refusal ("it answered 400: ..."); "" after one that succeeded. Unreachable
  // says it.
  void NoteContact(const Result<net::HttpResponse>& res);
  std::string last_contact_error_;
  void Reached(Duration after) const;
  // A report: the logs and metrics lines due (within a budget), what the outbox owes (a job's
  // end once its log is all in), the GPUs' samples and health; true when acknowledged.
  bool SendReport(std::vector<GpuSample> samples);
  std::map<JobAttempt, int64_t> ShipMetrics(size_t* budget, std::vector<LogChunk>* out);
  bool AllShipped(const RunningJob& job) const;
  // When logs are due: checkpoints, XIDs and health notices; true when some job has log
  // output not yet shipped.
  bool PollHealthAndLogs(TimePoint now);
  // Sleeps until the next look at the jobs, an order, a stop or a call to register again.
  void WaitForWork(TimePoint now, bool active, bool need_register);
  // Sets the modes of the data directory and its parts (agent.cc says who may read what).
  Status MakePrivate();
  // The controller was reached by a request sent at `sent`: the jobs' lease runs until
  // `sent` + the fence (written to run/lease at most about once a second).
  void RenewLease(TimePoint sent);
  // Says once in the log that the lease has run out and the shims are stopping the jobs.
  void WatchLease();
  std::string LeasePath() const { return options_.data_dir + "/run/lease"; }
  // Reads the run files back; an error when the run directory cannot be listed.
  Status Recover();
  std::string JobDir(JobId id) const;
  std::string RunFile(JobId id, int attempt) const;
  Status WriteRunFile(const RunningJob& job);
  // The size of a file the job writes; 0 while there is none.
  int64_t SizeOf(const std::string& path) const;
  // The job's cgroup name: unique to this agent's data directory, so that agents sharing a host
  // (tests, `baton up` beside `baton agent`) never touch each other's groups.
  std::string CgroupName(JobId id, int attempt) const;
  // Records a launch that failed before the job ran: started, then exited with `code`.
  void FailLaunch(RunningJob job, int code, const std::string& message);
  // What the agent's log lines say they are about: this node, and `job` when given.
  LogContext Context(JobId job = {}) const {
    return LogContext{.component = "agent", .node = options_.name, .job = job.value};
  }
  // Reclaim notices (agent_reclaim.cc): the watch thread's looks at the source until a notice;
  // the main loop's taking of it (each job stopped with the deadline as its grace, the
  // controller told by every report and registration from then on).
  void WatchReclaim();
  void TakeReclaim(TimePoint now);
  // Writes the jobs' $BATON_PREEMPT_DEADLINE files (the time their SIGKILL is due) before the
  // SIGTERM of a stop, and again when a later stop brings it forward (`fx`: about to be
  // carried out).
  void WriteDeadlines(const JobBook::Effects& fx);
  // Forgets the jobs the JobBook is done with (TakeDone: their end and all of their output are
  // the controller's), with their run files.
  void DropAcknowledged();
  // Tunnels (agent_tunnels.cc): the Unix socket a job's shim serves its session on; a thread per
  // tunnel order, connecting the controller's end to the session or a port; ending them all.
  std::string SessionSocket(JobId id, int attempt) const;
  void OpenTunnel(const TunnelOrder& t);
  // `owner`: for an allocation's host (TunnelOrder::step_key), the uid that must own the socket
  // it connects to; -1 otherwise.
  void RunTunnel(const TunnelOrder& t, const std::string& socket, int stop, long owner);
  void StopTunnels();
  // The jobs with a tunnel open now (any thread); a note shown in a session's terminal.
  std::vector<JobId> AttachedSessions();
  void DeliverNote(const SessionNote& note);

  // A MIG change the controller ordered: made, then the GPUs found again and registered anew
  // (the controller then takes the GPU's new instances).
  void ChangeMig(const MigOrder& order);

  AgentOptions options_;
  std::unique_ptr<GpuBackend> places_;  // with mig_reconfigure: the found GPUs, laid out
  GpuBackend& backend_;
  Executor& executor_;
  Env& env_;
  Clock& clock_;
  RunFiles run_files_;
  std::vector<Gpu> gpus_;
  std::vector<std::string> gpu_addresses_;  // each GPU's PCI address (GpuBackend::PciAddresses)
  CgroupManager cgroups_;                   // main loop only (after Start)
  bool as_root_ = false;                    // jobs run as their users
  std::string cgroup_prefix_;
  // What a launch order becomes here (launcher.h): made at Start, when the GPUs, cgroups and
  // user are known; main loop only.
  std::optional<Launcher> launcher_;
  std::optional<MpsDaemons> mps_;  // main loop only (after Start)
  // MPS is on and its control program was found at Start: told to the controller
  // (NodeInfo::mps), which then gives each GPU's fractions to one user at a time.
  bool mps_found_ = false;
  HealthMonitor health_;  // main loop only

  std::mutex mu_;  // guards orders_, session_, need_register_, credential_
  std::string credential_;
  std::condition_variable cv_;
  std::deque<Order> orders_;
  uint64_t session_ = 0;
  bool need_register_ = true;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> silent_until_ms_{0};    // an injected silence: no contact until then
  std::optional<ReclaimNotice> reclaim_seen_;  // guarded by mu_: the watch thread's find

  JobBook jobs_;         // main loop only: the jobs and what orders and time decide for them
  ReportOutbox outbox_;  // main loop only: the events, notices and health change owed
  Duration idle_wait_ = std::chrono::milliseconds(2);  // main loop: next look at the jobs
  TimePoint last_active_{};                            // main loop: a job last started or ended
  TimePoint last_sample_{};
  // How often the controller asks for the GPUs' readings (its answer to each report; it
  // spreads a large cluster's readings out): readings go every max(this, sample_interval).
  Duration asked_sample_interval_{};
  TimePoint last_logs_{};
  // The fence (main loop only): what the controller asked at registration, and the deadline
  // last written to run/lease (job_lease.h).
  JobLease lease_;
  // The node's reclaim notice, once the main loop took it, and whether a report carried it.
  std::optional<ReclaimNotice> reclaim_;
  bool reclaim_told_ = false;

  std::unique_ptr<net::HttpClient> poll_client_;    // poll thread only (Cancel: any)
  std::unique_ptr<net::HttpClient> report_client_;  // main loop only
  // The controllers (--server URL1,URL2,...): the one in use follows the leader.
  std::shared_ptr<net::ServerList> servers_;
  uint64_t poll_generation_ = 0;    // poll thread only
  uint64_t report_generation_ = 0;  // main loop only
  std::mutex epoch_mu_;             // guards writing DATA/epoch
  std::atomic<int64_t> epoch_{0};   // the newest leader's epoch seen

  struct Tunnel {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex tunnels_mu_;  // guards tunnels_, tunnel_stop_, attached_
  std::list<Tunnel> tunnels_;
  std::map<JobId, int> attached_;  // open tunnels to each job (its session or its ports)
  int tunnel_stop_[2] = {-1, -1};  // a pipe; closing its write end ends every tunnel

  std::thread main_thread_;
  std::thread poll_thread_;
  std::unique_ptr<ReclaimWatch> reclaim_watch_;  // the watch thread's (Cancel: any)
  std::thread reclaim_thread_;
};

}  // namespace baton::agent
