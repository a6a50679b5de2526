// What the CLI reads and writes on its own: --begin times as Slurm takes them, the labels of a
// multi-node job's log lines, which commands a command line builds, and which of submit's
// flags.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "cli/commands.h"
#include "cli/logs.h"
#include "cli/parser.h"
#include "cli/spec_flags.h"
#include "cli/submit.h"
#include "codec/json_codec.h"

namespace baton::cli {
namespace {

class BeginTime : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    old_tz_ = tz != nullptr ? tz : "";
    had_tz_ = tz != nullptr;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_)
      setenv("TZ", old_tz_.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
  // 2026-11-25T10:30:00Z
  TimePoint now_ = *ParseRfc3339("2026-11-25T10:30:00Z");
  std::string old_tz_;
  bool had_tz_ = false;
};

TEST_F(BeginTime, ReadsWhatSlurmsBeginReads) {
  auto at = [&](const char* text) {
    auto t = ParseBeginTime(text, now_, "--begin");
    EXPECT_TRUE(t) << text << ": " << t.error().message();
    return t ? FormatRfc3339(*t) : "";
  };
  EXPECT_EQ(at("+2h"), "2026-11-25T12:30:00.000Z");
  EXPECT_EQ(at("now+30m"), "2026-11-25T11:00:00.000Z");
  EXPECT_EQ(at("now"), "2026-11-25T10:30:00.000Z");
  EXPECT_EQ(at("14:00"), "2026-11-25T14:00:00.000Z");
  EXPECT_EQ(at("09:15:30"), "2026-11-26T09:15:30.000Z");  // passed today: tomorrow
  EXPECT_EQ(at("2026-12-01"), "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(at("2026-12-01T09:00"), "2026-12-01T09:00:00.000Z");
  EXPECT_EQ(at("2026-12-01T09:00:05"), "2026-12-01T09:00:05.000Z");
  EXPECT_EQ(at("2026-12-01T09:00:00Z"), "2026-12-01T09:00:00.000Z");
}

TEST_F(BeginTime, NamesWhatIsNotATime) {
  for (const char* text : {"tomorrow", "now-1h", "+", "+5x", "25:00", "2026-13-01", "14:00x"}) {
    auto t = ParseBeginTime(text, now_, "--begin");
    ASSERT_FALSE(t) << text;
    EXPECT_NE(t.error().message().find("--begin: \"" + std::string(text) + "\" is not a time"),
              std::string::npos)
        << t.error().message();
  }
}

TEST(LineLabeler, LabelsWholeLinesAndKeepsAnUnfinishedOneForTheRest) {
  LineLabeler l("[n1 rank 0] ");
  EXPECT_EQ(l.Add("step 1\nste"), "[n1 rank 0] step 1\n");
  EXPECT_EQ(l.Add("p 2\n\nlast"), "[n1 rank 0] step 2\n[n1 rank 0] \n");
  EXPECT_EQ(l.Flush(), "[n1 rank 0] last\n");
  EXPECT_EQ(l.Flush(), "");
  EXPECT_EQ(l.Add(""), "");
}

std::vector<std::string> Subcommands(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// A command line builds only its command's group (a short command starts sooner): the names
// each group declares must be the commands it adds, or a command would go missing.
TEST(ClientCommands, EachNamedCommandIsBuiltAloneWithItsGroupAndAllOtherwise) {
  const std::vector<std::string> names = ClientCommandNames();
  CLI::App all;
  int code = 0;
  EXPECT_FALSE(AddClientCommands(all, &code));
  EXPECT_EQ(Subcommands(all), names);  // every command, in the order help lists them
  for (const std::string& name : names) {
    if (name == "help") continue;
    CLI::App one;
    EXPECT_TRUE(AddClientCommands(one, &code, std::nullopt, name)) << name;
    std::vector<std::string> built = Subcommands(one);
    EXPECT_NE(std::ranges::find(built, name), built.end()) << name;
    EXPECT_LT(built.size(), names.size()) << name;
  }
  // `baton help CMD` looks CMD up among all; an unknown word gets all, to be named as unknown.
  for (std::string word : {"help", "sumbit", ""}) {
    CLI::App app;
    EXPECT_FALSE(AddClientCommands(app, &code, std::nullopt, word)) << word;
    EXPECT_EQ(Subcommands(app).size(), names.size()) << word;
  }
}

// A `baton submit WORDS...` parsed as the client parses it, with the spec flags `filter`
// wants: what the flags make (the spec's JSON, else its error), the flags given and typed, and
// the words left for the command; or CLI11's error.
struct Parsed {
  std::string outcome;
  size_t options_built = 0;
  bool operator==(const Parsed& o) const { return outcome == o.outcome; }
};
Parsed ParseSubmit(std::vector<std::string> words, const FlagFilter& filter) {
  CLI::App app;
  CLI::App* sub = app.add_subcommand("submit");
  sub->prefix_command();
  SubmitFlags f;
  AddSpecFlags(sub, f, true, filter);
  Parsed p;
  p.options_built = EveryOption(*sub).size();
  words.insert(words.begin(), "submit");
  std::reverse(words.begin(), words.end());
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    p.outcome = std::string("error: ") + e.what();
    return p;
  }
  NoteGiven(*sub, &f);
  auto command = CommandWords(*sub, "submit", std::nullopt, f);
  if (!command) {
    p.outcome = "command: " + command.error().message();
    return p;
  }
  auto spec = SpecFromFlags(f, *command);
  p.outcome = spec ? codec::EncodeJobSpec(*spec) : "spec: " + spec.error().message();
  for (const std::string& g : f.given) p.outcome += " given " + g;
  for (const std::string& t : f.typed) p.outcome += " typed " + t;
  return p;
}

TEST(SpecFlags, EachNameBelongsToOneOptionAcrossTheHelpsSections) {
  for (bool short_time : {true, false}) {
    CLI::App app;
    SubmitFlags f;
    AddSpecFlags(&app, f, short_time);
    EXPECT_EQ(app.get_subcommands({}).size(), 6u);  // Resources, Queue..., Batch scripts
    std::vector<std::string> names;
    for (const CLI::Option* o : EveryOption(app)) {
      if (o == app.get_help_ptr()) continue;
      for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
      for (const std::string& n : o->get_snames()) names.push_back("-" + n);
      EXPECT_EQ(std::ranges::count(f.spec_names, "--" + o->get_single_name()), 1)
          << o->get_single_name();
    }
    EXPECT_GE(names.size(), 75u);
    std::vector<std::string> sorted = names;
    std::ranges::sort(sorted);
    EXPECT_EQ(std::ranges::adjacent_find(sorted), sorted.end())
        << "a name used twice: " << *std::ranges::adjacent_find(sorted);
    EXPECT_EQ(f.spec_names.size(), EveryOption(app).size() - 1);  // all but --help
    EXPECT_EQ(std::ranges::count(names, "-t"), short_time ? 1 : 0);
  }
}

// `--preemptible=false` is `--no-preemptible` (CLI11 takes a flag's value), not a job left to
// its kind's default: a job that must never be stopped is not preempted because of a spelling.
TEST(SpecFlags, AFlagsFalseValueSaysTheOpposite) {
  auto preemptible = [](std::vector<std::string> words) -> std::string {
    Parsed p = ParseSubmit(std::move(words), FlagFilter{});
    if (p.outcome.find("\"preemptible\":true") != std::string::npos) return "true";
    if (p.outcome.find("\"preemptible\":false") != std::string::npos) return "false";
    return p.outcome.find("\"preemptible\"") == std::string::npos ? "unset" : p.outcome;
  };
  EXPECT_EQ(preemptible({"-g", "1", "true"}), "unset");  // as the job's kind chooses
  EXPECT_EQ(preemptible({"--preemptible", "true"}), "true");
  EXPECT_EQ(preemptible({"--no-preemptible", "true"}), "false");
  EXPECT_EQ(preemptible({"--preemptible=false", "true"}), "false");
  EXPECT_EQ(preemptible({"--preemptible=true", "true"}), "true");
  EXPECT_EQ(preemptible({"--no-preemptible=false", "true"}), "true");
}

TEST(SpecFlags, ACommandLineParsesAlikeWithOnlyTheFlagsItNames) {
  const std::vector<std::vector<std::string>> lines = {
      {"--hold", "-g", "1", "--", "true"},
      {"-g1", "-Jname", "--no-requeue", "-t", "30", "true"},
      {"--gpus=2", "--name=x", "--requeue", "--no-requeue", "python", "train.py"},
      {"-N", "2", "--gpus-per-node", "4", "--mem=64GiB", "--mem-per-gpu", "8G", "train.sh"},
      {"--after", "1,2", "--after-any", "3", "--env", "A=1", "--env", "B=2", "sleep", "1"},
      {"-p", "high", "-A", "nlp", "--partition", "big", "-w", "gpu[01-02]", "-x", "gpu03", "a"},
      {"--preemptible", "--retries", "2", "--max-preemptions", "1", "--signal", "USR1@90", "a"},
      {"--model", "llama-7b", "--task", "lora", "--seq", "4096", "--batch", "2", "serve"},
      {"--array", "0-9%2", "--begin", "2030-01-01T09:00:00Z", "--singleton", "-D", "/tmp",
       "--exclusive", "a"},
      {"--ntasks-per-node", "4", "-c", "2", "-n", "8", "--batch-script", "-o", "o.txt", "a"},
      {"train.sh", "--lr", "0.1", "-x", "-g", "3"},  // the script's own words after it
      {"--gres=gpu:2", "--qos", "low", "--code", ".", "--image", "img", "a"},
      {"--venv", "/v", "--conda", "c", "--best-metric", "loss:min", "--grace", "10s", "a"},
      // What CLI11 or the flags refuse: alike too.
      {"--preemptible", "--no-preemptible", "a"},
      {"--seq", "0", "a"},
      {"-n", "0", "a"},
      {"-g"},
      {"--gpu", "1", "a"},
      {"-q", "a"},
      {"--hold"},
      {"--retries", "x", "a"},
      {"--gpus", "-1", "a"},
  };
  for (const std::vector<std::string>& words : lines) {
    std::string line;
    for (const std::string& w : words) line += " " + w;
    Parsed all = ParseSubmit(words, FlagFilter{});
    Parsed named = ParseSubmit(words, FlagFilter::Of(words));
    EXPECT_EQ(named.outcome, all.outcome) << line;
    EXPECT_LT(named.options_built, all.options_built / 2) << line;
  }
  // Help, or an h among the letters: every flag, for the help to show them.
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"-h"}, {"--help"}, {"-gh"}}) {
    EXPECT_EQ(ParseSubmit(words, FlagFilter::Of(words)).options_built,
              ParseSubmit(words, FlagFilter{}).options_built);
  }
  EXPECT_TRUE(FlagFilter::Of({"-Jx"}).Wants("--name,-J,--job-name"));
  EXPECT_TRUE(FlagFilter::Of({"--no-requeue"}).Wants("--requeue,!--no-requeue"));
  EXPECT_TRUE(FlagFilter::Of({"--gpus=2"}).Wants("-g,--gpus,-G"));
  EXPECT_FALSE(FlagFilter::Of({"--gpus-per-node", "2"}).Wants("-g,--gpus,-G"));
  EXPECT_FALSE(FlagFilter::Of({"gpus", "g"}).Wants("-g,--gpus,-G"));  // not options
  EXPECT_TRUE(FlagFilter{}.Wants("--anything"));
  // A command's own options: built as wanted, every long name noted for a typo's closest.
  std::vector<std::string_view> known;
  EXPECT_FALSE(FlagFilter::Of({"-g", "1"}).Note("--server,--token", known));
  EXPECT_TRUE(FlagFilter::Of({"-fjob.yaml"}).Note("-f,--file", known));
  EXPECT_TRUE(FlagFilter::Of({"--json"}).Note("--json", known));
  EXPECT_EQ(known, (std::vector<std::string_view>{"--server", "--token", "--file", "--json"}));
}

}  // namespace
}  // namespace baton::cli
