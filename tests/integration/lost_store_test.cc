// A lost store is never taken for a new one: an emptied store, one that lost its write-ahead
// log after kill -9, an older backup and another cluster's store are each refused at start,
// through the real binary, with what was found and the flag that proceeds; with the flag, ids
// go on past every id the data directory saw, so no earlier job's output is shown for a new one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kUp = {"--gpus", "1xH100-80GB"};

// `baton up` as an operator types it, in `dir`; it must exit (refused) well within 30 s.
CliResult StartUp(const std::string& dir, const std::string& extra = "") {
  return RunShell("timeout 30 " + std::string(BATON_BINARY) + " up --data " + dir +
                  " --listen 127.0.0.1:0 --gpus 1xH100-80GB " + extra);
}

void RemoveStore(const std::string& dir) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dir + "/baton.db" + suffix);
}

int64_t RunToEnd(net::HttpClient& c, const std::string& command) {
  int64_t id = Submit(c, R"({"command": ")" + command + R"("})");
  EXPECT_NE(JsonString(WaitForJob(c, id), "state"), "") << "job " << id << " did not end";
  return id;
}

TEST(LostStore, AnEmptiedStoreIsRefusedAndNewStoreGoesOnPastEveryId) {
  TempDir dir;
  std::string data = dir.path() + "/data";
  {
    BatonProcess baton(data, kUp);
    auto c = baton.Client();
    for (int i = 1; i <= 3; ++i) RunToEnd(*c, "echo old-secret-" + std::to_string(i));
    EXPECT_NE(LogsUntil(*c, 3, "old-secret-3").find("old-secret-3"), std::string::npos);
    baton.Stop();
  }
  EXPECT_EQ(fs::status(data + "/store.mark").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  RemoveStore(data);
  fs::remove(data + "/server.url");  // written anew by a start that serves

  CliResult refused = StartUp(data);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("the store " + data +
                             "/baton.db is empty, but this data directory "
                             "has a past: " +
                             data + "/store.mark (store "),
            std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("the output of 3 jobs (ids up to 3)"), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("nothing was started"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("--new-store (job ids go on from 4"), std::string::npos)
      << refused.out;
  EXPECT_FALSE(fs::exists(data + "/server.url")) << "it served";
  // Refused again: the first refusal changed nothing that would let a second start pass.
  EXPECT_EQ(StartUp(data).exit_code, 1);

  {
    BatonProcess baton(data, {"--gpus", "1xH100-80GB", "--new-store"});
    auto c = baton.Client();
    int64_t id = RunToEnd(*c, "echo new-output");
    EXPECT_EQ(id, 4) << "an id the data directory had seen was handed out again";
    std::string logs = LogsUntil(*c, id, "new-output");
    EXPECT_NE(logs.find("new-output"), std::string::npos);
    EXPECT_EQ(logs.find("old-secret"), std::string::npos) << logs;
    auto old = c->Request("GET", "/v1/jobs/1/logs");
    ASSERT_TRUE(old.has_value());
    EXPECT_EQ(old->status, 404) << old->body;
    baton.Stop();
  }
  // The new store is this directory's store now: no flag needed, and --new-store is refused.
  {
    BatonProcess baton(data, kUp);
    baton.Stop();
  }
  CliResult not_new = StartUp(data, "--new-store");
  EXPECT_EQ(not_new.exit_code, 1) << not_new.out;
  EXPECT_NE(not_new.out.find("--new-store: the store " + data + "/baton.db is not new"),
            std::string::npos)
      << not_new.out;
}

TEST(LostStore, AStoreThatLostItsWriteAheadLogIsRefusedUntilRestoreStore) {
  TempDir dir;
  std::string data = dir.path() + "/data";
  {
    BatonProcess baton(data, kUp);
    auto c = baton.Client();
    for (int i = 0; i < 20; ++i) Submit(*c, R"({"command": ["true"]})");
    baton.Stop();  // a clean stop: the write-ahead log is folded into baton.db
  }
  {
    BatonProcess baton(data, kUp);
    auto c = baton.Client();
    for (int i = 0; i < 10; ++i) Submit(*c, R"({"command": ["true"]})");
    baton.Kill9();  // the last ten live in the write-ahead log alone
  }
  ASSERT_TRUE(fs::exists(data + "/baton.db-wal"));
  fs::remove(data + "/baton.db-wal");
  fs::remove(data + "/baton.db-shm");

  CliResult refused = StartUp(data);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("is behind this data directory"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("(a lost write-ahead log, or an older backup); nothing was started"),
            std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("--restore-store (job ids go on from 31"), std::string::npos)
      << refused.out;

  BatonProcess baton(data, {"--gpus", "1xH100-80GB", "--restore-store"});
  auto c = baton.Client();
  auto kept = c->Request("GET", "/v1/jobs/20");
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->status, 200) << "the store's own jobs are kept";
  EXPECT_EQ(Submit(*c, R"({"command": ["true"]})"), 31) << "ids 21-30 were handed out before";
}

TEST(LostStore, AnOlderBackupOrAnotherClustersStoreIsRefused) {
  TempDir dir;
  std::string data = dir.path() + "/data", other = dir.path() + "/other";
  {
    BatonProcess baton(data, kUp);
    auto c = baton.Client();
    for (int i = 0; i < 5; ++i) Submit(*c, R"({"command": ["true"]})");
    baton.Stop();
  }
  fs::copy_file(data + "/baton.db", dir.path() + "/backup.db");
  {
    BatonProcess baton(data, kUp);
    auto c = baton.Client();
    Submit(*c, R"({"command": ["true"]})");
    baton.Stop();
  }
  {
    BatonProcess baton(other, kUp);
    baton.Stop();
  }
  // Another cluster's store, copied over this one's.
  fs::copy_file(other + "/baton.db", data + "/baton.db", fs::copy_options::overwrite_existing);
  CliResult foreign = StartUp(data);
  EXPECT_EQ(foreign.exit_code, 1) << foreign.out;
  EXPECT_NE(foreign.out.find("is not the store this data directory kept: it is store "),
            std::string::npos)
      << foreign.out;
  // The backup from before the sixth job.
  fs::copy_file(dir.path() + "/backup.db", data + "/baton.db",
                fs::copy_options::overwrite_existing);
  CliResult older = StartUp(data);
  EXPECT_EQ(older.exit_code, 1) << older.out;
  EXPECT_NE(older.out.find("is behind this data directory"), std::string::npos) << older.out;
  CliResult needless = StartUp(other, "--restore-store");
  EXPECT_EQ(needless.exit_code, 1) << needless.out;
  EXPECT_NE(needless.out.find("is not behind this data directory: start without "
                              "--restore-store"),
            std::string::npos)
      << needless.out;

  BatonProcess baton(data, {"--gpus", "1xH100-80GB", "--restore-store"});
  auto c = baton.Client();
  EXPECT_EQ(Submit(*c, R"({"command": ["true"]})"), 7);
}

TEST(LostStore, ACorruptStoreIsAnErrorNamingTheFile) {
  TempDir dir;
  std::string data = dir.path() + "/data";
  {
    BatonProcess baton(data, kUp);
    baton.Stop();
  }
  RemoveStore(data);
  std::ofstream(data + "/baton.db") << std::string(8192, 'x');
  CliResult corrupt = StartUp(data);
  EXPECT_EQ(corrupt.exit_code, 1) << corrupt.out;
  EXPECT_NE(corrupt.out.find(data + "/baton.db"), std::string::npos) << corrupt.out;
  EXPECT_NE(corrupt.out.find("not a database"), std::string::npos) << corrupt.out;
}

}  // namespace
}  // namespace baton::testing
