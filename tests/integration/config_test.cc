// The server's configuration file from the command line: `baton config sample` and `check`,
// and a reload on SIGHUP that applies a good file and keeps the running one for a bad file.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

int SubmitStatus(net::HttpClient& c, const std::string& body, std::string* out = nullptr) {
  auto r = c.Request("POST", "/v1/jobs", body);
  if (!r) return 0;
  if (out != nullptr) *out = r->body;
  return r->status;
}

TEST(Config, TheSampleChecksAndABadFileIsNamedByLineAndKey) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server");
  CliResult sample = RunCli(baton, {"config", "sample"});
  ASSERT_EQ(sample.exit_code, 0) << sample.out;
  EXPECT_EQ(sample.out, ReadFile(std::string(BATON_SOURCE_DIR) + "/deploy/baton.example.yaml"));
  std::string good = dir.path() + "/baton.yaml";
  std::ofstream(good) << sample.out;
  CliResult ok = RunCli(baton, {"config", "check", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find(good + ": ok (2 projects, 1 users, 2 pools)"), std::string::npos) << ok.out;

  std::string bad = dir.path() + "/bad.yaml";
  std::ofstream(bad) << "scheduling:\n  backfill: true\nprojects:\n  vision: {share: many}\n";
  CliResult refused = RunCli(baton, {"config", "check", bad});
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.out.find("bad.yaml: line 4: projects.vision.share: must be a number"),
            std::string::npos)
      << refused.out;
  CliResult missing = RunCli(baton, {"config", "check", dir.path() + "/nope.yaml"});
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("nope.yaml: cannot be read"), std::string::npos) << missing.out;
}

TEST(Config, SighupAppliesAGoodFileAndKeepsTheRunningOneForABadFile) {
  TempDir dir;
  std::string path = dir.path() + "/baton.yaml";
  std::ofstream(path) << "pools:\n  default: {max_time_limit: 1h}\n";
  BatonProcess baton(dir.path() + "/server", {"--config", path});
  auto c = baton.Client();
  std::string body;
  EXPECT_EQ(SubmitStatus(*c, R"({"command": ["true"], "time_limit": "2h"})", &body), 400) << body;

  auto reloads = [&](const std::string& marker) {
    return Within(std::chrono::seconds(10), [&] {
      return ReadFile(baton.data_dir() + "/baton.out").find(marker) != std::string::npos;
    });
  };
  std::ofstream(path) << "pools:\n  default: {max_time_limit: 4h}\n";
  baton.Signal(SIGHUP);
  ASSERT_TRUE(reloads("SIGHUP: reloaded " + path)) << ReadFile(baton.data_dir() + "/baton.out");
  EXPECT_EQ(SubmitStatus(*c, R"({"command": ["true"], "time_limit": "2h"})", &body), 201) << body;

  std::ofstream(path) << "pools:\n  default: {max_time_limit: soon}\n";
  baton.Signal(SIGHUP);
  ASSERT_TRUE(reloads("the running configuration stays"))
      << ReadFile(baton.data_dir() + "/baton.out");
  EXPECT_NE(ReadFile(baton.data_dir() + "/baton.out")
                .find("baton.yaml: line 2: pools.default.max_time_limit"),
            std::string::npos);
  EXPECT_TRUE(baton.Alive());
  EXPECT_EQ(SubmitStatus(*c, R"({"command": ["true"], "time_limit": "3h"})", &body), 201) << body;
  EXPECT_EQ(SubmitStatus(*c, R"({"command": ["true"], "time_limit": "5h"})", &body), 400) << body;
  const std::string next_start = "take effect at the next start only";
  EXPECT_EQ(ReadFile(baton.data_dir() + "/baton.out").find(next_start), std::string::npos)
      << "only the policy changed so far";

  // What only a start takes (here the shared directory) is said to wait for the next one.
  std::ofstream(path) << "listen: 127.0.0.1:1\n"
                      << "shared_dir: " << dir.path() << "/shared\n"
                      << "pools:\n  default: {max_time_limit: 4h}\n";
  baton.Signal(SIGHUP);
  ASSERT_TRUE(reloads(next_start)) << ReadFile(baton.data_dir() + "/baton.out");
  EXPECT_NE(ReadFile(baton.data_dir() + "/baton.out").find("`shared_dir`"), std::string::npos);
  EXPECT_EQ(SubmitStatus(*c, R"({"command": ["true"], "time_limit": "4h"})", &body), 201) << body;
}

TEST(Config, TheStoreLivesWhereTheFileSaysAndKeepsJobsAcrossARestart) {
  TempDir dir;
  std::string db = dir.path() + "/elsewhere/jobs.db";
  std::filesystem::create_directories(dir.path() + "/elsewhere");
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "store: {type: sqlite, path: " << db << "}\n";
  int64_t id = 0;
  {
    BatonProcess baton(dir.path() + "/data", {"--config", config});
    auto c = baton.Client();
    id = Submit(*c, R"({"command": ["true"]})");
    ASSERT_GT(id, 0);
  }
  EXPECT_TRUE(std::filesystem::exists(db));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/data/baton.db"));
  // Outside the data directory it is still readable by its owner alone.
  EXPECT_EQ(std::filesystem::status(db).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  BatonProcess again(dir.path() + "/data", {"--config", config});
  // A second server with another data directory may not share the store.
  CliResult second = RunCli(again, {"server", "--data", dir.path() + "/other", "--listen",
                                    "127.0.0.1:0", "--config", config});
  EXPECT_EQ(second.exit_code, 1) << second.out;
  EXPECT_NE(second.out.find("another baton already uses the store " + db), std::string::npos)
      << second.out;
  auto c = again.Client();
  auto r = c->Request("GET", "/v1/jobs/" + std::to_string(id));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

}  // namespace
}  // namespace baton::testing
