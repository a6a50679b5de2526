// The examples the docs show, run as they are written (issue 38: the README's curl tour printed
// nothing, its https URL refused by curl). Each test takes a ```sh block out of a document by
// the line before it, so that a changed flag, path or output breaks a test, not a reader.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

// The first ```sh block after the line that contains `marker` in the document at `path`
// (relative to the source tree); "" when there is none.
std::string ShellBlockAfter(const std::string& path, const std::string& marker) {
  std::istringstream doc(ReadFile(std::string(BATON_SOURCE_DIR) + "/" + path));
  bool found = false, inside = false;
  std::string block;
  for (std::string line; std::getline(doc, line);) {
    if (!found) {
      found = line.find(marker) != std::string::npos;
    } else if (!inside) {
      inside = line == "```sh";
    } else if (line == "```") {
      return block;
    } else {
      block += line + "\n";
    }
  }
  return "";
}

TEST(DocExamples, TheReadmeRestTourRuns) {
  TempDir home;
  // ~/.baton as the README has it: the data directory of `make up`'s `baton up`.
  BatonProcess baton(home.path() + "/.baton");
  std::string tour = ShellBlockAfter("README.md", "The same things through the REST API");
  ASSERT_NE(tour.find("curl"), std::string::npos) << "the README has no REST tour";
  std::ofstream(home.path() + "/tour.sh") << "set -e\n" << tour;
  CliResult r = RunShell("HOME='" + home.path() + "' bash " + home.path() + "/tour.sh");
  EXPECT_EQ(r.exit_code, 0) << tour << r.out;
  EXPECT_NE(r.out.find(R"({"jobs":[])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("name":"hello")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hello from job 1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace baton::testing
