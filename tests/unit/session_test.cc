// Sessions and tunnels (issue 17): the session frames, the byte splice, the controller's relay
// hub, the tunnel order and the controller's checks of who may open a tunnel to what, and the
// CLI's port pairs and exit codes.
#include "cli/session.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "api/relay.h"
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
  spec.interactive = "tty";
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  auto back = codec::DecodeJobSpec(codec::EncodeJobSpec(spec));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->interactive, "tty");
  spec.resources.nodes = 2;
  EXPECT_NE(ValidateJobSpec(spec).message().find("one process on one node"), std::string::npos);
  spec.resources.nodes = 0;
  spec.interactive = "pty";
  EXPECT_NE(ValidateJobSpec(spec).message().find("stdin or tty"), std::string::npos);
  spec.interactive = "stdin";
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
  JobId StartSession(const std::string& interactive) {
    JobSpec s;
    s.name = "shell";
    s.command = {"bash"};
    s.interactive = interactive;
    s.resources.milli_gpus = 1000;
    Reply r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    JobId id = r.jobs.at(0).id;
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
  JobId id = StartSession("tty");
  Reply r = Run(OpenTunnel{.caller = {"ada", false}, .id = id, .tunnel = "t1"});
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
  JobId id = StartSession("stdin");
  Reply other = Run(OpenTunnel{.caller = {"bob", false}, .id = id, .tunnel = "t"});
  EXPECT_EQ(other.status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Run(OpenTunnel{.caller = {"ada", false}, .id = JobId{99}, .tunnel = "t"}).status.code(),
            Code::kNotFound);
  JobId waiting = Submit(1000);  // the only GPU is taken: it waits
  Reply pending =
      Run(OpenTunnel{.caller = {"ada", true}, .id = waiting, .tunnel = "t", .port = 80});
  EXPECT_EQ(pending.status.code(), Code::kConflict);
  EXPECT_NE(pending.status.message().find("not running yet"), std::string::npos);
  Run(JobAction{.caller = {"ada", true}, .id = waiting, .kind = JobAction::Kind::kCancel});
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kExited});
  JobId batch = StartJob("n1", 1000, Priority::kNormal);
  Reply no_session = Run(OpenTunnel{.caller = {"ada", true}, .id = batch, .tunnel = "t"});
  EXPECT_EQ(no_session.status.code(), Code::kConflict);
  EXPECT_NE(no_session.status.message().find("no session"), std::string::npos);
}

}  // namespace
}  // namespace control
}  // namespace baton
