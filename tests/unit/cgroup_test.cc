// Job cgroups (issue #5) against fake roots: temporary directories of plain files standing in
// for cgroupfs. The test writes the files the kernel would offer (cgroup.controllers); the
// manager's writes create the rest, so what it wrote can be read back.
#include "agent/cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace baton::agent {
namespace {

namespace fs = std::filesystem;

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "baton-cgroup-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    root_ = dir_ + "/jobs";
  }
  void TearDown() override {
    chmod(dir_.c_str(), 0700);
    fs::remove_all(dir_);
  }

  // Makes the root a fake group whose parent passes these controllers down.
  void FakeRoot(const std::string& controllers) {
    fs::create_directories(root_);
    Write(root_ + "/cgroup.controllers", controllers + "\n");
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static std::string Joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += line + "\n";
    return out;
  }

  std::string dir_;
  std::string root_;
};

TEST_F(CgroupTest, AJobGroupGetsEveryLimitItAsksFor) {
  FakeRoot("cpuset cpu io memory hugetlb pids");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  ASSERT_TRUE(cgroups.usable()) << Joined(cgroups.warnings());
  EXPECT_TRUE(cgroups.warnings().empty()) << Joined(cgroups.warnings());
  for (const char* c : {"memory", "cpu", "cpuset", "pids"}) EXPECT_TRUE(cgroups.Has(c)) << c;

  auto path = cgroups.Create("job-7", {.memory_bytes = int64_t{1} << 30,
                                       .cpu_millis = 2000,
                                       .cpus = "0-3,8",
                                       .mems = "0",
                                       .pids = 512});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_EQ(*path, root_ + "/job-7");
  EXPECT_EQ(*path, cgroups.GroupPath("job-7"));
  EXPECT_EQ(Read(*path + "/memory.max"), "1073741824");
  EXPECT_EQ(Read(*path + "/cpu.max"), "200000 100000");
  EXPECT_EQ(Read(*path + "/cpuset.cpus"), "0-3,8");
  EXPECT_EQ(Read(*path + "/cpuset.mems"), "0");
  EXPECT_EQ(Read(*path + "/pids.max"), "512");
  EXPECT_NE(cgroups.describe().find("limiting memory cpu cpuset pids"), std::string::npos)
      << cgroups.describe();
}

// cgroup v2's dmem controller (Linux 6.14): enabled where offered, its regions read from the
// cgroup2 root's dmem.capacity, a limit written as "REGION BYTES"; where the kernel has none,
// no warning (most do not) and no file.
TEST_F(CgroupTest, DeviceMemoryIsLimitedWhereTheKernelHasDmemAndSilentlyNotWhereNot) {
  FakeRoot("memory pids dmem");
  Write(dir_ + "/dmem.capacity",
        "drm/0000:18:00.0/vram0 85899345920\ndrm/0000:3b:00.0/vram0 42949672960\n");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  ASSERT_TRUE(cgroups.Has("dmem")) << Joined(cgroups.warnings());
  EXPECT_NE(Read(root_ + "/cgroup.subtree_control").find("+dmem"), std::string::npos);
  EXPECT_NE(cgroups.describe().find(" dmem"), std::string::npos) << cgroups.describe();
  std::vector<DmemRegion> regions = cgroups.DmemRegions();
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[1].name, "drm/0000:3b:00.0/vram0");
  EXPECT_EQ(regions[1].bytes, int64_t{40} << 30);
  auto path =
      cgroups.Create("job-8", {.device_memory = {{"drm/0000:3b:00.0/vram0", int64_t{10} << 30}}});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_EQ(Read(*path + "/dmem.max"), "drm/0000:3b:00.0/vram0 10737418240");

  fs::remove_all(dir_);
  SetUp();
  FakeRoot("memory pids");
  CgroupManager without = CgroupManager::Detect(root_);
  EXPECT_FALSE(without.Has("dmem"));
  EXPECT_TRUE(without.DmemRegions().empty());
  EXPECT_EQ(Joined(without.warnings()).find("dmem"), std::string::npos)
      << Joined(without.warnings());
  path = without.Create("job-9", {.device_memory = {{"drm/0000:3b:00.0/vram0", 1}}});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_FALSE(fs::exists(*path + "/dmem.max"));
}

TEST_F(CgroupTest, WhatIsNotLimitedIsWrittenAsMaxSoAReusedGroupKeepsNoOldLimit) {
  FakeRoot("cpuset cpu memory pids");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  ASSERT_TRUE(cgroups.Create("job-1", {.memory_bytes = 4096, .pids = 10}).has_value());
  auto path = cgroups.Create("job-1", {});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_EQ(Read(*path + "/memory.max"), "max");
  EXPECT_EQ(Read(*path + "/cpu.max"), "max 100000");
  EXPECT_EQ(Read(*path + "/pids.max"), "max");
  EXPECT_FALSE(fs::exists(*path + "/cpuset.cpus"));
}

TEST_F(CgroupTest, ATinyCpuShareIsRaisedToTheKernelsSmallestQuota) {
  FakeRoot("cpu");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  auto path = cgroups.Create("job-1", {.cpu_millis = 5});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_EQ(Read(*path + "/cpu.max"), "1000 100000");
}

TEST_F(CgroupTest, AMissingControllerIsAWarningAndItsLimitIsSkipped) {
  FakeRoot("cpuset cpu pids");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  ASSERT_TRUE(cgroups.usable());
  EXPECT_FALSE(cgroups.Has("memory"));
  ASSERT_EQ(cgroups.warnings().size(), 1u) << Joined(cgroups.warnings());
  EXPECT_EQ(cgroups.warnings()[0],
            "cgroup v2: controller memory is not available under " + root_ +
                " (only: cpu cpuset pids): jobs run without a memory limit, and OOM kills are not "
                "counted");
  EXPECT_NE(cgroups.describe().find("without memory"), std::string::npos) << cgroups.describe();

  auto path = cgroups.Create("job-1", {.memory_bytes = 1 << 20, .cpu_millis = 1000});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_FALSE(fs::exists(*path + "/memory.max"));
  EXPECT_EQ(Read(*path + "/cpu.max"), "100000 100000");
}

TEST_F(CgroupTest, AControllerTheRootLacksIsAskedOfItsParent) {
  Write(dir_ + "/cgroup.controllers", "cpuset cpu io memory pids\n");  // the parent is a group
  FakeRoot("cpuset cpu pids");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  EXPECT_TRUE(cgroups.warnings().empty()) << Joined(cgroups.warnings());
  EXPECT_TRUE(cgroups.Has("memory"));
  EXPECT_EQ(Read(dir_ + "/cgroup.subtree_control"), "+memory");
}

TEST_F(CgroupTest, OnAHybridHostEveryMissingLimitIsSaidAndNamesWhatThereIs) {
  // cgroup2 beside cgroup v1, with every controller but hugetlb taken by v1.
  Write(dir_ + "/cgroup.controllers", "hugetlb\n");
  FakeRoot("");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  EXPECT_TRUE(cgroups.usable());  // groups still gather a job's processes
  ASSERT_EQ(cgroups.warnings().size(), 4u) << Joined(cgroups.warnings());
  EXPECT_EQ(cgroups.warnings()[0].rfind("cgroup v2: controller memory is not available under " +
                                            dir_ + " (only: hugetlb): jobs run without",
                                        0),
            0u)
      << cgroups.warnings()[0];
  EXPECT_NE(cgroups.describe().find("limiting nothing"), std::string::npos) << cgroups.describe();
}

TEST_F(CgroupTest, ARootThatCannotBeMadeIsNotUsableAndTheWarningNamesIt) {
  std::string missing = dir_ + "/no-such-dir/jobs";
  CgroupManager cgroups = CgroupManager::Detect(missing);
  EXPECT_FALSE(cgroups.usable());
  ASSERT_FALSE(cgroups.warnings().empty());
  EXPECT_NE(cgroups.warnings()[0].find(missing), std::string::npos) << cgroups.warnings()[0];
  EXPECT_NE(cgroups.describe().find(missing), std::string::npos) << cgroups.describe();
  auto created = cgroups.Create("job-1", {});
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().code(), Code::kUnavailable);

  Write(dir_ + "/file", "");
  CgroupManager not_a_dir = CgroupManager::Detect(dir_ + "/file");
  EXPECT_FALSE(not_a_dir.usable());
  EXPECT_NE(Joined(not_a_dir.warnings()).find(dir_ + "/file"), std::string::npos);
}

TEST_F(CgroupTest, ARootThatIsNotWritableIsNotUsable) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through file modes";
  ASSERT_EQ(chmod(dir_.c_str(), 0500), 0);
  CgroupManager cgroups = CgroupManager::Detect(root_);
  EXPECT_FALSE(cgroups.usable());
  EXPECT_NE(Joined(cgroups.warnings()).find(root_), std::string::npos)
      << Joined(cgroups.warnings());
}

TEST_F(CgroupTest, AGroupNameIsOnePathComponent) {
  FakeRoot("memory");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  for (const char* bad : {"", ".", "..", "../escape", "a/b"}) {
    auto created = cgroups.Create(bad, {});
    ASSERT_FALSE(created.has_value()) << bad;
    EXPECT_EQ(created.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST_F(CgroupTest, RemoveDeletesTheGroupAndRefusesPathsOutsideTheRoot) {
  FakeRoot("");  // no controllers: the group is an empty directory, as rmdir wants
  CgroupManager cgroups = CgroupManager::Detect(root_);
  auto path = cgroups.Create("job-3", {});
  ASSERT_TRUE(path.has_value()) << path.error().message();
  EXPECT_TRUE(cgroups.Remove(*path).ok());
  EXPECT_FALSE(fs::exists(*path));
  EXPECT_TRUE(cgroups.Remove(*path).ok()) << "a group already gone is fine";

  for (const std::string& bad : {dir_ + "/elsewhere", root_, root_ + "/", root_ + "/../jobs2"}) {
    Status st = cgroups.Remove(bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
  }
}

TEST_F(CgroupTest, RemoveKillsThroughCgroupKillWhereTheKernelHasIt) {
  FakeRoot("");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  std::string group = root_ + "/job-4";
  fs::create_directories(group);
  Write(group + "/cgroup.kill", "");
  // The fake's plain file keeps the directory from going; on cgroupfs rmdir would succeed.
  Status st = cgroups.Remove(group);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(group), std::string::npos) << st.message();
  EXPECT_EQ(Read(group + "/cgroup.kill"), "1");
}

TEST_F(CgroupTest, RemoveKillsEachProcessWhereThereIsNoCgroupKill) {
  FakeRoot("");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  std::string group = root_ + "/job-5";
  fs::create_directories(group);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  Write(group + "/cgroup.procs", std::to_string(child) + "\n");
  EXPECT_FALSE(cgroups.Remove(group).ok());  // the fake's cgroup.procs keeps the directory
  int status = 0;
  pid_t ended = 0;
  for (int i = 0; i < 1000 && ended == 0; ++i) {
    ended = waitpid(child, &status, WNOHANG);
    if (ended == 0) usleep(5000);
  }
  if (ended == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "Remove did not kill the group's process";
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST_F(CgroupTest, OomKillsComeFromMemoryEvents) {
  FakeRoot("memory");
  CgroupManager cgroups = CgroupManager::Detect(root_);
  auto path = cgroups.Create("job-6", {});
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(cgroups.OomKills(*path), 0);  // no memory.events yet
  Write(*path + "/memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n");
  EXPECT_EQ(cgroups.OomKills(*path), 1);
  Write(*path + "/memory.events", "low 0\nhigh 0\nmax 0\noom 0\n");
  EXPECT_EQ(cgroups.OomKills(*path), 0);
}

TEST(DefaultCgroupRoot, IsTheAgentsOwnGroupWithBatonJobsBelow) {
  auto systemd =
      DefaultCgroupRoot("proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
                        "0::/system.slice/baton-agent.service\n");
  ASSERT_TRUE(systemd.has_value()) << systemd.error().message();
  EXPECT_EQ(*systemd, "/sys/fs/cgroup/system.slice/baton-agent.service/baton-jobs");

  // A hybrid host: cgroup v1 controllers, and cgroup2 mounted beside them.
  auto hybrid = DefaultCgroupRoot(
      "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n",
      "4:memory:/process_api/5f47\n1:cpu:/\n0::/\n");
  ASSERT_TRUE(hybrid.has_value()) << hybrid.error().message();
  EXPECT_EQ(*hybrid, "/sys/fs/cgroup/unified/baton-jobs");

  auto escaped = DefaultCgroupRoot("none /mnt/cg\\040two cgroup2 rw 0 0\n", "0::/a\n");
  ASSERT_TRUE(escaped.has_value());
  EXPECT_EQ(*escaped, "/mnt/cg two/a/baton-jobs");
}

TEST(DefaultCgroupRoot, SaysWhatIsMissing) {
  auto no_mount = DefaultCgroupRoot("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n", "0::/\n");
  ASSERT_FALSE(no_mount.has_value());
  EXPECT_NE(no_mount.error().message().find("no cgroup2"), std::string::npos);

  auto no_group = DefaultCgroupRoot("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", "1:cpu:/\n");
  ASSERT_FALSE(no_group.has_value());
  EXPECT_NE(no_group.error().message().find("/proc/self/cgroup"), std::string::npos);

  auto outside = DefaultCgroupRoot("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", "0::/../../x\n");
  EXPECT_FALSE(outside.has_value());
}

// A host whose controllers are cgroup v1 hierarchies (this VM's; many GPU clusters'): each
// controller's root is its mount joined with this process's group in it, and v1 is chosen
// whenever memory is a v1 hierarchy, even with cgroup2 mounted beside (without controllers).
TEST(V1CgroupRoots, AreEachHierarchysOwnGroupWithBatonJobsBelow) {
  std::string mounts =
      "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
      "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n"
      "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
      "cgroup /sys/fs/cgroup/devices cgroup rw,devices 0 0\n"
      "cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
  std::string self =
      "9:pids:/system.slice/agent.service\n5:devices:/system.slice/agent.service\n"
      "4:memory:/process_api/5f47\n3:cpuset:/\n2:cpu,cpuacct:/system.slice\n0::/\n";
  auto roots = V1CgroupRoots(mounts, self);
  std::vector<std::pair<std::string, std::string>> want = {
      {"memory", "/sys/fs/cgroup/memory/process_api/5f47/baton-jobs"},
      {"cpu", "/sys/fs/cgroup/cpu,cpuacct/system.slice/baton-jobs"},
      {"cpuset", "/sys/fs/cgroup/cpuset/baton-jobs"},
      {"pids", "/sys/fs/cgroup/pids/system.slice/agent.service/baton-jobs"},
      {"devices", "/sys/fs/cgroup/devices/system.slice/agent.service/baton-jobs"}};
  EXPECT_EQ(roots, want);
  // No v1 memory hierarchy: cgroup v2 is used (nothing here).
  EXPECT_TRUE(V1CgroupRoots("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", "0::/\n").empty());
  EXPECT_TRUE(
      V1CgroupRoots("cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0\n", "1:pids:/\n").empty());
}

}  // namespace
}  // namespace baton::agent
