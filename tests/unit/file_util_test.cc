// The one atomic file write (core/file_util.h), on a real disk.
#include "core/file_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace baton {
namespace {

namespace fs = std::filesystem;

TEST(WriteFileAtomic, ReplacesTheFileWholeWithItsMode) {
  std::string tmpl = (fs::temp_directory_path() / "baton-write-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  std::string path = dir + "/server.url";
  std::ofstream(path) << "old contents, longer than the new\n";
  ASSERT_TRUE(WriteFileAtomic(path, "http://127.0.0.1:1\n", {.mode = 0600}).ok());
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  EXPECT_EQ(ss.str(), "http://127.0.0.1:1\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  fs::remove_all(dir);
}

TEST(WriteFileAtomic, AFailureNamesThePath) {
  Status st = WriteFileAtomic("/nonexistent-dir/run/1.0.run", "x", {.sync = false});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent-dir/run/1.0.run"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace baton
