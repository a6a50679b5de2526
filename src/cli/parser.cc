#include "cli/parser.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>

namespace baton::cli {
namespace {

// Edits from `a` to `b`, a swap of two neighbouring letters counting as one ("sumbit").
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());  // not an option group
  }
  return names;
}

const CLI::App* FindCommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!name.empty() && sub->get_name() == name) return sub;
  }
  return nullptr;
}

// "baton: unknown command 'X'; did you mean 'Y'?" (after `where`, e.g. "baton token").
int UnknownCommand(const CLI::App& app, const std::string& where, const std::string& word) {
  std::string closest = ClosestWord(word, CommandNames(app));
  std::cerr << "baton: unknown command '" << word.substr(0, 64) << "'";
  if (where != "baton") std::cerr << " for `" << where << "`";
  if (!closest.empty())
    std::cerr << "; did you mean '" << closest << "'?\n";
  else
    std::cerr << " (`" << (where == "baton" ? "baton help" : "baton help" + where.substr(5))
              << "` lists the commands)\n";
  return 2;
}

// The usage line CLI11 would write ("Usage: baton [OPTIONS] SUBCOMMAND"), or a fixed one; an
// option group as a section headed by its name, as the command's own "Options:" (CLI11's own
// indents it under the name and heads it "Options:" again).
class UsageFormatter : public CLI::Formatter {
 public:
  explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: " + usage_ + "\n";
  }
  std::string make_expanded(const CLI::App* sub) const override {
    if (!sub->get_name().empty()) return CLI::Formatter::make_expanded(sub);
    std::vector<const CLI::Option*> options = sub->get_options([sub](const CLI::Option* o) {
      return o->nonpositional() && o != sub->get_help_ptr() && o != sub->get_help_all_ptr();
    });
    return options.empty() ? "" : make_group(sub->get_group(), false, options);
  }

 private:
  std::string usage_;
};

// Slurm's spellings of options Baton names otherwise, for `submit` and `run`: what to type.
// (Most of Slurm's are Baton's too: -N, -J, --mem, --gres, -d... are accepted as they are.)
struct SlurmFlag {
  const char* slurm;
  const char* baton;
};
constexpr SlurmFlag kSlurmFlags[] = {
    {"-a", "--array"},
    {"--export", "--env NAME=VALUE"},
};

// The long and short names of every option of `app` ("--gpus", "-g").
std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : EveryOption(app)) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  return names;
}

}  // namespace

CommandLine ReadCommandLine(int argc, char** argv) {
  CommandLine line;
  int i = 0;
  for (; i < argc && std::string_view(argv[i]) != "--"; ++i) line.head.emplace_back(argv[i]);
  size_t command = CommandIndex(line.head);
  if (command < line.head.size()) line.command = line.head[command];
  if (i < argc) {
    if (line.command == "submit" || line.command == "run" || line.command == "alloc") {
      line.tail.emplace(argv + i + 1, argv + argc);
    } else {
      line.head.insert(line.head.end(), argv + i, argv + argc);
    }
  }
  return line;
}

size_t CommandIndex(const std::vector<std::string>& head) {
  size_t i = 1;
  while (i < head.size()) {
    const std::string& w = head[i];
    if (w == "--server" || w == "--token" || w == "--tls-ca") {
      i += 2;
    } else if (w.starts_with("--server=") || w.starts_with("--token=") ||
               w.starts_with("--tls-ca=")) {
      ++i;
    } else {
      return i;
    }
  }
  return head.size();
}

std::string ClosestWord(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& k : known) {
    size_t d = Distance(word, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  // Close enough to be a typo: one or two edits, fewer than the word has letters to spare.
  size_t allowed = std::min<size_t>(2, std::max<size_t>(1, word.size() / 3));
  if (best_distance <= allowed) return best;
  for (const std::string& k : known) {
    if (word.size() >= 2 && k.starts_with(word)) return k;  // "subm"
  }
  return "";
}

std::optional<std::string> UnknownOption(const CLI::App& command, const std::string& where,
                                         const std::string& word,
                                         std::vector<std::string> more_names) {
  if (word.size() < 2 || word[0] != '-') return std::nullopt;
  std::string name = word.substr(0, std::min(word.find('='), size_t{64}));
  std::string line = "unknown option '" + name + "' for `" + where + "`";
  if (where == "baton submit" || where == "baton run" || where == "baton alloc") {
    for (const SlurmFlag& f : kSlurmFlags) {
      if (name == f.slurm) return line + ": Slurm's " + name + " is " + f.baton + " in Baton";
    }
  }
  std::vector<std::string> names = OptionNames(command);
  names.insert(names.end(), more_names.begin(), more_names.end());
  if (std::string closest = ClosestWord(name, names); !closest.empty())
    return line + "; did you mean '" + closest + "'?";
  bool takes_command = where == "baton submit" || where == "baton run" || where == "baton alloc";
  return line + " (see `baton help" + where.substr(5) + "`" +
         (takes_command ? "; the command goes after --" : "") + ")";
}

std::optional<int> RejectUnknownCommand(const CLI::App& app, const std::vector<std::string>& head) {
  size_t i = CommandIndex(head);
  if (i >= head.size() || head[i].empty() || head[i][0] == '-') return std::nullopt;
  if (FindCommand(app, head[i]) != nullptr) return std::nullopt;
  return UnknownCommand(app, "baton", head[i]);
}

std::optional<int> ParseCommandLine(CLI::App& app, std::vector<std::string> head) {
  try {
    std::reverse(head.begin() + 1, head.end());  // CLI11 consumes a reversed vector
    head.erase(head.begin());
    app.parse(head);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);  // `baton --version`: 0
  } catch (const CLI::ExtrasError& e) {
    // The command the words were given to, and the first of them that is an option.
    const CLI::App* at = &app;
    std::string where = "baton";
    while (!at->get_subcommands().empty()) {
      at = at->get_subcommands().front();
      where += " " + at->get_name();
    }
    for (const std::string& word : at->remaining()) {
      if (auto line = UnknownOption(*at, where, word)) {
        std::cerr << "baton: " << *line << "\n";
        return 2;
      }
    }
    app.exit(e);
    return 2;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return std::nullopt;
}

std::vector<const CLI::Option*> EveryOption(const CLI::App& command) {
  std::vector<const CLI::Option*> options = command.get_options();
  for (const CLI::App* group : command.get_subcommands({})) {
    if (!group->get_name().empty()) continue;  // a command, not a group
    for (const CLI::Option* o : group->get_options()) {
      if (o != group->get_help_ptr() && o != group->get_help_all_ptr()) options.push_back(o);
    }
  }
  return options;
}

void SetUsage(CLI::App* app, std::string usage) {
  app->formatter(std::make_shared<UsageFormatter>(std::move(usage)));
}

void SetUpRoot(CLI::App& app) {
  app.name("baton");
  app.description("Baton: a GPU cluster scheduler for ML teams");
  app.require_subcommand(1);
  app.set_version_flag("--version", "baton " BATON_VERSION);
  // CLI11's errors, as every other: one line that starts with "baton:", and where to look.
  app.failure_message([](const CLI::App* root, const CLI::Error& e) {
    std::string where = "baton help";
    for (const CLI::App* at = root;;) {
      auto chosen = at->get_subcommands();
      if (chosen.empty()) break;
      at = chosen.front();
      where += " " + at->get_name();
    }
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return "baton: " + what + " (see `" + where + "`)\n";
  });
}

void AddParserCommands(CLI::App& app, int* exit_code) {
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* help = app.add_subcommand("help", "help on baton, or on a command: baton help submit");
  help->add_option("command", *words, "a command, e.g. submit, or token create");
  help->callback([&app, words, exit_code] {
    const CLI::App* at = &app;
    std::string name = "baton";
    for (const std::string& w : *words) {
      const CLI::App* next = FindCommand(*at, w);
      if (next == nullptr) {
        *exit_code = UnknownCommand(*at, name, w);
        return;
      }
      at = next;
      name += " " + w;
    }
    std::cout << at->get_formatter()->make_help(at, name, CLI::AppFormatMode::Normal);
    *exit_code = 0;
  });
  app.add_subcommand("version", "print baton's version")->callback([exit_code] {
    std::cout << "baton " << BATON_VERSION << "\n";
    *exit_code = 0;
  });
}

}  // namespace baton::cli
