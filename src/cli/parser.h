// The command line's own words, around CLI11: which command a line names (after the global
// flags), an unknown command named with the closest known one, `baton help [CMD...]`,
// `baton version`, and parse errors as "baton: ..." lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace baton::cli {

// argv as the parser takes it. `submit` and `run` take the words after the first `--` as the
// job's command (`tail`): CLI11 hands a `--` that precedes every positional word back to the
// parent app. Every other command sees its `--` and what follows in `head`, as CLI11 does.
struct CommandLine {
  std::vector<std::string> head;                 // argv[0] included
  std::optional<std::vector<std::string>> tail;  // after `--`, for submit and run
  std::string command;                           // the command word; "" when none
};
CommandLine ReadCommandLine(int argc, char** argv);

// The index in `head` (argv, argv[0] included) of the command word: the first word after the
// global flags `--server URL` and `--token T` (also `--server=URL`); head.size() when none.
size_t CommandIndex(const std::vector<std::string>& head);

// The closest of `known` to `word` (edits, a swap of two letters counting as one), or "" when
// none is close enough to be what was meant.
std::string ClosestWord(const std::string& word, const std::vector<std::string>& known);

// What to say of an option `command` does not have (`where`: "baton submit"): Slurm's
// spelling gets Baton's (for submit and run), a typo the closest option, else where to look.
// Nothing when `word` is not an option (does not start with '-'). `more_names` ("--gpus"): the
// command's options that were not built (see FlagFilter), for the closest.
std::optional<std::string> UnknownOption(const CLI::App& command, const std::string& where,
                                         const std::string& word,
                                         std::vector<std::string> more_names = {});

// Before parsing: a command word `app` does not know gets "baton: unknown command 'sumbit'; did
// you mean 'submit'?" on stderr and exit status 2. Nothing (parse on) otherwise.
std::optional<int> RejectUnknownCommand(const CLI::App& app, const std::vector<std::string>& head);

// The root command: named "baton" (in every usage line), one command required, `--version`,
// and CLI11's errors as one "baton: ..." line with where to look. Whichever commands are added.
void SetUpRoot(CLI::App& app);

// `baton help [CMD...]` and `baton version`.
void AddParserCommands(CLI::App& app, int* exit_code);

// Parses the arguments in `head` (argv without a command's tail), running the chosen command;
// a request for help or a usage error gives the exit status to return instead.
std::optional<int> ParseCommandLine(CLI::App& app, std::vector<std::string> head);

// The options of `command` and of its option groups (the sections of its help, as submit's
// "Resources"), in the order they were added; not the groups' own help flags.
std::vector<const CLI::Option*> EveryOption(const CLI::App& command);

// `usage` as the command's usage line in its help ("baton submit [OPTIONS] -- COMMAND ..."),
// and its option groups as sections ("Resources:") after its own "Options:".
void SetUsage(CLI::App* command, std::string usage);

}  // namespace baton::cli
