// The data directory's mark and the decision it drives: a store that is empty where the
// directory has a past, one behind it, or another cluster's is refused with what was found and
// the flag that proceeds; ids always go on past every id the directory saw.
#include "store/store_mark.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "store/memory_store.h"

namespace baton::store {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "baton-mark-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Snapshot WithJobs(int64_t next_job_id) {
  Snapshot s;
  for (int64_t id = 1; id < next_job_id; ++id) {
    Job j;
    j.id = JobId{id};
    s.jobs.push_back(j);
  }
  s.next_job_id = next_job_id;
  return s;
}

DataPast MarkedPast(StoreMark mark, int64_t highest_logged = 0) {
  return DataPast{.has_mark = true,
                  .mark = mark,
                  .logged_jobs = highest_logged,
                  .highest_logged_job = highest_logged,
                  .mark_path = "/d/store.mark",
                  .logs_dir = "/d/logs"};
}

std::string Refusal(const Result<Admission>& a) {
  EXPECT_FALSE(a.has_value());
  return a.has_value() ? "" : a.error().message();
}

TEST(StoreMark, EncodesAndDecodesAndNamesWhatIsWrong) {
  StoreMark m{.store_id = 0x7a3f00112233, .commits = 57, .next_job_id = 21};
  std::string text = EncodeStoreMark(m);
  EXPECT_NE(text.find("store 00007a3f00112233\n"), std::string::npos) << text;
  EXPECT_EQ(*DecodeStoreMark(text), m);
  EXPECT_NE(DecodeStoreMark("store 1\ncommits 2\n").error().message().find("no next_job_id"),
            std::string::npos);
  EXPECT_NE(DecodeStoreMark("store zz\ncommits 2\nnext_job_id 3\n")
                .error()
                .message()
                .find("line 1: store has a bad value \"zz\""),
            std::string::npos);
  EXPECT_NE(DecodeStoreMark("store 0\ncommits 2\nnext_job_id 3\n").error().message().find("bad"),
            std::string::npos);
  EXPECT_NE(DecodeStoreMark("colour blue\n").error().message().find("unknown key \"colour\""),
            std::string::npos);
  EXPECT_FALSE(DecodeStoreMark("").has_value());
}

TEST(StoreMark, ReadsTheMarkAndTheIdsOfTheLogsKept) {
  TempDir dir;
  DataPast none = ReadDataPast(dir.path() + "/store.mark", dir.path() + "/logs");
  EXPECT_FALSE(none.has_mark);
  EXPECT_EQ(none.logged_jobs, 0);
  fs::create_directories(dir.path() + "/logs/7");
  fs::create_directories(dir.path() + "/logs/12");
  fs::create_directories(dir.path() + "/logs/not-a-job");
  std::ofstream(dir.path() + "/store.mark") << "store 5\ncommits 9\n";  // torn
  DataPast past = ReadDataPast(dir.path() + "/store.mark", dir.path() + "/logs");
  EXPECT_TRUE(past.has_mark);
  EXPECT_FALSE(past.mark.has_value());
  EXPECT_NE(past.mark_error.find("no next_job_id"), std::string::npos) << past.mark_error;
  EXPECT_EQ(past.logged_jobs, 2);
  EXPECT_EQ(past.highest_logged_job, 12);
}

TEST(AdmitStore, ANewDirectoryGetsANewStoreWithAnIdentity) {
  auto a = AdmitStore("/d/baton.db", Identity{}, Snapshot{}, DataPast{}, StoreStart::kCheck);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_TRUE(a->give_identity);
  EXPECT_EQ(a->next_job_id, 1);
}

TEST(AdmitStore, AStoreThatContinuesItsMarkIsTaken) {
  StoreMark mark{.store_id = 42, .commits = 57, .next_job_id = 21};
  // Ahead of the mark is normal: the mark is written after each commit, without an fsync.
  auto a = AdmitStore("/d/baton.db", Identity{.id = 42, .commits = 60}, WithJobs(23),
                      MarkedPast(mark, 20), StoreStart::kCheck);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_FALSE(a->give_identity);
  EXPECT_EQ(a->next_job_id, 23);
  // An older baton's store (no identity, no mark) is taken and given one.
  auto old = AdmitStore("/d/baton.db", Identity{.id = 0, .commits = 0}, WithJobs(5),
                        DataPast{.logged_jobs = 4, .highest_logged_job = 4}, StoreStart::kCheck);
  ASSERT_TRUE(old.has_value()) << old.error().message();
  EXPECT_TRUE(old->give_identity);
}

TEST(AdmitStore, AnEmptiedStoreIsRefusedUntilNewStoreAndIdsGoOn) {
  StoreMark mark{.store_id = 42, .commits = 57, .next_job_id = 21};
  std::string why = Refusal(
      AdmitStore("/d/baton.db", Identity{}, Snapshot{}, MarkedPast(mark, 20), StoreStart::kCheck));
  EXPECT_NE(why.find("the store /d/baton.db is empty, but this data directory has a past"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("/d/store.mark (store 000000000000002a, 57 commits, job ids up to 20)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("nothing was started"), std::string::npos) << why;
  EXPECT_NE(why.find("--new-store (job ids go on from 21"), std::string::npos) << why;
  // Logs alone are a past too: the mark may be lost with the store.
  std::string logs_only = Refusal(
      AdmitStore("/d/baton.db", Identity{}, Snapshot{},
                 DataPast{.logged_jobs = 3, .highest_logged_job = 30, .logs_dir = "/d/logs"},
                 StoreStart::kCheck));
  EXPECT_NE(logs_only.find("the output of 3 jobs (ids up to 30) in /d/logs"), std::string::npos)
      << logs_only;

  auto fresh =
      AdmitStore("/d/baton.db", Identity{}, Snapshot{}, MarkedPast(mark, 30), StoreStart::kNew);
  ASSERT_TRUE(fresh.has_value()) << fresh.error().message();
  EXPECT_TRUE(fresh->give_identity);
  EXPECT_EQ(fresh->next_job_id, 31);  // past the mark's 21 and the logs' 30
}

TEST(AdmitStore, AStoreBehindItsMarkIsRefusedUntilRestoreStore) {
  StoreMark mark{.store_id = 42, .commits = 57, .next_job_id = 21};
  Identity behind{.id = 42, .commits = 40};
  std::string why = Refusal(
      AdmitStore("/d/baton.db", behind, WithJobs(16), MarkedPast(mark), StoreStart::kCheck));
  EXPECT_NE(why.find("is behind this data directory: it holds 40 commits, and /d/store.mark saw "
                     "57 (a lost write-ahead log, or an older backup); nothing was started"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("--restore-store (job ids go on from 21"), std::string::npos) << why;
  // Same commits but fewer ids than the logs show: behind too.
  std::string ids = Refusal(AdmitStore("/d/baton.db", Identity{.id = 42, .commits = 57},
                                       WithJobs(21), MarkedPast(mark, 25), StoreStart::kCheck));
  EXPECT_NE(ids.find("handed out job ids up to 20, and the directory saw ids up to 25"),
            std::string::npos)
      << ids;
  // --new-store does not take a store with jobs.
  std::string not_new =
      Refusal(AdmitStore("/d/baton.db", behind, WithJobs(16), MarkedPast(mark), StoreStart::kNew));
  EXPECT_NE(not_new.find("--new-store: the store /d/baton.db is not new"), std::string::npos)
      << not_new;

  auto restored =
      AdmitStore("/d/baton.db", behind, WithJobs(16), MarkedPast(mark), StoreStart::kRestore);
  ASSERT_TRUE(restored.has_value()) << restored.error().message();
  EXPECT_FALSE(restored->give_identity);
  EXPECT_EQ(restored->next_job_id, 21);
}

TEST(AdmitStore, AnotherStoreIsRefusedAndRestoreStoreIsOnlyForAStoreBehind) {
  StoreMark mark{.store_id = 42, .commits = 57, .next_job_id = 21};
  std::string why = Refusal(AdmitStore("/d/baton.db", Identity{.id = 43, .commits = 900},
                                       WithJobs(400), MarkedPast(mark), StoreStart::kCheck));
  EXPECT_NE(why.find("is not the store this data directory kept: it is store 000000000000002b, "
                     "and /d/store.mark names store 000000000000002a"),
            std::string::npos)
      << why;
  std::string needless = Refusal(AdmitStore("/d/baton.db", Identity{.id = 42, .commits = 57},
                                            WithJobs(21), MarkedPast(mark), StoreStart::kRestore));
  EXPECT_NE(needless.find("is not behind this data directory: start without --restore-store"),
            std::string::npos)
      << needless;
}

TEST(AdmitStore, AnUnreadableMarkStillGuardsAnEmptyStoreAndIsRewrittenOtherwise) {
  DataPast torn{.has_mark = true, .mark_error = "no next_job_id line", .mark_path = "/d/m"};
  EXPECT_NE(Refusal(AdmitStore("/d/baton.db", Identity{}, Snapshot{}, torn, StoreStart::kCheck))
                .find("/d/m (unreadable: no next_job_id line)"),
            std::string::npos);
  auto a = AdmitStore("/d/baton.db", Identity{.id = 42, .commits = 3}, WithJobs(3), torn,
                      StoreStart::kCheck);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_NE(a->warning.find("could not be read"), std::string::npos);
}

TEST(StoreMarker, WritesTheStoresCommitsAndTheHighestIdPrivately) {
  TempDir dir;
  MemoryStore store;
  ASSERT_TRUE(store.SetIdentity(7).ok());
  StoreMarker marker(dir.path() + "/store.mark", store, 5);
  ASSERT_TRUE(marker.Write().ok());
  EXPECT_EQ(fs::status(dir.path() + "/store.mark").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  Batch b{.next_job_id = 9};
  ASSERT_TRUE(store.Commit(b).ok());
  marker.Committed(b);
  std::ifstream in(dir.path() + "/store.mark");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(*DecodeStoreMark(text), (StoreMark{.store_id = 7, .commits = 1, .next_job_id = 9}));
}

}  // namespace
}  // namespace baton::store
