// The agent over fakes: files and processes in a MemEnv, time from a SimulatedClock, jobs
// "run" by a fake executor, and a fake controller on a local HTTP server that records what the
// agent tells it. Nothing here touches the host's files or processes, so the outcomes are the
// same on every run.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "agent/simulated_gpu_backend.h"
#include "api/http_server.h"
#include "codec/json_codec.h"
#include "mem_env.h"

namespace baton::agent {
namespace {

using testing::FaultyEnv;
using testing::MemEnv;

std::string Xml(const std::string& name) {
  return std::string(BATON_SOURCE_DIR) + "/tests/data/topologies/" + name;
}

// The controller's side of the agent protocol, recording registrations and reports.
class FakeController {
 public:
  FakeController()
      : server_({.port = 0, .threads = 4},
                [this](auto req, auto respond) { Handle(std::move(req), std::move(respond)); }) {}
  ~FakeController() { server_.Stop(); }
  std::string Start() { return "http://127.0.0.1:" + std::to_string(*server_.Start()); }

  void Send(Order o) {
    std::lock_guard lock(mu_);
    o.seq = orders_.size() + 1;
    orders_.push_back(std::move(o));
    cv_.notify_all();
  }
  // Waits (up to 20 s of real time, for the agent's threads) until `pred` holds.
  bool WaitFor(const std::function<bool(const std::vector<RegisterRequest>&,
                                        const std::vector<JobEvent>&)>& pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return pred(registers_, events_); });
  }
  std::vector<JobEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::string log(int64_t job) {
    std::lock_guard lock(mu_);
    return logs_[job];
  }
  // Every report as it came, and what the fake answers to the next ones.
  std::vector<ReportRequest> reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }
  bool WaitForReports(const std::function<bool(const std::vector<ReportRequest>&)>& pred) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return pred(reports_); });
  }
  void AnswerReports(std::string body) {
    std::lock_guard lock(mu_);
    report_answer_ = std::move(body);
  }

 private:
  void Handle(api::Request req, api::Respond respond) {
    std::unique_lock lock(mu_);
    if (req.path == "/v1/agent/join") {  // the agent's first words: it has no credential yet
      return respond({.status = 201, .body = codec::EncodeJoinReply("n1", std::string(64, 'c'))});
    }
    if (req.authorization != "Bearer " + std::string(64, 'c')) {
      return respond({.status = 401, .body = R"({"error": "not the node's credential"})"});
    }
    if (req.path == "/v1/agent/register") {
      registers_.push_back(*codec::DecodeRegister(req.body));
      cv_.notify_all();
      return respond({.body = codec::EncodeRegisterReply({.session = 1})});
    }
    if (req.path == "/v1/agent/report") {
      auto rep = codec::DecodeReport(req.body);
      reports_.push_back(*rep);
      for (const JobEvent& e : rep->events) events_.push_back(e);
      for (const LogChunk& c : rep->logs) {  // as the server's log store: each at its offset
        if (c.metrics) continue;
        std::string& log = logs_[c.job.value];
        size_t at = static_cast<size_t>(c.offset);
        if (log.size() < at + c.data.size()) log.resize(at + c.data.size(), '\0');
        log.replace(at, c.data.size(), c.data);
      }
      cv_.notify_all();
      return respond({.body = report_answer_});
    }
    // A short long poll: new orders, or none after 50 ms.
    uint64_t after = std::stoull(req.query["after"]);
    cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return orders_.size() > after; });
    std::vector<Order> out(orders_.begin() + static_cast<std::ptrdiff_t>(after), orders_.end());
    respond({.body = codec::EncodeOrders(out)});
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Order> orders_;
  std::vector<RegisterRequest> registers_;
  std::vector<JobEvent> events_;
  std::map<int64_t, std::string> logs_;
  std::vector<ReportRequest> reports_;
  std::string report_answer_ = "{}";  // an older controller's answer
  api::HttpServer server_;
};

// Starts nothing: each job gets the next pid, is alive in the Env, and has its pid file.
class FakeExecutor : public Executor {
 public:
  explicit FakeExecutor(MemEnv& env) : env_(env) {}
  Result<Started> Start(const ProcessSpec& spec) override {
    std::lock_guard lock(mu_);
    specs_.push_back(spec);
    pid_t shim = next_pid_++;
    pid_t job = next_pid_++;
    env_.SetProcess(shim, 77);
    if (pid_files_) (void)env_.WriteFileAtomic(spec.pid_path, std::to_string(job) + "\n", {});
    return Started{.shim_pid = shim, .job_pid = 0, .shim_start_ticks = 77};
  }
  // false: the shims are slow to write their jobs' pids (the test writes them).
  void WritePidFiles(bool write) { pid_files_ = write; }
  void Signal(pid_t job_pid, int sig) override {
    std::lock_guard lock(mu_);
    signals_.emplace_back(job_pid, sig);
    cv_.notify_all();
  }
  std::vector<pid_t> Reap() override { return {}; }
  bool Alive(pid_t shim_pid, uint64_t start_ticks) override {
    uint64_t ticks = env_.ProcessStartTicks(shim_pid);
    return ticks != 0 && ticks == start_ticks;
  }
  std::vector<ProcessSpec> specs() {
    std::lock_guard lock(mu_);
    return specs_;
  }
  std::vector<std::pair<pid_t, int>> signals() {
    std::lock_guard lock(mu_);
    return signals_;
  }
  // Waits (up to 20 s of real time, for the agent's main loop) for a signal to be sent.
  bool WaitForSignal(size_t count = 1) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return signals_.size() >= count; });
  }

 private:
  MemEnv& env_;
  std::mutex mu_;
  std::condition_variable cv_;
  pid_t next_pid_ = 1000;
  std::atomic<bool> pid_files_{true};
  std::vector<ProcessSpec> specs_;
  std::vector<std::pair<pid_t, int>> signals_;
};

Order Launch(int64_t job, std::vector<int> gpus, Duration time_limit = Duration(0)) {
  Order o;
  o.kind = Order::Kind::kLaunch;
  o.launch.job = JobId{job};
  o.launch.user = "alice";
  o.launch.command = {"train"};
  o.launch.gpus = std::move(gpus);
  o.launch.time_limit = time_limit;
  o.launch.nodelist = "n1";
  return o;
}

bool Has(const std::vector<JobEvent>& events, int64_t job, JobEvent::Kind kind) {
  for (const JobEvent& e : events) {
    if (e.job.value == job && e.kind == kind) return true;
  }
  return false;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override { url_ = controller_.Start(); }

  std::unique_ptr<Agent> StartAgent(Env& env) {
    AgentOptions o{.name = "n1", .data_dir = "/data", .server = url_, .token = "t"};
    o.cgroups = false;
    o.topology = *LoadHostTopology(Xml("nvidiaDGX2.xml"));
    auto agent = std::make_unique<Agent>(
        o, AgentDeps{.backend = backend_, .executor = executor_, .env = env, .clock = clock_});
    Status st = agent->Start();
    EXPECT_TRUE(st.ok()) << st.message();
    return agent;
  }

  FakeController controller_;
  std::string url_;
  MemEnv env_;
  FakeExecutor executor_{env_};
  SimulatedClock clock_{FromMillis(1'800'000'000'000)};
  SimulatedGpuBackend backend_{*ParseGpuSpec("8xH100-80GB"), "n1"};
};

TEST_F(AgentTest, ALaunchedJobIsRecordedInItsRunFileAndBoundToItsGpusNumaNode) {
  auto agent = StartAgent(env_);
  controller_.Send(Launch(6, {4}));
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 6, JobEvent::Kind::kStarted); }));
  auto record = DecodeRunRecord(*env_.ReadFile("/data/run/6.0.run"));
  ASSERT_TRUE(record.has_value()) << record.error().message();
  EXPECT_EQ(record->order.job, JobId{6});
  EXPECT_EQ(record->process.shim_pid, 1000);
  EXPECT_EQ(record->started_at, clock_.Now());
  // Simulated GPU 4 is on NUMA node 1: the job runs on that node's CPUs of the DGX-2.
  auto topology = LoadHostTopology(Xml("nvidiaDGX2.xml"));
  ASSERT_EQ(executor_.specs().size(), 1u);
  EXPECT_EQ(executor_.specs()[0].cpus, *topology->CpuListOf({1}));
  EXPECT_EQ(executor_.specs()[0].memory_node, 1);
}

// Issue 41: ten thousand agents sending their GPUs' readings every 2 s would be 5,000
// reports a second at the controller. A report's answer says how often the controller wants
// them (it spreads a large cluster's out), and the agent sends them no more often than that.
TEST_F(AgentTest, TheAgentSendsItsReadingsNoMoreOftenThanTheControllerAsks) {
  controller_.AnswerReports(R"({"sample_interval_ms": 10000})");
  auto agent = StartAgent(env_);
  auto with_readings = [](const std::vector<ReportRequest>& reports) {
    return std::count_if(reports.begin(), reports.end(),
                         [](const ReportRequest& r) { return !r.gpus.empty(); });
  };
  // Its first readings go at once; the answer asks for them every 10 s.
  ASSERT_TRUE(controller_.WaitForReports([](auto& reports) { return !reports.empty(); }));
  const auto first = with_readings(controller_.reports());
  EXPECT_EQ(first, 1);
  // 4 s later (twice its own 2 s) a job's start is reported, without readings: none are due.
  clock_.Advance(std::chrono::seconds(4));
  controller_.Send(Launch(6, {4}));
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 6, JobEvent::Kind::kStarted); }));
  EXPECT_EQ(with_readings(controller_.reports()), first);
  // At 10 s they are.
  clock_.Advance(std::chrono::seconds(6));
  EXPECT_TRUE(controller_.WaitForReports(
      [&](auto& reports) { return with_readings(reports) == first + 1; }));
}

// Issue 15: the run file's write and rename failures were ignored, and the job ran on without
// a record that a restarted agent could re-adopt it from.
TEST_F(AgentTest, AJobWhoseRunFileCannotBeWrittenIsAFailedLaunch) {
  FaultyEnv faulty(env_, ".run");
  auto agent = StartAgent(faulty);
  controller_.Send(Launch(5, {0}));
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 5, JobEvent::Kind::kExited); }));
  for (const JobEvent& e : controller_.events()) {
    if (e.kind != JobEvent::Kind::kExited) continue;
    EXPECT_EQ(e.exit_code, 127);
    EXPECT_NE(e.message.find("cannot record the job"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("No space left on device"), std::string::npos) << e.message;
  }
  // It had started: it is killed (its process group, from the shim's pid file).
  ASSERT_TRUE(executor_.WaitForSignal());
  EXPECT_EQ(executor_.signals()[0], std::make_pair(pid_t{1001}, SIGKILL));
  EXPECT_NE(env_.ReadFile("/data/jobs/5/output.log")->find("cannot record the job"),
            std::string::npos);
}

TEST_F(AgentTest, ARestartedAgentReadoptsItsJobsFromRunFilesReadThroughTheEnv) {
  ASSERT_TRUE(env_.CreateDirs("/data/run").ok());
  RunRecord running{.order = Launch(7, {0}).launch,
                    .process = {.shim_pid = 500, .job_pid = 501, .shim_start_ticks = 9}};
  RunRecord ended{.order = Launch(8, {1}).launch,
                  .process = {.shim_pid = 502, .job_pid = 503, .shim_start_ticks = 9}};
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/7.0.run", EncodeRunRecord(running), {}).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/8.0.run", EncodeRunRecord(ended), {}).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/8.0.run.exit", "exit 3\n", {}).ok());
  env_.SetProcess(500, 9);  // job 7's shim runs on; job 8's has gone

  auto agent = StartAgent(env_);
  RegisterRequest reg;
  ASSERT_TRUE(controller_.WaitFor([&](auto& registers, auto&) {
    if (registers.empty()) return false;
    reg = registers[0];
    return true;
  }));
  ASSERT_EQ(reg.jobs.size(), 2u);
  EXPECT_EQ(reg.jobs[0].job, JobId{7});
  EXPECT_EQ(reg.jobs[0].kind, JobEvent::Kind::kStarted);
  EXPECT_EQ(reg.jobs[1].job, JobId{8});
  EXPECT_EQ(reg.jobs[1].kind, JobEvent::Kind::kExited);
  EXPECT_EQ(reg.jobs[1].exit_code, 3);
}

// Issue 37: past its output limit a job's log keeps its head and its tail. The node frees the
// middle as it grows; the controller gets the head while it runs and, once it has ended, a
// marker saying what was dropped and the tail, right after the head.
TEST_F(AgentTest, OutputPastItsLimitKeepsItsHeadAndItsTailOnBothSides) {
  ASSERT_TRUE(env_.CreateDirs("/data/run").ok());
  RunRecord running{.order = Launch(7, {0}).launch,
                    .process = {.shim_pid = 500, .job_pid = 501, .shim_start_ticks = 9}};
  running.order.output_limit = 1 << 20;  // 512 KiB of head, 512 KiB of tail
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/7.0.run", EncodeRunRecord(running), {}).ok());
  env_.SetProcess(500, 9);
  const std::string log = "/data/jobs/7/output.log";
  ASSERT_TRUE(env_.CreateDirs("/data/jobs/7").ok());
  std::string head(512 << 10, 'h');
  ASSERT_TRUE(env_.AppendFile(log, head).ok());
  auto agent = StartAgent(env_);
  // The agent looks at logs every 250 ms of its clock: the clock moves on while the test waits.
  auto until = [&](const std::function<bool()>& pred) {
    for (int i = 0; i < 2000 && !pred(); ++i) {
      clock_.Advance(std::chrono::milliseconds(300));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
  };
  // 3 MiB more while it runs: the middle is freed on the node, the controller has the head.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(env_.AppendFile(log, std::string(1 << 20, 'm')).ok());
  ASSERT_TRUE(until([&] { return Has(controller_.events(), 7, JobEvent::Kind::kOutputLimit); }));
  ASSERT_TRUE(until([&] { return env_.Punched(log) > 0; }));
  ASSERT_TRUE(until([&] { return controller_.log(7).size() >= head.size(); }));
  const std::string got = controller_.log(7);
  EXPECT_TRUE(got.substr(0, head.size()) == head)
      << got.size() << " bytes, " << std::count(got.begin(), got.end(), 'h') << " of the head";
  std::string tail(512 << 10, 't');
  ASSERT_TRUE(env_.AppendFile(log, tail).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/7.0.run.exit", "exit 0\n", {}).ok());
  env_.SetProcess(500, 0);  // its shim has ended
  ASSERT_TRUE(until([&] { return Has(controller_.events(), 7, JobEvent::Kind::kExited); }));
  // The end comes with the whole of what is kept: head, marker, tail.
  std::string kept = controller_.log(7);
  ASSERT_GT(kept.size(), head.size() + tail.size());
  EXPECT_TRUE(kept.substr(0, head.size()) == head);
  EXPECT_TRUE(kept.substr(kept.size() - tail.size()) == tail);
  std::string marker = kept.substr(head.size(), kept.size() - head.size() - tail.size());
  EXPECT_NE(marker.find("[baton: 3145728 bytes (3MiB) of output dropped here, past the job's "
                        "output limit of 1MiB on node n1"),
            std::string::npos)
      << marker;
  EXPECT_EQ(marker.find("mmmm"), std::string::npos) << "dropped output shown";
  // The node's disk holds no more than head and tail (and less than a MiB it has not freed).
  EXPECT_GE(env_.Punched(log), 2 << 20);
}

TEST_F(AgentTest, ATimeLimitIsEnforcedOnTheInjectedClock) {
  auto agent = StartAgent(env_);
  controller_.Send(Launch(9, {0}, std::chrono::minutes(1)));  // no grace: SIGKILL at the limit
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 9, JobEvent::Kind::kStarted); }));
  EXPECT_TRUE(executor_.signals().empty());
  clock_.Advance(std::chrono::seconds(61));
  // Job 9's process group is 1001, the pid the fake executor wrote to its pid file.
  ASSERT_TRUE(executor_.WaitForSignal());
  EXPECT_EQ(executor_.signals()[0], std::make_pair(pid_t{1001}, SIGKILL));
}

// Issue 16 and PRODUCT.md §4: SIGTERM, the grace period, SIGKILL; a job that asked for a notice
// (Slurm's --signal USR1@2m) gets it once, that long before its limit, and nothing else.
TEST_F(AgentTest, ATimeLimitSendsTheNoticeTheJobAskedForThenSigtermThenSigkill) {
  auto agent = StartAgent(env_);
  Order o = Launch(11, {0}, std::chrono::minutes(10));
  o.launch.grace_period = std::chrono::seconds(30);
  o.launch.signal = SIGUSR1;
  o.launch.signal_before = std::chrono::minutes(2);
  controller_.Send(o);
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 11, JobEvent::Kind::kStarted); }));
  clock_.Advance(std::chrono::minutes(7));
  clock_.Advance(std::chrono::minutes(1) + std::chrono::seconds(1));  // 2 min before the limit
  ASSERT_TRUE(executor_.WaitForSignal(1));
  EXPECT_EQ(executor_.signals()[0], std::make_pair(pid_t{1001}, SIGUSR1));
  clock_.Advance(std::chrono::minutes(2));  // the limit
  ASSERT_TRUE(executor_.WaitForSignal(2));
  clock_.Advance(std::chrono::seconds(31));  // the grace period
  ASSERT_TRUE(executor_.WaitForSignal(3));
  std::vector<std::pair<pid_t, int>> want = {
      {1001, SIGUSR1}, {1001, SIGTERM}, {1001, SIGKILL}};  // the notice once, no SIGUSR1 after
  EXPECT_EQ(executor_.signals(), want);
}

TEST_F(AgentTest, WithoutANoticeATimeLimitSendsSigtermFirst) {
  auto agent = StartAgent(env_);
  Order o = Launch(12, {0}, std::chrono::minutes(1));
  o.launch.grace_period = std::chrono::seconds(10);
  controller_.Send(o);
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 12, JobEvent::Kind::kStarted); }));
  clock_.Advance(std::chrono::seconds(61));
  ASSERT_TRUE(executor_.WaitForSignal(1));
  clock_.Advance(std::chrono::seconds(11));
  ASSERT_TRUE(executor_.WaitForSignal(2));
  std::vector<std::pair<pid_t, int>> want = {{1001, SIGTERM}, {1001, SIGKILL}};
  EXPECT_EQ(executor_.signals(), want);
}

// Issue 39: a signal due before the shim wrote the job's pid made the agent spin for it, 1 ms
// at a time, and give the signal up after 200 ms. It waits with the job instead, and goes as
// soon as the pid is there.
TEST_F(AgentTest, ASignalDueBeforeTheShimWroteTheJobsPidGoesOnceItHas) {
  executor_.WritePidFiles(false);
  auto agent = StartAgent(env_);
  controller_.Send(Launch(13, {0}, std::chrono::minutes(1)));  // no grace: SIGKILL at the limit
  ASSERT_TRUE(controller_.WaitFor(
      [](auto&, auto& events) { return Has(events, 13, JobEvent::Kind::kStarted); }));
  clock_.Advance(std::chrono::seconds(61));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the agent's loop looks again
  EXPECT_TRUE(executor_.signals().empty());                     // no pid to signal yet
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/13.0.run.pid", "1001\n", {}).ok());
  ASSERT_TRUE(executor_.WaitForSignal());
  std::vector<std::pair<pid_t, int>> want = {{1001, SIGKILL}};
  EXPECT_EQ(executor_.signals(), want);
  auto record = DecodeRunRecord(*env_.ReadFile("/data/run/13.0.run"));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->process.job_pid, 1001);  // kept for an agent that restarts
}

}  // namespace
}  // namespace baton::agent
