// Fails when a module includes a module it may not depend on (docs/architecture.md): the
// dependency order is core → codec → sched → store → control → net → agent → api → cli (sim
// beside api: core, codec, sched, store, control), and
// each module lists exactly what it may use; server/ (what batond serves with) uses them all but
// sim, and the two executables' mains at src/'s top have rows of their own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {
namespace fs = std::filesystem;

const std::map<std::string, std::set<std::string>>& Allowed() {
  static const std::map<std::string, std::set<std::string>> allowed = {
      {"core", {}},
      {"codec", {"core"}},
      {"sched", {"core"}},
      {"store", {"core", "codec"}},
      {"control", {"core", "sched", "store"}},
      {"net", {"core"}},
      {"agent", {"core", "codec", "net"}},
      {"api", {"core", "codec", "control", "net"}},  // net: TLS (net/tls_stream.h)
      {"cli", {"core", "codec", "net"}},
      {"sim", {"core", "codec", "sched", "store", "control"}},
      {"server", {"core", "codec", "net", "store", "control", "api", "agent", "cli"}},
      // The executables, the only files at src/'s top.
      {"main.cc", {"server", "sim", "cli", "core", "net"}},
      {"client_main.cc", {"cli"}},
      {"client_static.cc", {"cli"}},
  };
  return allowed;
}

TEST(Layering, NoModuleIncludesOneItMayNotUse) {
  fs::path src = fs::path(BATON_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(src)) << src;
  std::regex include(R"re(^\s*#\s*include\s*"([a-z_]+)/)re");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    fs::path rel = fs::relative(entry.path(), src);
    // A file at src/'s top is its own row (the executables' mains); any other is its module's.
    std::string module = rel.begin()->string();
    auto it = Allowed().find(module);
    ASSERT_NE(it, Allowed().end()) << "module " << module << " (" << rel
                                   << ") is not in the layering table: add it here and to "
                                      "docs/architecture.md";
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      std::string used = m[1];
      if (used == module) continue;
      EXPECT_TRUE(it->second.count(used) == 1)
          << rel.string() << ":" << number << " includes " << used << "/, which " << module
          << "/ may not use (" << line << ")";
    }
  }
  EXPECT_GT(files, 20);
}

}  // namespace
