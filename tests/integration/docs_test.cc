// The examples the docs show, run as they are written (issue 38: the README's curl tour printed
// nothing, its https URL refused by curl). Each test takes a ```sh block out of a document by
// the line before it, so that a changed flag, path or output breaks a test, not a reader.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

// `text` inside single quotes of sh: each ' as '\''.
std::string ShellQuoted(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out;
}

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

// The `baton ...` lines of every ```sh block of the README and docs/, continuation lines joined:
// (document, line number, command).
struct DocCommand {
  std::string doc;
  int line = 0;
  std::string command;
};
// The README and every document of docs/, relative to the source tree.
std::vector<std::string> Documents() {
  std::vector<std::string> docs = {"README.md"};
  for (const auto& e : std::filesystem::directory_iterator(std::string(BATON_SOURCE_DIR) + "/docs"))
    if (e.path().extension() == ".md") docs.push_back("docs/" + e.path().filename().string());
  return docs;
}

std::vector<DocCommand> BatonCommands() {
  std::vector<DocCommand> out;
  for (const std::string& doc : Documents()) {
    std::istringstream text(ReadFile(std::string(BATON_SOURCE_DIR) + "/" + doc));
    bool inside = false;
    int n = 0;
    for (std::string line; std::getline(text, line);) {
      ++n;
      if (!inside) {
        inside = line == "```sh";
        continue;
      }
      if (line.starts_with("```")) {
        inside = false;
        continue;
      }
      if (!line.starts_with("baton ")) continue;
      DocCommand c{doc, n, line};
      while (!c.command.empty() && c.command.back() == '\\' && std::getline(text, line)) {
        ++n;
        c.command.pop_back();
        c.command += line;
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

// Every `baton ...` line the docs show, run as written against a fresh `baton up` (at most 5 s
// each, stdin empty): none is refused as bad input (exit 2: an unknown command or flag, a value
// the command line does not take), so a renamed flag or a removed command breaks this test, not
// a reader. Jobs a line names may not exist here (exit 1 is fine). The programs that run a
// server, an agent or a simulation are left to their own tests.
TEST(DocExamples, EveryBatonCommandTheDocsShowIsOneTheCliTakes) {
  TempDir home;
  BatonProcess baton(home.path() + "/.baton");
  const std::string work = home.path() + "/work";
  std::filesystem::create_directories(work);
  // Files the examples read, as a user's project would have them (again before each line: one
  // example writes job.json from a job this server does not have).
  auto project = [&] {
    std::ofstream(work + "/job.yaml") << "name: train\ncommand: [python3, train.py]\n";
    std::ofstream(work + "/job.json") << R"({"command": ["true"]})";
    std::ofstream(work + "/train.sh") << "#!/bin/bash\n#SBATCH --job-name=train\necho hi\n";
    std::ofstream(work + "/prompts.txt") << "hello\n";
    std::ofstream(work + "/eval.py") << "import sys\nprint(sys.stdin.read())\n";
    std::ofstream(work + "/train.py") << "print('training')\n";
  };
  // Lines that need what a test cannot give them, each with why.
  const std::map<std::string, std::string> needs = {
      {"baton run -it", "a terminal (stdin here is not one: exit 2, said so)"},
      {"baton run --jupyter", "Jupyter in a virtual environment of the docs' (~/envs/nb)"},
  };
  const std::string bin = std::filesystem::path(BATON_BINARY).parent_path().string();
  std::vector<DocCommand> commands = BatonCommands();
  ASSERT_GT(commands.size(), 50u) << "the docs show fewer commands than they did";
  int ran = 0;
  for (const DocCommand& c : commands) {
    std::istringstream words(c.command);
    std::string program, verb;
    words >> program >> verb;
    if (verb == "server" || verb == "agent" || verb == "up" || verb == "sim") continue;
    bool excused = false;
    for (const auto& [prefix, why] : needs) excused |= c.command.starts_with(prefix);
    if (excused) continue;
    project();
    // Output sent to a system path (`> /etc/prometheus/baton.token`) goes under the work
    // directory instead: whether such a directory exists is the machine's, not the command's.
    std::string command = c.command;
    if (size_t to = command.find("> /"); to != std::string::npos) {
      std::string path = command.substr(to + 2, command.find(' ', to + 2) - (to + 2));
      std::filesystem::create_directories(std::filesystem::path(work + path).parent_path());
      command.replace(to + 2, path.size(), work + path);
    }
    // (NODE: what the GPU drill in gpus.md names its node.)
    CliResult r =
        RunShell("cd '" + work + "' && export HOME='" + home.path() + "' NODE=gpu07 PATH=\"" + bin +
                 ":$PATH\" && timeout -s KILL 5 " + command + " </dev/null");
    ++ran;
    EXPECT_NE(r.exit_code, 2) << c.doc << ":" << c.line << ": " << c.command << "\n" << r.out;
    EXPECT_NE(r.exit_code, 127) << c.doc << ":" << c.line << ": " << c.command << "\n" << r.out;
  }
  EXPECT_GT(ran, 50);
}

// A command of a ```console block and what the document shows it print: `$ COMMAND` (continued
// by a trailing backslash), then its output up to the next `$ ` line or the block's end.
struct ConsoleStep {
  int line = 0;
  std::string command;
  std::vector<std::string> expected;
};
std::vector<ConsoleStep> ConsoleSteps(const std::string& doc) {
  std::istringstream text(ReadFile(std::string(BATON_SOURCE_DIR) + "/" + doc));
  std::vector<ConsoleStep> out;
  bool inside = false;
  int n = 0;
  for (std::string line; std::getline(text, line);) {
    ++n;
    if (!inside) {
      inside = line == "```console";
      continue;
    }
    if (line.starts_with("```")) {
      inside = false;
    } else if (line.starts_with("$ ")) {
      ConsoleStep step{n, line.substr(2), {}};
      while (!step.command.empty() && step.command.back() == '\\' && std::getline(text, line)) {
        ++n;
        step.command.back() = ' ';
        step.command += line;
      }
      out.push_back(std::move(step));
    } else if (!out.empty()) {
      out.back().expected.push_back(line);
    }
  }
  return out;
}

// Whether `text` is `pattern`, in which "..." stands for any text.
bool LineMatches(std::string_view pattern, std::string_view text) {
  size_t dots = pattern.find("...");
  if (dots == std::string_view::npos) return pattern == text;
  if (!text.starts_with(pattern.substr(0, dots))) return false;
  std::string_view rest = pattern.substr(dots + 3);
  for (size_t i = dots; i <= text.size(); ++i)
    if (LineMatches(rest, text.substr(i))) return true;
  return false;
}

// Whether the lines are the pattern's, in which a line "..." stands for any number of lines.
bool LinesMatch(std::span<const std::string> pattern, std::span<const std::string> lines) {
  if (pattern.empty()) return lines.empty();
  if (pattern[0] == "...") {
    for (size_t i = 0; i <= lines.size(); ++i)
      if (LinesMatch(pattern.subspan(1), lines.subspan(i))) return true;
    return false;
  }
  return !lines.empty() && LineMatches(pattern[0], lines[0]) &&
         LinesMatch(pattern.subspan(1), lines.subspan(1));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST(DocExamples, LinesMatchWithDotsForWhatChanges) {
  EXPECT_TRUE(LineMatches("1  train  ...  running  ...", "1  train  root  running  3s"));
  EXPECT_FALSE(LineMatches("1  train  ...  running", "1  train  root  pending"));
  EXPECT_TRUE(LineMatches("...", ""));
  std::vector<std::string> lines = {"a", "b", "c"};
  EXPECT_TRUE(LinesMatch(std::vector<std::string>{"a", "...", "c"}, lines));
  EXPECT_TRUE(LinesMatch(std::vector<std::string>{"...", "b", "..."}, lines));
  EXPECT_FALSE(LinesMatch(std::vector<std::string>{"a", "c"}, lines));
  EXPECT_FALSE(LinesMatch(std::vector<std::string>{"a", "b"}, lines));
}

// Every ```console block of the README and docs/ runs as shown and prints what it shows: each
// document's blocks in order, against a fresh `baton up` of its own (so job ids start at 1),
// from a project directory with the files the examples read. A changed flag, message or column
// breaks this test, not a reader.
TEST(DocExamples, EveryConsoleExamplePrintsWhatTheDocsShow) {
  const std::string bin = std::filesystem::path(BATON_BINARY).parent_path().string();
  size_t steps = 0;
  for (const std::string& doc : Documents()) {
    std::vector<ConsoleStep> shown = ConsoleSteps(doc);
    if (shown.empty()) continue;
    TempDir home;
    BatonProcess baton(home.path() + "/.baton");
    ASSERT_TRUE(NodesReady(*baton.Client(), 1));
    const std::string work = home.path() + "/work";
    std::filesystem::create_directories(work);
    std::ofstream(work + "/train.py") << "print('training')\n";
    std::ofstream(work + "/train.sh")
        << "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --gres=gpu:1\n"
           "#SBATCH --mail-type=END\necho hi\n";
    for (const ConsoleStep& step : shown) {
      CliResult r = RunShell("cd '" + work + "' && export HOME='" + home.path() + "' PATH=\"" +
                             bin + ":$PATH\" && timeout -s KILL 60 sh -c '" +
                             ShellQuoted(step.command) + "' </dev/null");
      EXPECT_TRUE(LinesMatch(step.expected, Lines(r.out)))
          << doc << ":" << step.line << ": $ " << step.command << "\nprinted:\n"
          << r.out << "\nthe document shows:\n"
          << [&] {
               std::string text;
               for (const std::string& l : step.expected) text += l + "\n";
               return text;
             }();
      ++steps;
    }
  }
  EXPECT_GE(steps, 8u) << "the docs show fewer console examples than they did";
}

}  // namespace
}  // namespace baton::testing
