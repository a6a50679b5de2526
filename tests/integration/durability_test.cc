// Nothing acknowledged is ever lost: kill -9 of the server right after 300 acknowledged
// submits from concurrent clients, restart, and every one of them is there; no id is ever
// handed out twice.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

TEST(Durability, KillNineAfterThreeHundredAcknowledgedSubmits) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  constexpr int kClients = 6, kPerClient = 50;
  std::mutex mu;
  std::map<int64_t, std::string> acked;  // id -> name
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto c = baton.Client();
      for (int i = 0; i < kPerClient; ++i) {
        std::string name = "c" + std::to_string(t) + "-" + std::to_string(i);
        auto r = c->Request("POST", "/v1/jobs",
                            R"({"name": ")" + name +
                                R"(", "command": ["sleep", "600"], "resources": {"gpus": 1}})");
        if (r && r->status == 201) {
          std::lock_guard<std::mutex> lock(mu);
          acked[std::stoll(JsonField(r->body, "id"))] = name;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  baton.Kill9();  // at once: the last acknowledgements are milliseconds old
  ASSERT_EQ(acked.size(), static_cast<size_t>(kClients * kPerClient));

  baton.Start();
  auto c = baton.Client();
  for (const auto& [id, name] : acked) {
    auto r = c->Request("GET", "/v1/jobs/" + std::to_string(id));
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 200) << "acknowledged job " << id << " was lost: " << r->body;
    EXPECT_EQ(JsonString(r->body, "name"), name);
  }
  // Paging through the whole list finds exactly these jobs.
  std::set<int64_t> listed;
  std::string after = "0";
  for (int page = 0; page < 100; ++page) {
    auto r = c->Request("GET", "/v1/jobs?limit=50&after=" + after);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->status, 200) << r->body;
    auto value = JsonField(r->body, "jobs");
    size_t pos = 0;
    while ((pos = value.find("\"id\":", pos)) != std::string::npos) {
      pos += 5;
      listed.insert(std::stoll(value.substr(pos)));
    }
    after = JsonField(r->body, "next");
    if (after == "null" || after.empty()) break;
  }
  EXPECT_EQ(listed.size(), acked.size());
  // New ids continue after every id handed out before the crash.
  auto r = c->Request("POST", "/v1/jobs", R"({"command": ["true"]})");
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status, 201);
  EXPECT_GT(std::stoll(JsonField(r->body, "id")), acked.rbegin()->first);
  EXPECT_EQ(acked.begin()->first, 1);
  EXPECT_EQ(acked.rbegin()->first, kClients * kPerClient);  // no gaps, no reuse
}

TEST(Durability, RunningJobsSurviveAControllerRestart) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  auto r = c->Request("POST", "/v1/jobs",
                      R"({"command": "sleep 1.5; echo survived", "resources": {"gpus": 1}})");
  ASSERT_TRUE(r && r->status == 201);
  int64_t id = std::stoll(JsonField(r->body, "id"));
  for (int i = 0; i < 200; ++i) {
    auto j = c->Request("GET", "/v1/jobs/" + std::to_string(id));
    if (j && JsonString(j->body, "state") == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  baton.Kill9();
  baton.Start();
  c = baton.Client();
  std::string job = WaitForJob(*c, id, 30000);
  EXPECT_EQ(JsonString(job, "state"), "succeeded") << job;
  EXPECT_EQ(JsonField(job, "restarts"), "0") << job;  // re-adopted, not rerun
}

TEST(Durability, IdempotencyKeySurvivesRestart) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  net::Headers key = {{"Idempotency-Key", "retry-me-1"}};
  auto first = c->Request("POST", "/v1/jobs", R"({"command": ["true"]})", key);
  ASSERT_TRUE(first && first->status == 201);
  auto again = c->Request("POST", "/v1/jobs", R"({"command": ["true"]})", key);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(JsonField(again->body, "id"), JsonField(first->body, "id"));
  baton.Kill9();
  baton.Start();
  c = baton.Client();
  auto after = c->Request("POST", "/v1/jobs", R"({"command": ["true"]})", key);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(JsonField(after->body, "id"), JsonField(first->body, "id"));
}

// Issue 38: events were gone after a restart. They are kept in the store (the newest 10,000):
// a restarted controller (kill -9) still shows them, and numbers new ones after them.
TEST(Durability, EventsSurviveARestartAndNumberingGoesOn) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string failed = FirstLine(RunCli(baton, {"submit", "--name", "broken", "--", "false"}).out);
  ASSERT_FALSE(failed.empty());
  EXPECT_EQ(RunCli(baton, {"wait", failed}).exit_code, 1);
  std::string said = "job " + failed + " (broken) of root failed: exited with code 1";
  std::string before = RunCli(baton, {"events", "--json"}).out;
  ASSERT_NE(before.find(said), std::string::npos) << before;
  baton.Kill9();
  baton.Start();
  std::string after = RunCli(baton, {"events", "--json"}).out;
  EXPECT_NE(after.find(said), std::string::npos) << after;
  // A new event is numbered after the kept ones, so that a follower resumes where it was.
  std::string again = FirstLine(RunCli(baton, {"submit", "--name", "again", "--", "false"}).out);
  EXPECT_EQ(RunCli(baton, {"wait", again}).exit_code, 1);
  auto seq_of = [](const std::string& events, const std::string& text) -> int64_t {
    size_t at = events.find(text);
    if (at == std::string::npos) return -1;
    size_t seq = events.rfind("\"seq\":", at);
    return seq == std::string::npos ? -1 : std::stoll(events.substr(seq + 6));
  };
  std::string now = RunCli(baton, {"events", "--json"}).out;
  int64_t old_seq = seq_of(now, said);
  int64_t new_seq = seq_of(now, "job " + again + " (again) of root failed");
  ASSERT_GT(old_seq, 0) << now;
  EXPECT_GT(new_seq, old_seq) << now;
}

}  // namespace
}  // namespace baton::testing
