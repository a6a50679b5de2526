// The Store contract, one suite run against every implementation: what a Commit made durable
// comes back from Load, whole, and for a store on disk across closing and reopening it.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "../support/pg_server.h"
#include "store/memory_store.h"
#include "store/postgres_lease.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"

namespace baton::store {
namespace {

namespace fs = std::filesystem;

Job MakeJob(int64_t id, JobState state) {
  Job j;
  j.id = JobId{id};
  j.spec.name = "job" + std::to_string(id);
  j.spec.command = {"echo", "it's \"quoted\"\n", "ünïcode"};
  j.spec.resources.milli_gpus = 2000;
  j.user = "ada";
  j.state = state;
  j.submitted_at = FromMillis(1'790'000'000'000 + id);
  return j;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "baton-store-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void ExerciseStore(Store& s) {
  Snapshot empty = *s.Load();
  EXPECT_TRUE(empty.jobs.empty());
  EXPECT_EQ(empty.next_job_id, 1);

  Batch b;
  b.jobs = {MakeJob(1, JobState::kPending), MakeJob(2, JobState::kRunning)};
  b.next_job_id = 3;
  b.idempotency = {IdempotencyEntry{"ada", "key-1", JobId{1}, 2}};
  ASSERT_TRUE(s.Commit(b).ok());
  Batch update;
  update.jobs = {MakeJob(2, JobState::kSucceeded)};
  ASSERT_TRUE(s.Commit(update).ok());
  ASSERT_TRUE(s.Commit(Batch{}).ok());
}

void ExpectExercised(const Snapshot& snap) {
  ASSERT_EQ(snap.jobs.size(), 2u);
  EXPECT_EQ(snap.jobs[0], MakeJob(1, JobState::kPending));
  EXPECT_EQ(snap.jobs[1], MakeJob(2, JobState::kSucceeded));
  EXPECT_EQ(snap.next_job_id, 3);
  ASSERT_EQ(snap.idempotency.size(), 1u);
  EXPECT_EQ(snap.idempotency[0], (IdempotencyEntry{"ada", "key-1", JobId{1}, 2}));
}

// One conformance suite for every Store: each test runs against each kind. A kind that keeps
// nothing on disk "reopens" as the same instance; a durable one is closed and opened again, so
// that what the test reads back after Reopen() is what the disk kept.
struct StoreKind {
  std::string name;
  bool durable = false;
  std::function<Result<std::unique_ptr<Store>>(const std::string& path)> open;
};

class StoreConformance : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override { Open(); }
  Store& store() { return *store_; }
  void Reopen() {
    if (!GetParam().durable) return;
    store_.reset();
    Open();
  }

 private:
  void Open() {
    auto s = GetParam().open(dir_.path() + "/baton.db");
    ASSERT_TRUE(s.has_value()) << s.error().message();
    store_ = std::move(*s);
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreConformance, KeepsWhatWasCommittedWhole) {
  ExerciseStore(store());
  ExpectExercised(*store().Load());
  Reopen();
  ExpectExercised(*store().Load());
}

TEST_P(StoreConformance, DrainsAreKeptAndAnUndrainRemovesThem) {
  Batch b;
  b.drains.push_back(Drain{.node = "n1", .gpu = -1, .reason = "rack maintenance"});
  b.drains.push_back(Drain{.node = "n2", .gpu = 3, .reason = "ECC errors"});
  b.drains.push_back(Drain{.node = "n2", .gpu = 5, .reason = "fan"});
  ASSERT_TRUE(store().Commit(b).ok());
  Batch undo;
  undo.drains.push_back(Drain{.node = "n2", .gpu = 5, .active = false});
  ASSERT_TRUE(store().Commit(undo).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.drains.size(), 2u);
  EXPECT_EQ(snap.drains[0], (Drain{.node = "n1", .gpu = -1, .reason = "rack maintenance"}));
  EXPECT_EQ(snap.drains[1], (Drain{.node = "n2", .gpu = 3, .reason = "ECC errors"}));
}

TEST_P(StoreConformance, TokensAreKeptAndARevocationToo) {
  Token alice{.id = 1,
              .hash = std::string(64, 'a'),
              .user = "alice",
              .role = Role::kUser,
              .name = "laptop",
              .created_at = FromMillis(1'790'000'000'000)};
  Token ci{.id = 2,
           .hash = std::string(64, 'b'),
           .user = "ci",
           .role = Role::kAdmin,
           .created_at = FromMillis(1'790'000'001'000)};
  Batch b;
  b.tokens = {alice, ci};
  ASSERT_TRUE(store().Commit(b).ok());
  Batch revoke;
  ci.revoked = true;
  revoke.tokens = {ci};
  ASSERT_TRUE(store().Commit(revoke).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.tokens.size(), 2u);
  EXPECT_EQ(snap.tokens[0], alice);
  EXPECT_EQ(snap.tokens[1], ci);
}

TEST_P(StoreConformance, ManyJobsInOneBatch) {
  Batch b;
  for (int i = 1; i <= 5000; ++i) b.jobs.push_back(MakeJob(i, JobState::kPending));
  b.next_job_id = 5001;
  ASSERT_TRUE(store().Commit(b).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.jobs.size(), 5000u);
  EXPECT_EQ(snap.jobs.back().id, JobId{5000});
  EXPECT_EQ(snap.next_job_id, 5001);
}

TEST_P(StoreConformance, ALaterCommitOfAJobReplacesItsRecord) {
  Batch b;
  b.jobs = {MakeJob(1, JobState::kPending)};
  ASSERT_TRUE(store().Commit(b).ok());
  for (JobState s : {JobState::kRunning, JobState::kFailed}) {
    Batch next;
    next.jobs = {MakeJob(1, s)};
    ASSERT_TRUE(store().Commit(next).ok());
  }
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.jobs.size(), 1u);
  EXPECT_EQ(snap.jobs[0], MakeJob(1, JobState::kFailed));
}

TEST_P(StoreConformance, AJobTwiceInOneBatchIsKeptAsLastWritten) {
  Batch b;
  b.jobs = {MakeJob(1, JobState::kPending), MakeJob(1, JobState::kRunning)};
  b.idempotency = {IdempotencyEntry{"ada", "k", JobId{1}, 1},
                   IdempotencyEntry{"ada", "k", JobId{1}, 1}};
  ASSERT_TRUE(store().Commit(b).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.jobs.size(), 1u);
  EXPECT_EQ(snap.jobs[0], MakeJob(1, JobState::kRunning));
  EXPECT_EQ(snap.idempotency.size(), 1u);
}

TEST_P(StoreConformance, IdempotencyKeysOfManySubmitsInOneBatch) {
  Batch b;
  for (int i = 1; i <= 3000; ++i) {
    b.jobs.push_back(MakeJob(i, JobState::kPending));
    b.idempotency.push_back(
        IdempotencyEntry{"ada", "key \"" + std::to_string(i) + "\\", JobId{i}, 1});
  }
  ASSERT_TRUE(store().Commit(b).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.idempotency.size(), 3000u);
  std::set<std::string> keys;
  for (const auto& e : snap.idempotency) keys.insert(e.key);
  EXPECT_TRUE(keys.contains("key \"17\\"));
}

// The PostgreSQL kind: one server for this process (tests/support/pg_server.h), a database per
// test, named after the test's temporary directory; "reopening" connects again.
testing::PgServer& SharedPgServer() {
  static testing::PgServer server(BATON_SOURCE_DIR);
  return server;
}

Result<std::unique_ptr<Store>> OpenPostgres(const std::string& path) {
  testing::PgServer& pg = SharedPgServer();
  if (!pg.ok()) return Err(Unavailable("the test's PostgreSQL did not start: " + pg.error()));
  static std::map<std::string, std::string> urls;  // path -> its database's URL
  auto it = urls.find(path);
  if (it == urls.end()) {
    std::string name = "t_" + fs::path(path).parent_path().filename().string();
    for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_';
    it = urls.emplace(path, pg.NewDatabase(name)).first;
  }
  ASSIGN_OR_RETURN(auto s, PostgresStore::Open(it->second));
  return std::unique_ptr<Store>(std::move(s));
}

// Each store knows its id (given once) and how many batches it committed over its life, across
// closing and reopening: what store/store_mark.h compares with the data directory's mark.
TEST_P(StoreConformance, KnowsItsIdentityAndCountsItsCommits) {
  ASSERT_TRUE(store().Load().has_value());
  EXPECT_EQ(dynamic_cast<Identified&>(store()).identity(), (Identity{.id = 0, .commits = 0}));
  ExerciseStore(store());  // two batches, and an empty one that writes nothing
  EXPECT_EQ(dynamic_cast<Identified&>(store()).identity().commits, 2);
  ASSERT_TRUE(dynamic_cast<Identified&>(store()).SetIdentity(0x1234abcd5678).ok());
  Reopen();
  ASSERT_TRUE(store().Load().has_value());
  auto& reopened = dynamic_cast<Identified&>(store());
  EXPECT_EQ(reopened.identity(), (Identity{.id = 0x1234abcd5678, .commits = 2}));
  ASSERT_TRUE(store().Commit(Batch{.next_job_id = 9}).ok());
  EXPECT_EQ(reopened.identity().commits, 3);
  Reopen();
  ASSERT_TRUE(store().Load().has_value());
  EXPECT_EQ(dynamic_cast<Identified&>(store()).identity(),
            (Identity{.id = 0x1234abcd5678, .commits = 3}));
}

// Cluster events (issue 38: they were gone after a restart): kept across a reopen, the newest
// kKeptEvents of them, in order.
TEST_P(StoreConformance, EventsAreKeptTheNewestOnes) {
  auto event = [](int64_t seq) {
    return ClusterEvent{.seq = seq,
                        .at = FromMillis(1'790'000'000'000 + seq),
                        .kind = EventKind::kJobFailed,
                        .severity = Severity::kAlert,
                        .job = seq,
                        .message = "job " + std::to_string(seq) + " failed"};
  };
  Batch first;
  for (int64_t seq = 1; seq <= 3; ++seq) first.events.push_back(event(seq));
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(store().Commit(first).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.events.size(), 3u);
  EXPECT_EQ(snap.events[0].seq, 1);
  EXPECT_EQ(snap.events[2].message, "job 3 failed");
  EXPECT_EQ(snap.events[2].at, FromMillis(1'790'000'000'003));
  EXPECT_EQ(snap.events[2].job, 3);
  // Past the bound, in batches as a controller commits them: the oldest go.
  const int64_t last = static_cast<int64_t>(kKeptEvents) + 7;
  for (int64_t seq = 4; seq <= last;) {
    Batch b;
    for (int i = 0; i < 2500 && seq <= last; ++i) b.events.push_back(event(seq++));
    ASSERT_TRUE(store().Commit(b).ok());
  }
  Reopen();
  snap = *store().Load();
  ASSERT_EQ(snap.events.size(), kKeptEvents);
  EXPECT_EQ(snap.events.front().seq, last - static_cast<int64_t>(kKeptEvents) + 1);
  EXPECT_EQ(snap.events.back().seq, last);
}

// Autoscaled nodes' charges (issue 40): kept across a reopen, an open one replaced whole when
// it closes, so that a restart loses no node-second.
TEST_P(StoreConformance, NodeChargesAreKeptAndAClosedOneReplacesItsOpenRecord) {
  NodeCharge boot{.id = 1,
                  .node = "h100-1",
                  .template_name = "h100",
                  .use = "boot",
                  .project = "vision",
                  .user = "ada",
                  .spot = true,
                  .price_micros = 31'500'000,
                  .on_demand_micros = 98'300'000,
                  .start = FromMillis(1'790'000'000'000)};
  NodeCharge idle = boot;
  idle.id = 2;
  idle.use = "idle";
  idle.start = FromMillis(1'790'000'090'000);
  ASSERT_TRUE(store().Commit(Batch{.node_charges = {boot, idle}}).ok());
  Reopen();
  Snapshot snap = *store().Load();
  ASSERT_EQ(snap.node_charges.size(), 2u);
  EXPECT_EQ(snap.node_charges[0], boot);
  EXPECT_EQ(snap.node_charges[1], idle);
  EXPECT_FALSE(snap.node_charges[1].end.has_value());
  idle.end = FromMillis(1'790'000'700'000);
  ASSERT_TRUE(store().Commit(Batch{.node_charges = {idle}}).ok());
  Reopen();
  snap = *store().Load();
  ASSERT_EQ(snap.node_charges.size(), 2u);
  EXPECT_EQ(snap.node_charges[1], idle);

  // A compaction (NodeLedger::Compact): one stretch replaced, the other removed, at once.
  NodeCharge folded = boot;
  folded.end = FromMillis(1'790'000'700'000);
  ASSERT_TRUE(
      store().Commit(Batch{.node_charges = {folded}, .node_charges_removed = {idle.id}}).ok());
  Reopen();
  snap = *store().Load();
  ASSERT_EQ(snap.node_charges.size(), 1u);
  EXPECT_EQ(snap.node_charges[0], folded);
}

INSTANTIATE_TEST_SUITE_P(
    EveryStore, StoreConformance,
    ::testing::Values(StoreKind{.name = "Memory",
                                .open = [](const std::string&) -> Result<std::unique_ptr<Store>> {
                                  return std::make_unique<MemoryStore>();
                                }},
                      StoreKind{
                          .name = "Sqlite",
                          .durable = true,
                          .open = [](const std::string& path) -> Result<std::unique_ptr<Store>> {
                            ASSIGN_OR_RETURN(auto s, SqliteStore::Open(path));
                            return std::unique_ptr<Store>(std::move(s));
                          }},
                      StoreKind{.name = "Postgres", .durable = true, .open = OpenPostgres}),
    [](const ::testing::TestParamInfo<StoreKind>& info) { return info.param.name; });

// What only a memory store does: fail commits on demand, for the controller's tests.
TEST(MemoryStore, AFailedCommitChangesNothing) {
  MemoryStore s;
  ExerciseStore(s);
  s.FailCommits(true);
  Batch b;
  b.jobs = {MakeJob(9, JobState::kPending)};
  b.next_job_id = 10;
  EXPECT_FALSE(s.Commit(b).ok());
  ExpectExercised(*s.Load());
}

// What only a store on disk meets: a file that is not its database, or a newer one.
TEST(SqliteStore, ACorruptFileIsAClearError) {
  TempDir dir;
  std::string db = dir.path() + "/baton.db";
  FILE* f = fopen(db.c_str(), "w");
  fputs("this is not a database, it is a text file that is long enough to be noticed ......", f);
  fclose(f);
  auto s = SqliteStore::Open(db);
  // Found at open or at the first read: either way the error names the file.
  Status error = Status::Ok();
  if (!s.has_value()) {
    error = s.error();
  } else if (auto snap = (*s)->Load(); !snap.has_value()) {
    error = snap.error();
  }
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.message().find(db), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("not a database"), std::string::npos) << error.message();
}

TEST(SqliteStore, ADatabaseFromANewerBatonIsRefused) {
  TempDir dir;
  std::string db = dir.path() + "/baton.db";
  { ASSERT_TRUE(SqliteStore::Open(db).has_value()); }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version=999", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  auto s = SqliteStore::Open(db);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("newer"), std::string::npos) << s.error().message();
}

// Two jobs as a Baton before `preemptible` was a choice wrote them: job 1's record says false
// (every record did, where nothing was chosen), job 2's true.
Batch RecordsOfBeforePreemptibleWasAChoice() {
  Batch b;
  b.jobs = {MakeJob(1, JobState::kPending), MakeJob(2, JobState::kRunning)};
  b.jobs[1].spec.preemptible = true;
  return b;
}

void ExpectPreemptibleAsChosen(const Snapshot& snap) {
  ASSERT_EQ(snap.jobs.size(), 2u);
  EXPECT_EQ(snap.jobs[0].spec.preemptible, std::nullopt);  // a batch job: preemptible
  EXPECT_TRUE(Preemptible(snap.jobs[0].spec));
  EXPECT_EQ(snap.jobs[1].spec.preemptible, std::optional<bool>(true));
}

TEST(SqliteStore, ARecordOfBeforePreemptibleWasAChoiceReadsAsNotChosen) {
  TempDir dir;
  std::string db = dir.path() + "/baton.db";
  {
    auto s = SqliteStore::Open(db);
    ASSERT_TRUE(s.has_value()) << s.error().message();
    ASSERT_TRUE((*s)->Commit(RecordsOfBeforePreemptibleWasAChoice()).ok());
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    const char* old =
        "UPDATE jobs SET record = json_set(record, '$.preemptible', json('false')) "
        "WHERE id = 1; DROP TABLE node_charges; PRAGMA user_version=4";
    ASSERT_EQ(sqlite3_exec(raw, old, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  auto s = SqliteStore::Open(db);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  auto snap = (*s)->Load();
  ASSERT_TRUE(snap.has_value()) << snap.error().message();
  ExpectPreemptibleAsChosen(*snap);
}

// What only PostgreSQL meets: a bad address, a newer schema, a deposed leader's commit.
TEST(PostgresStore, AServerThatDoesNotAnswerIsAClearErrorWithoutThePassword) {
  auto s = PostgresStore::Open("postgres://baton:s3cret@127.0.0.1:1/baton?connect_timeout=2");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), Code::kUnavailable);
  EXPECT_NE(s.error().message().find("postgres://baton:***@127.0.0.1:1/baton"), std::string::npos)
      << s.error().message();
  EXPECT_EQ(s.error().message().find("s3cret"), std::string::npos) << s.error().message();
}

TEST(PostgresStore, RedactsEveryFormOfPassword) {
  EXPECT_EQ(RedactPostgresUrl("postgresql://u:p@ss@h:5432/db"), "postgresql://u:***@h:5432/db");
  EXPECT_EQ(RedactPostgresUrl("postgres://u@h/db"), "postgres://u@h/db");
  EXPECT_EQ(RedactPostgresUrl("host=h password=x dbname=d"), "host=h password=*** dbname=d");
  EXPECT_TRUE(IsPostgresUrl("postgresql://h/db"));
  EXPECT_FALSE(IsPostgresUrl("/var/lib/baton/baton.db"));
}

TEST(PostgresStore, ADatabaseFromANewerBatonIsRefused) {
  testing::PgServer& pg = SharedPgServer();
  ASSERT_TRUE(pg.ok()) << pg.error();
  std::string url = pg.NewDatabase("newer");
  { ASSERT_TRUE(PostgresStore::Open(url).has_value()); }
  ASSERT_TRUE(pg.Psql("UPDATE baton_schema SET version = 999", "newer"));
  auto s = PostgresStore::Open(url);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("newer than this baton"), std::string::npos)
      << s.error().message();
}

TEST(PostgresStore, ARecordOfBeforePreemptibleWasAChoiceReadsAsNotChosen) {
  testing::PgServer& pg = SharedPgServer();
  ASSERT_TRUE(pg.ok()) << pg.error();
  std::string url = pg.NewDatabase("preemptible");
  {
    auto s = PostgresStore::Open(url);
    ASSERT_TRUE(s.has_value()) << s.error().message();
    ASSERT_TRUE((*s)->Commit(RecordsOfBeforePreemptibleWasAChoice()).ok());
  }
  ASSERT_TRUE(
      pg.Psql("UPDATE jobs SET record = jsonb_set(record::jsonb, '{preemptible}', "
              "'false')::text WHERE id = 1; "
              "DROP TABLE node_charges; UPDATE baton_schema SET version = 3",
              "preemptible"));
  auto s = PostgresStore::Open(url);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  auto snap = (*s)->Load();
  ASSERT_TRUE(snap.has_value()) << snap.error().message();
  ExpectPreemptibleAsChosen(*snap);
}

TEST(PostgresStore, ACommitFencedByAnOldEpochWritesNothing) {
  testing::PgServer& pg = SharedPgServer();
  ASSERT_TRUE(pg.ok()) << pg.error();
  std::string url = pg.NewDatabase("fenced");
  auto s = PostgresStore::Open(url);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_TRUE(pg.Psql("UPDATE leader SET epoch = 7", "fenced"));
  (*s)->FenceWithEpoch(7);
  Batch b;
  b.jobs = {MakeJob(1, JobState::kPending)};
  ASSERT_TRUE((*s)->Commit(b).ok());
  ASSERT_TRUE(pg.Psql("UPDATE leader SET epoch = 8", "fenced"));  // another controller took over
  b.jobs = {MakeJob(2, JobState::kPending)};
  Status st = (*s)->Commit(b);
  EXPECT_EQ(st.code(), Code::kConflict) << st.message();
  EXPECT_NE(st.message().find("epoch 7 no longer leads"), std::string::npos) << st.message();
  auto snap = (*s)->Load();
  ASSERT_TRUE(snap.has_value()) << snap.error().message();
  ASSERT_EQ(snap->jobs.size(), 1u);
  EXPECT_EQ(snap->jobs[0].id, JobId{1});
}

// Asks `try_once` until it returns a value holding one, for up to 5 s (PostgreSQL notices a
// closed connection within milliseconds); the last answer.
template <typename F>
auto Within5s(F try_once) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto r = try_once();
  while (!(r.has_value() && r->has_value()) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r = try_once();
  }
  return r;
}

// The lease: one holder at a time, judged by PostgreSQL's clock; each taking raises the epoch.
TEST(PostgresLease, OneLeaderAtATimeAndEachTakeoverRaisesTheEpoch) {
  testing::PgServer& pg = SharedPgServer();
  ASSERT_TRUE(pg.ok()) << pg.error();
  std::string url = pg.NewDatabase("lease");
  ASSERT_TRUE(PostgresStore::Open(url).has_value());  // migrates
  auto a = PostgresLease::Open(url, "a");
  auto b = PostgresLease::Open(url, "b");
  ASSERT_TRUE(a.has_value() && b.has_value());
  const Duration ttl = std::chrono::milliseconds(300);
  auto first = (*a)->TryAcquire("a", "http://a:8470", ttl);
  ASSERT_TRUE(first.has_value() && first->has_value()) << first.error().message();
  EXPECT_EQ(**first, 1);
  auto refused = (*b)->TryAcquire("b", "http://b:8470", ttl);
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->has_value()) << "b took a lease that a holds";
  auto current = (*b)->Current();
  ASSERT_TRUE(current.has_value());
  EXPECT_EQ(current->holder, "a");
  EXPECT_EQ(current->url, "http://a:8470");
  EXPECT_TRUE(current->live);
  // a renews while it lives; once it stops renewing, b takes over with a higher epoch.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE((*a)->Renew(1, ttl).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE((*b)->TryAcquire("b", "http://b:8470", ttl)->has_value()) << "a renewed";
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto second = (*b)->TryAcquire("b", "http://b:8470", ttl);
  ASSERT_TRUE(second.has_value() && second->has_value());
  EXPECT_EQ(**second, 2);
  Status late = (*a)->Renew(1, ttl);
  EXPECT_EQ(late.code(), Code::kConflict) << late.message();
  // A clean stop hands over at once.
  ASSERT_TRUE((*b)->Release(2).ok());
  auto third = (*a)->TryAcquire("a", "http://a:8470", std::chrono::seconds(30));
  ASSERT_TRUE(third.has_value() && third->has_value());
  EXPECT_EQ(**third, 3);
  // So does a holder whose process ended (its connection closed), long before its lease
  // would expire.
  EXPECT_FALSE((*b)->TryAcquire("b", "http://b:8470", ttl)->has_value());
  a->reset();
  auto fourth = Within5s([&] { return (*b)->TryAcquire("b", "http://b:8470", ttl); });
  ASSERT_TRUE(fourth.has_value() && fourth->has_value()) << "b waited for a's lease to expire";
  EXPECT_EQ(**fourth, 4);
}

}  // namespace
}  // namespace baton::store
