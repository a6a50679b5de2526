// The server's own log: text by default, one JSON object a line with --log-format json, with
// the node and job a line is about, and only the levels --log-level lets through.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Logging, JsonLinesCarryLevelNodeAndJobAndDebugShowsJobsStartingAndEnding) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data", {"--log-format", "json", "--log-level", "debug"});
  auto c = baton.Client();
  int64_t id = Submit(*c, R"({"command": ["false"], "resources": {"gpus": 1}})");
  ASSERT_GT(id, 0);
  WaitForJob(*c, id);
  std::vector<std::string> lines;
  bool started = false, ended = false, alert = false;
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    lines = Lines(baton.data_dir() + "/baton.out");
    for (const std::string& line : lines) {
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const json::object& o = v.get_object();
      if (!o.contains("job") || o.at("job").as_int64() != id) continue;
      std::string msg(o.at("msg").as_string());
      std::string level(o.at("level").as_string());
      if (level == "debug" && msg.find("started as pid") != std::string::npos &&
          o.at("node").as_string() == "vm") {
        started = true;
      }
      if (level == "debug" && msg.find("ended: exit code 1") != std::string::npos) ended = true;
      if (level == "warning" && o.at("kind").as_string() == "job_failed") alert = true;
    }
    return started && ended && alert;
  }));
  // Every line is a JSON object with a time and a level.
  for (const std::string& line : lines) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    ASSERT_TRUE(v.is_object()) << line;
    EXPECT_TRUE(v.get_object().contains("ts")) << line;
    EXPECT_TRUE(v.get_object().contains("msg")) << line;
  }
}

TEST(Logging, TextIsTheDefaultAndWarnHidesInfo) {
  TempDir dir;
  BatonProcess quiet(dir.path() + "/quiet", {"--log-level", "warn"});
  BatonProcess plain(dir.path() + "/plain");
  auto text = [](const std::string& path) {
    std::string all;
    for (const std::string& l : Lines(path)) all += l + "\n";
    return all;
  };
  std::string p;
  EXPECT_TRUE(Within(std::chrono::seconds(10), [&] {
    p = text(plain.data_dir() + "/baton.out");
    return p.find("baton: serving https://127.0.0.1:") != std::string::npos &&
           p.find("baton: node_joined: node ") != std::string::npos;
  })) << p;
  // By now the quiet one (started first) has said all it says at start: nothing below warn.
  std::string q = text(quiet.data_dir() + "/baton.out");
  EXPECT_EQ(q.find("baton: serving"), std::string::npos) << q;
  EXPECT_EQ(q.find("node_joined"), std::string::npos) << q;
  CliResult bad = RunCli(quiet, {"server", "--log-level", "loud"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("--log-level: must be one of debug, info, warn, error (got \"loud\")"),
            std::string::npos)
      << bad.out;
}

}  // namespace
}  // namespace baton::testing
