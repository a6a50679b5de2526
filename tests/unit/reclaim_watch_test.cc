// A spot node's reclaim notice on the agent (agent/reclaim_watch.h): the sources
// --reclaim-notice takes, what each cloud's answer says, and a look at a file. The metadata
// servers are looked at for real in tests/integration/reclaim_test.cc.
#include "agent/reclaim_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace baton::agent {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const TimePoint kNow = *ParseRfc3339("2026-11-29T12:00:00Z");

// What an answer says, the test failing where it is an error (never read as a value).
std::optional<TimePoint> Said(const Result<std::optional<TimePoint>>& r) {
  EXPECT_TRUE(r.has_value()) << r.error().message();
  return r.has_value() ? *r : std::optional<TimePoint>(TimePoint{});
}

TEST(ReclaimWatch, SourcesAreAwsGcpOrAFileAndAnythingElseIsNamed) {
  auto aws = ParseReclaimSource("aws");
  ASSERT_TRUE(aws.has_value());
  EXPECT_EQ(aws->kind, ReclaimSource::Kind::kAws);
  EXPECT_EQ(aws->where, "http://169.254.169.254");
  EXPECT_EQ(ParseReclaimSource("aws:http://127.0.0.1:8080")->where, "http://127.0.0.1:8080");
  EXPECT_EQ(ParseReclaimSource("gcp")->where, "http://metadata.google.internal");
  auto file = ParseReclaimSource("file:/run/spot-notice");
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->kind, ReclaimSource::Kind::kFile);
  EXPECT_EQ(file->where, "/run/spot-notice");

  EXPECT_EQ(ParseReclaimSource("azure").error().message(),
            "--reclaim-notice azure: must be aws[:URL], gcp[:URL] or file:PATH");
  EXPECT_EQ(ParseReclaimSource("file:notice").error().message(),
            "--reclaim-notice file:notice: file:PATH takes an absolute path of at most 4096 bytes");
  EXPECT_EQ(ParseReclaimSource("aws:https://169.254.169.254").error().message(),
            "--reclaim-notice aws:https://169.254.169.254: the metadata server is an "
            "http://HOST[:PORT] URL (not https)");
}

TEST(ReclaimWatch, AwsSaysNothingUntilItsInstanceActionThenItsTime) {
  EXPECT_EQ(Said(AwsAnswer(404, "Not Found", kNow)), std::nullopt);
  EXPECT_EQ(
      Said(AwsAnswer(200, R"({"action": "terminate", "time": "2026-11-29T12:02:00Z"})", kNow)),
      kNow + minutes(2));
  EXPECT_EQ(Said(AwsAnswer(200, R"({"action": "stop", "time": "2026-11-29T12:02:00Z"})", kNow)),
            kNow + minutes(2));
  EXPECT_EQ(AwsAnswer(200, R"({"action": "reboot", "time": "2026-11-29T12:02:00Z"})", kNow)
                .error()
                .message(),
            "spot/instance-action: action: must be terminate, stop or hibernate");
  EXPECT_EQ(AwsAnswer(200, "{}", kNow).error().message(),
            "spot/instance-action: action: must be terminate, stop or hibernate");
  EXPECT_EQ(AwsAnswer(500, "", kNow).error().message(), "spot/instance-action answered 500");
}

TEST(ReclaimWatch, GcpSaysTrueWithThirtySecondsLeft) {
  EXPECT_EQ(Said(GcpAnswer(200, "FALSE", kNow)), std::nullopt);
  EXPECT_EQ(Said(GcpAnswer(200, "TRUE\n", kNow)), kNow + seconds(30));
  EXPECT_EQ(GcpAnswer(200, "maybe", kNow).error().message(),
            "instance/preempted: neither TRUE nor FALSE");
  EXPECT_EQ(GcpAnswer(503, "", kNow).error().message(), "instance/preempted answered 503");
}

TEST(ReclaimWatch, AFileIsANoticeEmptyWithTwoMinutesElseItsTime) {
  EXPECT_EQ(Said(FileAnswer("", kNow)), kNow + minutes(2));
  EXPECT_EQ(Said(FileAnswer(" \n", kNow)), kNow + minutes(2));
  EXPECT_EQ(Said(FileAnswer("2026-11-29T12:00:45Z\n", kNow)), kNow + seconds(45));
  EXPECT_EQ(Said(FileAnswer(R"({"action": "terminate", "time": "2026-11-29T12:01:00Z"})", kNow)),
            kNow + minutes(1));
  EXPECT_EQ(FileAnswer("soon", kNow).error().message(),
            "neither empty, an RFC 3339 time nor AWS's instance-action JSON");
}

TEST(ReclaimWatch, ALookAtAFileSeesItOnceItExists) {
  const std::string path = ::testing::TempDir() + "/reclaim-notice-" + std::to_string(getpid());
  std::remove(path.c_str());
  ReclaimWatch watch(*ParseReclaimSource("file:" + path));
  auto none = watch.Look(kNow);
  ASSERT_TRUE(none.has_value()) << none.error().message();
  EXPECT_EQ(*none, std::nullopt);

  std::ofstream(path) << "2026-11-29T12:01:30Z\n";
  auto seen = watch.Look(kNow + seconds(5));
  ASSERT_TRUE(seen.has_value()) << seen.error().message();
  ASSERT_TRUE(seen->has_value());
  EXPECT_EQ(
      **seen,
      (ReclaimNotice{.source = "file", .seen = kNow + seconds(5), .deadline = kNow + seconds(90)}));

  std::ofstream(path) << "garbage";
  EXPECT_EQ(watch.Look(kNow).error().message(),
            path + ": neither empty, an RFC 3339 time nor AWS's instance-action JSON");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace baton::agent
