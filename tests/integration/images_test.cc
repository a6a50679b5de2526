// Jobs in container images through the real binary (issue 17): `--image` runs the job through
// the node's podman (else apptainer) with its directories mounted and its environment passed.
// A stand-in podman checks the command the agent builds, on every machine; Debian's podman runs
// an image built from a local directory where it can run containers at all, and the test says
// why it is skipped where it cannot.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

// What `command` prints (stdout and stderr), and its exit status in `rc`.
std::string Shell(const std::string& command, int* rc = nullptr) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = p == nullptr ? -1 : pclose(p);
  if (rc != nullptr) *rc = status;
  return out;
}

TEST(Images, TheJobRunsThroughPodmanWithItsDirectoriesAndEnvironment) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  // A stand-in podman: says how it was called, then runs what follows the image.
  std::string bin = dir.path() + "/bin";
  ASSERT_EQ(system(("mkdir -p " + bin).c_str()), 0);
  std::ofstream(bin + "/podman") << "#!/bin/sh\n"
                                 << "echo \"podman-args: $*\"\n"
                                 << "while [ $# -gt 0 ] && [ \"$1\" != localhost/train:1 ]; do "
                                 << "shift; done\n"
                                 << "shift; exec \"$@\"\n";
  ASSERT_EQ(chmod((bin + "/podman").c_str(), 0755), 0);
  CliResult r = RunCli(baton, {"submit", "--image", "localhost/train:1", "--env",
                               "PATH=" + bin + ":/usr/bin:/bin", "--env", "LR=0.1", "--", "sh",
                               "-c", "echo inside job $BATON_JOB_ID with LR=$LR in $(pwd)"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  std::string log = RunCli(baton, {"logs", id}).out;
  std::string jobdir = dir.path() + "/data/agent/jobs/" + id;
  std::string cwd = std::filesystem::current_path().string();  // the job's workdir, by default
  for (const std::string& part :
       {std::string("podman-args: run --rm --name baton-"), std::string("--network host"),
        "-v " + jobdir + ":" + jobdir, "-v " + cwd + ":" + cwd, "-w " + cwd,
        std::string("-e BATON_JOB_ID"), std::string("-e LR"),
        std::string("-e CUDA_VISIBLE_DEVICES"), std::string("localhost/train:1 sh -c"),
        "inside job " + id + " with LR=0.1 in " + cwd}) {
    EXPECT_NE(log.find(part), std::string::npos) << part << "\n" << log;
  }
  EXPECT_EQ(log.find("-e PATH"), std::string::npos) << log;  // the image keeps its own
  EXPECT_NE(RunCli(baton, {"show", id}).out.find("image localhost/train:1"), std::string::npos);

  // A node without a runtime says so.
  CliResult none = RunCli(baton, {"submit", "--image", "localhost/train:1", "--env",
                                  "PATH=/nonexistent", "--", "true"});
  std::string failed = FirstLine(none.out);
  EXPECT_EQ(RunCli(baton, {"wait", failed}).exit_code, 1);
  std::string why = RunCli(baton, {"logs", failed}).out;
  EXPECT_NE(why.find("no container runtime for image localhost/train:1"), std::string::npos) << why;
  CliResult both = RunCli(baton, {"submit", "--image", "x", "--venv", "/opt/v", "--", "true"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.out.find("not two"), std::string::npos) << both.out;
  // The node tells which runtimes it has.
  auto nodes = baton.Client()->Request("GET", "/v1/nodes");
  ASSERT_TRUE(nodes.has_value());
  EXPECT_NE(nodes->body.find("\"runtimes\":["), std::string::npos) << nodes->body;
}

TEST(Images, AnImageBuiltFromALocalDirectoryRunsInDebiansPodman) {
  std::string install = std::string(BATON_SOURCE_DIR) + "/scripts/install-test-server ";
  int rc = 0;
  std::string out = Shell(install + "podman && " + install + "busybox-static", &rc);
  if (rc != 0) GTEST_SKIP() << "podman could not be installed: " << out;
  TempDir dir;
  // The image: a root file system of one static busybox, from a local directory.
  std::string root = dir.path() + "/rootfs";
  std::string suffix = dir.path().substr(dir.path().rfind('-') + 1);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string image = "localhost/baton-it-" + suffix + ":1";
  out = Shell("mkdir -p " + root + "/bin && cp /bin/busybox " + root +
                  "/bin/ && for t in sh echo " + "pwd cat; do ln -s busybox " + root +
                  "/bin/$t; done && tar -C " + root + " -cf " + dir.path() +
                  "/rootfs.tar . && podman import -q " + dir.path() + "/rootfs.tar " + image,
              &rc);
  ASSERT_EQ(rc, 0) << out;
  out = Shell("podman run --rm --network host " + image + " /bin/echo probe", &rc);
  if (rc != 0 || out.find("probe") == std::string::npos) {
    Shell("podman rmi -f " + image);
    GTEST_SKIP() << "podman cannot run containers on this machine: " << out;
  }
  BatonProcess baton(dir.path() + "/data");
  CliResult r =
      RunCli(baton, {"submit", "--image", image, "--workdir", dir.path(), "--", "/bin/sh", "-c",
                     "echo in the image; cat /bin/busybox > /dev/null && pwd; echo x > out.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 0) << RunCli(baton, {"logs", id}).out;
  std::string log = RunCli(baton, {"logs", id}).out;
  EXPECT_NE(log.find("in the image"), std::string::npos) << log;
  // Its working directory is the node's, mounted.
  EXPECT_EQ(ReadFile(dir.path() + "/out.txt"), "x\n");
  Shell("podman rmi -f " + image);
}

}  // namespace
}  // namespace baton::testing
