// Python environments through the real binary (issue 17): `--venv DIR` runs the job in a real
// virtual environment (Debian's python3-venv), `--conda ENV` through `conda run`; a node
// without the environment fails the launch with the reason.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

std::string ShowDetail(const BatonProcess& b, const std::string& id) {
  json::value job = json::parse(RunCli(b, {"show", id, "--json"}).out);
  return job.at("reason_detail").is_string() ? std::string(job.at("reason_detail").as_string())
                                             : "";
}

TEST(Environments, AJobRunsInItsVirtualEnvironment) {
  TempDir dir;
  std::string venv = dir.path() + "/venv";
  std::string setup =
      "(dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q 'ok "
      "installed' || " +
      std::string(BATON_SOURCE_DIR) +
      "/scripts/install-test-server python3-venv) && /usr/bin/python3 -m venv "
      "--without-pip " +
      venv;
  ASSERT_EQ(std::system(setup.c_str()), 0) << setup;
  BatonProcess baton(dir.path() + "/data");

  CliResult r = RunCli(baton, {"submit", "--venv", venv, "--", "python3", "-c",
                               "import os, sys; print('prefix', sys.prefix); "
                               "print('env', os.environ['VIRTUAL_ENV'])"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0) << RunCli(baton, {"logs", id}).out;
  std::string log = RunCli(baton, {"logs", id}).out;
  EXPECT_NE(log.find("prefix " + venv + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("env " + venv + "\n"), std::string::npos) << log;
  EXPECT_NE(RunCli(baton, {"show", id}).out.find("venv " + venv), std::string::npos);

  // Where the environment is not, the launch fails with why, and the job with it.
  r = RunCli(baton, {"submit", "--venv", dir.path() + "/nowhere", "--", "python3", "-V"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  id = FirstLine(r.out);
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 1);
  EXPECT_NE(ShowDetail(baton, id).find("venv " + dir.path() +
                                       "/nowhere: not a Python virtual environment here"),
            std::string::npos)
      << ShowDetail(baton, id);
  r = RunCli(baton, {"submit", "--venv", venv, "--conda", "base", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("a job runs in a venv or a conda environment, not both"), std::string::npos)
      << r.out;
}

// No conda package exists for Debian: a stand-in `conda` that does what `conda run -n ENV
// --no-capture-output CMD...` does for the job (runs CMD, saying which environment) shows what
// the agent runs; a node without conda fails the launch with the reason.
TEST(Environments, ACondaJobRunsThroughCondaRunWhereCondaIs) {
  TempDir dir;
  {
    BatonProcess bare(dir.path() + "/bare");
    CliResult r = RunCli(bare, {"submit", "--conda", "torch", "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::string id = FirstLine(r.out);
    EXPECT_EQ(RunCli(bare, {"wait", id}).exit_code, 1);
    EXPECT_NE(ShowDetail(bare, id).find("conda torch: conda is not installed here"),
              std::string::npos)
        << ShowDetail(bare, id);
  }
  std::string conda = dir.path() + "/conda";
  std::ofstream(conda) << "#!/bin/sh\n"
                          "[ \"$1\" = run ] && [ \"$2\" = --no-capture-output ] && "
                          "[ \"$3\" = -n ] || exit 99\n"
                          "echo \"conda env $4\"; shift 4; exec \"$@\"\n";
  chmod(conda.c_str(), 0755);
  setenv("CONDA_EXE", conda.c_str(), 1);
  BatonProcess baton(dir.path() + "/data");
  unsetenv("CONDA_EXE");
  CliResult r = RunCli(baton, {"submit", "--conda", "torch-2.3", "--", "echo", "in", "job"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  EXPECT_EQ(RunCli(baton, {"logs", id}).out, "conda env torch-2.3\nin job\n");
}

}  // namespace
}  // namespace baton::testing
