// PosixEnv never follows a link at the end of a path (issue 37): an agent running as root works
// in directories its jobs' users own, and a user who puts a link in place of their log,
// metrics file or code directory must not make the agent read, append to, chmod or chown the
// file it points to.
#include "agent/posix_env.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace baton::agent {
namespace {

namespace fs = std::filesystem;

class PosixEnvLinks : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "baton-env-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    secret_ = dir_ + "/secret";
    std::ofstream(secret_) << "not yours\n";
    ASSERT_EQ(chmod(secret_.c_str(), 0600), 0);
    fs::create_directories(dir_ + "/elsewhere/deep");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  mode_t ModeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  std::string dir_, secret_;
  PosixEnv env_;
};

TEST_F(PosixEnvLinks, ReadsAndAppendsRefuseALinkInPlaceOfTheFile) {
  std::string log = dir_ + "/output.log";
  fs::create_symlink(secret_, log);
  auto read = env_.ReadRange(log, 0, 100);
  ASSERT_FALSE(read.has_value());
  EXPECT_NE(read.error().message().find(log), std::string::npos) << read.error().message();
  EXPECT_FALSE(env_.AppendFile(log, "baton: appended\n").ok());
  std::ifstream in(secret_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not yours\n");
  // Its size is the link's own, not the secret's.
  auto size = env_.FileSize(log);
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(*size, static_cast<int64_t>(secret_.size()));
}

TEST_F(PosixEnvLinks, ModesAndOwnersChangeNoFileALinkPointsTo) {
  std::string link = dir_ + "/checkpoints";
  fs::create_symlink(secret_, link);
  EXPECT_FALSE(env_.SetMode(link, 0777).ok());
  EXPECT_EQ(ModeOf(secret_), 0600u);
  // SetOwner changes the link itself (lchown): the target keeps its owner.
  struct stat before {};
  ASSERT_EQ(stat(secret_.c_str(), &before), 0);
  ASSERT_TRUE(env_.SetOwner(link, before.st_uid, before.st_gid).ok());

  std::string code = dir_ + "/code";
  fs::create_symlink(dir_ + "/elsewhere", code);
  Status st = env_.SetOwnerTree(code, getuid(), getgid());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not a directory"), std::string::npos) << st.message();
}

TEST_F(PosixEnvLinks, AppendedFilesAreTheirOwnersAlone) {
  ::umask(022);
  std::string log = dir_ + "/new.log";
  ASSERT_TRUE(env_.AppendFile(log, "x\n").ok());
  EXPECT_EQ(ModeOf(log), 0600u);
}

}  // namespace
}  // namespace baton::agent
