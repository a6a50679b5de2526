// What each node's credential reaches: the jobs placed on it until they end (every node an
// attempt ran on, across requeues), and only their code snapshots.
#include "api/placement_book.h"

#include <gtest/gtest.h>

namespace baton::api {
namespace {

Job Placed(int64_t id, JobState state, std::vector<std::string> nodes, std::string code = "") {
  Job j;
  j.id = JobId{id};
  j.state = state;
  j.spec.code = std::move(code);
  for (std::string& n : nodes) j.allocation.push_back(NodeAllocation{.node = std::move(n)});
  return j;
}

TEST(PlacementBook, ANodeReachesTheJobsPlacedOnItUntilTheyEnd) {
  PlacementBook book;
  book.Apply({Placed(1, JobState::kPending, {}), Placed(2, JobState::kRunning, {"n1", "n2"})});
  EXPECT_FALSE(book.Placed(JobId{1}, "n1"));  // queued: placed nowhere
  EXPECT_TRUE(book.Placed(JobId{2}, "n1"));
  EXPECT_TRUE(book.Placed(JobId{2}, "n2"));
  EXPECT_FALSE(book.Placed(JobId{2}, "n3"));
  EXPECT_FALSE(book.Placed(JobId{999}, "n1"));  // no such job
  EXPECT_EQ(book.size(), 1u);

  // Requeued from n1 and started on n3: n1 may still send the first attempt's last output.
  book.Apply({Placed(2, JobState::kPending, {})});
  book.Apply({Placed(2, JobState::kRunning, {"n3"})});
  EXPECT_TRUE(book.Placed(JobId{2}, "n1"));
  EXPECT_TRUE(book.Placed(JobId{2}, "n3"));

  book.Apply({Placed(2, JobState::kSucceeded, {"n3"})});
  EXPECT_FALSE(book.Placed(JobId{2}, "n3"));
  EXPECT_EQ(book.size(), 0u);
}

TEST(PlacementBook, ANodeFetchesOnlyTheCodeOfItsJobs) {
  std::string a(64, 'a'), b(64, 'b');
  PlacementBook book;
  book.Apply({Placed(1, JobState::kRunning, {"n1"}, a), Placed(2, JobState::kRunning, {"n2"}, a),
              Placed(3, JobState::kPending, {}, b)});
  EXPECT_TRUE(book.HasCode(a, "n1"));
  EXPECT_TRUE(book.HasCode(a, "n2"));
  EXPECT_FALSE(book.HasCode(b, "n1"));  // its job is not placed yet
  book.Apply({Placed(1, JobState::kCancelled, {"n1"}, a)});
  EXPECT_FALSE(book.HasCode(a, "n1"));
  EXPECT_TRUE(book.HasCode(a, "n2"));  // job 2 still runs it there
  book.Apply({Placed(3, JobState::kRunning, {"n1"}, b)});
  EXPECT_TRUE(book.HasCode(b, "n1"));
  book.Apply({Placed(2, JobState::kFailed, {"n2"}, a), Placed(3, JobState::kSucceeded, {"n1"}, b)});
  EXPECT_FALSE(book.HasCode(a, "n2"));
  EXPECT_FALSE(book.HasCode(b, "n1"));
}

}  // namespace
}  // namespace baton::api
