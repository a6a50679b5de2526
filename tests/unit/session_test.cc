// Sessions and tunnels (issue 17): the session frames, the byte splice, the controller's relay
// hub, the tunnel order and the controller's checks of who may open a tunnel to what, and the
// CLI's port pairs and exit codes.
#include "cli/session.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <thread>

#include "api/auth.h"
#include "api/code_store.h"
#include "api/relay.h"
#include "cli/forward.h"
#include "codec/json_codec.h"
#include "controller_fixture.h"
#include "core/session_frame.h"
#include "core/splice.h"

namespace baton {
namespace {

using namespace std::chrono_literals;

TEST(SessionFrames, RoundTripWhateverPiecesTheyArriveIn) {
  std::string bytes = EncodeFrame(FrameType::kData, "hello") +
                      EncodeFrame(FrameType::kResize, "40 100") + EncodeFrame(FrameType::kEof) +
                      EncodeFrame(FrameType::kExit, "exit 7");
  FrameReader reader;
  std::vector<Frame> got;
  for (char c : bytes) {  // one byte at a time: frames come whole or not at all
    reader.Feed(std::string_view(&c, 1));
    for (;;) {
      auto f = reader.Next();
      ASSERT_TRUE(f.has_value());
      if (!*f) break;
      got.push_back(**f);
    }
  }
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].type, FrameType::kData);
  EXPECT_EQ(got[0].payload, "hello");
  EXPECT_EQ(got[1].type, FrameType::kResize);
  EXPECT_EQ(got[1].payload, "40 100");
  EXPECT_EQ(got[2].type, FrameType::kEof);
  EXPECT_EQ(got[2].payload, "");
  EXPECT_EQ(got[3].payload, "exit 7");
}

TEST(SessionFrames, AStreamThatIsNotFramesIsAnErrorThatStays) {
  FrameReader reader;
  reader.Feed("HTTP/1.1 200 OK\r\n");
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_FALSE(reader.Next().has_value());
  FrameReader huge;
  huge.Feed(std::string("d\x7f\xff\xff\xff", 5));
  auto f = huge.Next();
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().message().find("bytes"), std::string::npos);
}

TEST(Splice, CopiesBothWaysAndPassesHalfClosesOn) {
  int a[2], b[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  std::thread relay([&] { Splice(a[1], b[1], -1, "early "); });
  ASSERT_TRUE(WriteAllTo(a[0], "to b"));
  ASSERT_TRUE(WriteAllTo(b[0], "to a"));
  shutdown(a[0], SHUT_WR);  // a is done sending; b may still answer
  std::string at_b, at_a;
  char buf[64];
  ssize_t n;
  while ((n = read(b[0], buf, sizeof buf)) > 0) at_b.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(at_b, "early to b");
  ASSERT_TRUE(WriteAllTo(b[0], " and more"));
  shutdown(b[0], SHUT_WR);
  while ((n = read(a[0], buf, sizeof buf)) > 0) at_a.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(at_a, "to a and more");
  relay.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
}

TEST(RelayHub, PairsTheTwoEndsOfATunnelAndOnlyExpectedOnes) {
  api::RelayHub hub(300ms);
  int client[2], agent[2], stranger[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, client), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, agent), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, stranger), 0);
  hub.Expect("t1");
  EXPECT_TRUE(hub.Expects("t1"));
  EXPECT_FALSE(hub.Expects("t2"));
  hub.Offer("t1", client[1], "typed early");
  hub.Offer("t2", stranger[1], "");  // not expected: closed at once
  char buf[64];
  EXPECT_EQ(read(stranger[0], buf, sizeof buf), 0);
  hub.Offer("t1", agent[1], "");
  EXPECT_FALSE(hub.Expects("t1"));  // both ends came: the id is used up
  ssize_t n = read(agent[0], buf, sizeof buf);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "typed early");
  ASSERT_TRUE(WriteAllTo(agent[0], "output"));
  n = read(client[0], buf, sizeof buf);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "output");
  EXPECT_EQ(hub.Paired(), 1);
  close(client[0]);  // the client goes: the agent's end closes too
  EXPECT_EQ(read(agent[0], buf, sizeof buf), 0);
  close(agent[0]);
  close(stranger[0]);
}

TEST(RelayHub, AnEndWhoseOtherEndNeverComesIsClosed) {
  api::RelayHub hub(100ms);
  int client[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, client), 0);
  hub.Expect("lonely");
  hub.Offer("lonely", client[1], "");
  char buf[8];
  EXPECT_EQ(read(client[0], buf, sizeof buf), 0);  // closed after the wait
  EXPECT_FALSE(hub.Expects("lonely"));
  close(client[0]);
}

TEST(TunnelOrders, RoundTripThroughTheAgentProtocol) {
  Order o;
  o.seq = 9;
  o.kind = Order::Kind::kTunnel;
  o.tunnel = TunnelOrder{
      .id = "0123456789abcdef0123456789abcdef", .job = JobId{12}, .attempt = 2, .port = 8888};
  auto back = codec::DecodeOrders(codec::EncodeOrders({o}));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].kind, Order::Kind::kTunnel);
  EXPECT_EQ((*back)[0].tunnel, o.tunnel);
}

TEST(InteractiveSpecs, AreCheckedAndKept) {
  JobSpec spec = SubmittedSpec();
  spec.command = {"bash"};
  spec.interactive = Interactive::kTty;
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  auto back = codec::DecodeJobSpec(codec::EncodeJobSpec(spec));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->interactive, Interactive::kTty);
  spec.resources.nodes = 2;
  EXPECT_NE(ValidateJobSpec(spec).message().find("one process on one node"), std::string::npos);
  spec.resources.nodes = 0;
  auto pty = codec::DecodeJobSpec(R"({"command": ["bash"], "interactive": "pty"})");
  ASSERT_FALSE(pty.has_value());
  EXPECT_EQ(pty.error().message(), "interactive: must be one of stdin, tty (got \"pty\")");
  spec.interactive = Interactive::kStdin;
  spec.array = "0-3";
  EXPECT_NE(ValidateJobSpec(spec).message().find("a session is one job"), std::string::npos);
}

TEST(CliSessions, PortPairsAndExitCodes) {
  auto p = cli::ParsePortPair("8888");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->local, 8888);
  EXPECT_EQ(p->remote, 8888);
  p = cli::ParsePortPair("0:6006");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->local, 0);
  EXPECT_EQ(p->remote, 6006);
  for (const char* bad : {"", "x", "70000", "1:0", "a:80", "80:", ":80"})
    EXPECT_FALSE(cli::ParsePortPair(bad).has_value()) << bad;
  Job j;
  j.state = JobState::kSucceeded;
  EXPECT_EQ(cli::ExitCodeOf(j), 0);
  j.state = JobState::kFailed;
  j.exit_code = 3;
  EXPECT_EQ(cli::ExitCodeOf(j), 3);
  j.exit_code.reset();
  j.exit_signal = 9;
  EXPECT_EQ(cli::ExitCodeOf(j), 137);
  j.exit_signal.reset();
  EXPECT_EQ(cli::ExitCodeOf(j), 1);  // lost: no code at all
  j.state = JobState::kCancelled;
  EXPECT_EQ(cli::ExitCodeOf(j), 130);
  j.state = JobState::kTimedOut;
  EXPECT_EQ(cli::ExitCodeOf(j), 124);
}

}  // namespace

namespace control {
namespace {

class TunnelTest : public ControllerTest {
 protected:
  JobId StartSession(Interactive interactive) {
    JobSpec s;
    s.name = "shell";
    s.command = {"bash"};
    s.interactive = interactive;
    s.resources.milli_gpus = 1000;
    auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    JobId id = r->jobs.at(0).id;
    std::vector<Order> launched = Poll("n1");
    EXPECT_EQ(launched.size(), 1u);
    if (!launched.empty()) {
      EXPECT_EQ(launched[0].launch.interactive, interactive);
    }
    ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
    return id;
  }
};

TEST_F(TunnelTest, TheOwnerGetsATunnelOrderToTheJobsNode) {
  RegisterNode("n1", 2);
  JobId id = StartSession(Interactive::kTty);
  auto r = Run(OpenTunnel{.caller = {"ada", false}, .id = id, .tunnel = "t1"});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kTunnel);
  EXPECT_EQ(orders[0].tunnel, (TunnelOrder{.id = "t1", .job = id, .attempt = 0, .port = 0}));
  // A port of any running job of one's own; an admin may too.
  JobId batch = StartJob("n1", 1000, Priority::kNormal);
  EXPECT_TRUE(Run(OpenTunnel{.caller = {"root", true}, .id = batch, .tunnel = "t2", .port = 8888})
                  .status.ok());
}

TEST_F(TunnelTest, OthersPendingJobsAndBatchJobsSessionsAreRefused) {
  RegisterNode("n1", 1);
  JobId id = StartSession(Interactive::kStdin);
  auto other = Run(OpenTunnel{.caller = {"bob", false}, .id = id, .tunnel = "t"});
  EXPECT_EQ(other.status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Run(OpenTunnel{.caller = {"ada", false}, .id = JobId{99}, .tunnel = "t"}).status.code(),
            Code::kNotFound);
  JobId waiting = Submit(1000);  // the only GPU is taken: it waits
  auto pending = Run(OpenTunnel{.caller = {"ada", true}, .id = waiting, .tunnel = "t", .port = 80});
  EXPECT_EQ(pending.status.code(), Code::kConflict);
  EXPECT_NE(pending.status.message().find("not running yet"), std::string::npos);
  Run(JobAction{.caller = {"ada", true}, .id = waiting, .kind = JobAction::Kind::kCancel});
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kExited});
  JobId batch = StartJob("n1", 1000, Priority::kNormal);
  auto no_session = Run(OpenTunnel{.caller = {"ada", true}, .id = batch, .tunnel = "t"});
  EXPECT_EQ(no_session.status.code(), Code::kConflict);
  EXPECT_NE(no_session.status.message().find("no session"), std::string::npos);
}

}  // namespace
}  // namespace control
}  // namespace baton

namespace baton::control {
namespace {

using std::chrono::seconds;

// A controller whose default pool is interactive: sessions of at most 2h (1h by default), two
// per user, stopped after 60 s idle with a warning 20 s before.
class IdleSessionTest : public ControllerTest {
 protected:
  void SetUp() override {
    Policy p;
    PoolPolicy dev;
    dev.interactive = true;
    dev.session_time_limit = std::chrono::hours(2);
    dev.max_sessions_per_user = 2;
    dev.idle_timeout = seconds(60);
    dev.idle_warning = seconds(20);
    dev.idle_utilization_pct = 5;
    p.pools["default"] = dev;
    c_ = std::make_unique<Controller>(ControllerOptions{.policy = p});
    c_->Restore(*store_.Load(), now_);
    RegisterNode("n1", 4);
  }

  Answered<SubmitJobs> SubmitSession(const std::string& user, Duration limit = Duration(0)) {
    JobSpec s;
    s.command = {"bash"};
    s.interactive = Interactive::kTty;
    s.resources.milli_gpus = 1000;
    s.time_limit = limit;
    return Run(SubmitJobs{.caller = {user, false}, .specs = {s}});
  }

  // A report of node n1: its GPUs at `pct`, and the sessions with a client attached.
  void Report(int pct, std::vector<JobId> attached = {}) {
    std::vector<GpuSample> gpus;
    for (int i = 0; i < 4; ++i) gpus.push_back(GpuSample{.index = i, .utilization_pct = pct});
    auto r = Run(AgentReport{ReportRequest{
        .node = "n1", .session = session_, .gpus = gpus, .attached = std::move(attached)}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }

  void After(Duration d) {
    now_ += d;
    Run(Tick{});
  }
};

TEST_F(IdleSessionTest, SessionsGetThePoolsLimitsAtSubmit) {
  auto first = SubmitSession("ada");
  ASSERT_TRUE(first.status.ok()) << first.status.message();
  EXPECT_EQ(first->jobs[0].spec.time_limit, std::chrono::hours(2));
  auto too_long = SubmitSession("ada", std::chrono::hours(3));
  EXPECT_EQ(too_long.status.code(), Code::kInvalidArgument);
  EXPECT_NE(too_long.status.message().find("sessions in pool default run at most 2h"),
            std::string::npos)
      << too_long.status.message();
  ASSERT_TRUE(SubmitSession("ada").status.ok());
  auto third = SubmitSession("ada");
  EXPECT_EQ(third.status.code(), Code::kConflict);
  EXPECT_NE(third.status.message().find("allows 2 session(s) per user; ada has 1, 2"),
            std::string::npos)
      << third.status.message();
  EXPECT_TRUE(SubmitSession("bob").status.ok());  // per user
  // A batch job is no session: neither limit applies.
  JobSpec batch;
  batch.command = {"train"};
  batch.time_limit = std::chrono::hours(30);
  EXPECT_TRUE(Run(SubmitJobs{.caller = {"ada", false}, .specs = {batch}}).status.ok());
}

TEST_F(IdleSessionTest, AnIdleSessionIsWarnedThenStoppedAndItsGpuHoursCounted) {
  JobId id = SubmitSession("ada")->jobs.at(0).id;
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  Run(Tick{});
  // In use (a client attached, then its GPU busy): the idle clock starts again each time.
  Report(0, {id});
  After(seconds(50));
  Report(90);
  After(seconds(50));
  EXPECT_TRUE(Poll("n1").empty());
  // Idle from here: warned 20 s before the minute is up, then stopped.
  Report(0);
  After(seconds(41));
  std::vector<Order> warned = Poll("n1");
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].kind, Order::Kind::kNote);
  EXPECT_EQ(warned[0].note.job, id);
  EXPECT_NE(warned[0].note.message.find("idle for"), std::string::npos) << warned[0].note.message;
  EXPECT_NE(warned[0].note.message.find("baton attach " + id.ToString()), std::string::npos);
  After(seconds(5));
  EXPECT_TRUE(Poll("n1").empty());  // warned once
  After(seconds(15));
  std::vector<Order> stopped = Poll("n1");
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].kind, Order::Kind::kStop);
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kExited, .signal = 15});
  const Job* job = c_->FindJob(id);
  EXPECT_EQ(job->state, JobState::kCancelled);
  EXPECT_NE(job->reason_detail.find("cancelled: an idle session"), std::string::npos)
      << job->reason_detail;
  std::vector<ClusterEvent> events = Run(GetEvents{})->events;
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, EventKind::kSessionReclaimed);
  EXPECT_EQ(events.back().job, id.value);
  // 1 GPU for the rest of its 2 h: it ran 50 + 50 + 41 + 5 + 15 = 161 s.
  EXPECT_NE(events.back().message.find("1.96 GPU-hours"), std::string::npos)
      << events.back().message;
  auto metrics = Run(GetMetrics{})->metrics;
  EXPECT_EQ(metrics->sessions_reclaimed, 1u);
  EXPECT_NEAR(metrics->reclaimed_gpu_seconds, 7200 - 161, 1);
}

}  // namespace
}  // namespace baton::control

namespace baton::api {
namespace {

TEST(CodeStore, KeepsAnArchiveOnceByItsHashAndRefusesWhatIsNotOne) {
  char tmpl[] = "/tmp/baton-code-store-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  CodeStore store(std::string(tmpl) + "/snapshots");
  // gzip of nothing: header, an empty fixed-Huffman block, CRC-32 and size.
  const std::string archive(
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20);
  TimePoint now = FromMillis(1'790'000'000'000);
  auto id = store.Put(archive, "ada", now);
  ASSERT_TRUE(id.has_value()) << id.error().message();
  EXPECT_EQ(*id, Sha256Hex(archive));
  EXPECT_TRUE(IsCodeId(*id));
  EXPECT_TRUE(store.Has(*id));
  EXPECT_EQ(*store.Put(archive, "ada", now), *id);  // the same bytes: the same snapshot
  auto back = store.Get(*id);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, archive);
  EXPECT_FALSE(store.Put("not gzip", "ada", now).has_value());
  // Cut short, or with a gzip head and no stream after it: refused, saying so.
  auto cut = store.Put(archive.substr(0, 12), "ada", now);
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().message().find("truncated"), std::string::npos) << cut.error().message();
  auto junk = store.Put(std::string("\x1f\x8b", 2) + "rest of a gzip stream", "ada", now);
  ASSERT_FALSE(junk.has_value());
  EXPECT_NE(junk.error().message().find("not a valid gzip archive"), std::string::npos);
  EXPECT_FALSE(store.Has(std::string(64, 'a')));
  EXPECT_EQ(store.Get(std::string(64, 'a')).error().code(), Code::kNotFound);
  EXPECT_EQ(store.Get("../../etc/passwd").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(system(("rm -rf " + std::string(tmpl)).c_str()), 0);
}

// `data` as a gzip stream (incompressible data stays about its size).
std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Noise(size_t bytes, uint32_t seed) {
  std::string s(bytes, '\0');
  for (char& c : s) {
    seed = seed * 1664525 + 1013904223;
    c = static_cast<char>(seed >> 24);
  }
  return s;
}

Job UsingCode(int64_t id, JobState state, const std::string& code) {
  Job j;
  j.id = JobId{id};
  j.state = state;
  j.spec.code = code;
  return j;
}

// Each user's snapshots count against a quota; one no queued or running job uses is deleted
// once the retention has passed since its last use, and only then.
TEST(CodeStore, KeepsEachUserUnderAQuotaAndDeletesWhatNoJobUsesAfterTheRetention) {
  char tmpl[] = "/tmp/baton-code-quota-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = std::string(tmpl) + "/snapshots";
  CodeLimits limits{.per_user_bytes = 310 << 10, .retention = std::chrono::hours(24)};
  // Now: a restart reads each archive's time back as its last use.
  TimePoint t0 = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  std::string a = Gzip(Noise(100 << 10, 1)), b = Gzip(Noise(100 << 10, 2)),
              c = Gzip(Noise(100 << 10, 3)), d = Gzip(Noise(100 << 10, 4));
  std::string id_a, id_b;
  {
    CodeStore store(dir, limits);
    id_a = *store.Put(a, "ada", t0);
    id_b = *store.Put(b, "ada", t0);
    ASSERT_TRUE(store.Put(c, "ada", t0).has_value());
    auto over = store.Put(d, "ada", t0);
    ASSERT_FALSE(over.has_value());
    EXPECT_EQ(over.error().code(), Code::kConflict);
    EXPECT_NE(over.error().message().find("ada's snapshots take "), std::string::npos)
        << over.error().message();
    EXPECT_NE(over.error().message().find("would pass the quota of 310KiB per user"),
              std::string::npos)
        << over.error().message();
    // Whose they are, readable by the controller's user alone, as the archives.
    for (const char* suffix : {".owners", ".tar.gz"}) {
      EXPECT_EQ(std::filesystem::status(dir + "/" + id_a + suffix).permissions() &
                    std::filesystem::perms::all,
                std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
          << suffix;
    }
    EXPECT_TRUE(store.Put(d, "bob", t0).has_value());  // another user's quota
    EXPECT_TRUE(store.Put(a, "bob", t0).has_value());  // shared: counts for both
    EXPECT_EQ(store.UserBytes("bob"), 2 * static_cast<int64_t>(a.size()));
  }
  // A restart reads owners and sizes back; a queued job keeps its snapshot past the retention.
  CodeStore store(dir, limits);
  EXPECT_EQ(store.UserBytes("ada"), static_cast<int64_t>(a.size() + b.size() + c.size()));
  store.Track({UsingCode(1, JobState::kPending, id_a)}, t0);
  TimePoint later = t0 + std::chrono::hours(25);
  EXPECT_EQ(store.Collect(later), 3);  // b, c and d: no job uses them
  EXPECT_TRUE(store.Has(id_a));
  EXPECT_FALSE(store.Has(id_b));
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + id_b + ".tar.gz"));
  // The job ends: the retention starts anew from its end.
  store.Track({UsingCode(1, JobState::kSucceeded, id_a)}, later);
  EXPECT_EQ(store.Collect(later + std::chrono::hours(23)), 0);
  EXPECT_EQ(store.Collect(later + std::chrono::hours(25)), 1);
  EXPECT_FALSE(store.Has(id_a));
  // Room again: what was deleted no longer counts.
  EXPECT_TRUE(store.Put(d, "ada", later).has_value());
  EXPECT_EQ(system(("rm -rf " + std::string(tmpl)).c_str()), 0);
}

TEST(CodeSpecs, NameASnapshotByItsHashAndNotAWorkdir) {
  JobSpec spec = SubmittedSpec();
  spec.command = {"python3", "train.py"};
  spec.code = std::string(64, 'f');
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  auto back = codec::DecodeJobSpec(codec::EncodeJobSpec(spec));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, spec.code);
  spec.workdir = "/home/ada";
  EXPECT_NE(ValidateJobSpec(spec).message().find("not with workdir"), std::string::npos);
  spec.workdir.clear();
  spec.code = "ABC";
  EXPECT_NE(ValidateJobSpec(spec).message().find("64 lowercase hex digits"), std::string::npos);
}

}  // namespace
}  // namespace baton::api
