#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <limits>

#include "core/job.h"
#include "core/node.h"
#include "core/policy.h"
#include "core/quantity.h"
#include "core/time.h"

namespace baton {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(Duration, ParsesUnitsAndCombinations) {
  EXPECT_EQ(*ParseDuration("90s", "time_limit"), seconds(90));
  EXPECT_EQ(*ParseDuration("30m", "time_limit"), minutes(30));
  EXPECT_EQ(*ParseDuration("2h", "time_limit"), hours(2));
  EXPECT_EQ(*ParseDuration("1h30m", "time_limit"), minutes(90));
  EXPECT_EQ(*ParseDuration("250ms", "time_limit"), milliseconds(250));
}

TEST(Duration, RejectsBadTextNamingTheField) {
  for (const char* bad : {"", "abc", "-5s", "5x", "1e9h", "99999999999999999999s", "s", "1h-"}) {
    auto d = ParseDuration(bad, "time_limit");
    ASSERT_FALSE(d.has_value()) << bad;
    EXPECT_NE(d.error().message().find("time_limit"), std::string::npos) << d.error().message();
  }
}

// Issue 16: Slurm users type decimals ("-t 1.5h"); they were "unknown unit".
TEST(Duration, AcceptsDecimals) {
  EXPECT_EQ(*ParseDuration("1.5h", "t"), minutes(90));
  EXPECT_EQ(*ParseDuration("0.5d", "t"), hours(12));
  EXPECT_EQ(*ParseDuration("2.25m", "t"), seconds(135));
  EXPECT_EQ(*ParseDuration("1.5", "t"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("1h0.5m", "t"), seconds(3630));
  for (const char* bad : {"1.h", ".5h", "1..5h", "1.5.h", "1.0000000001s"}) {
    EXPECT_FALSE(ParseDuration(bad, "t").has_value()) << bad;
  }
}

// Issue 38: Slurm's clock forms, as sbatch --time and scripts write them.
TEST(Duration, ReadsSlurmsClockForms) {
  EXPECT_EQ(*ParseDuration("30:00", "t"), minutes(30));              // MM:SS
  EXPECT_EQ(*ParseDuration("90:30", "t"), seconds(90 * 60 + 30));    // minutes past 59
  EXPECT_EQ(*ParseDuration("2:30:00", "t"), minutes(150));           // HH:MM:SS
  EXPECT_EQ(*ParseDuration("1-12", "t"), hours(36));                 // D-HH
  EXPECT_EQ(*ParseDuration("1-00:30", "t"), minutes(24 * 60 + 30));  // D-HH:MM
  EXPECT_EQ(*ParseDuration("2-00:00:01", "t"), seconds(2 * 86400 + 1));
  for (const char* bad : {"1:2:3:4", ":30", "30:", "1-", "-1", "a-12", "1:x", "1--2", "367-00",
                          "9999-00", "1-2-3", "1.5:00"}) {
    auto d = ParseDuration(bad, "time_limit");
    ASSERT_FALSE(d.has_value()) << bad;
    EXPECT_NE(d.error().message().find("time_limit: "), std::string::npos) << d.error().message();
  }
}

TEST(Duration, BareNumberIsSeconds) { EXPECT_EQ(*ParseDuration("5", "t"), seconds(5)); }

TEST(Duration, BoundedAbove) {
  EXPECT_FALSE(ParseDuration("400d", "t").has_value());
  EXPECT_FALSE(DurationFromSeconds(1e300, "t").has_value());
  EXPECT_FALSE(DurationFromSeconds(std::nan(""), "t").has_value());
  EXPECT_FALSE(DurationFromSeconds(-1, "t").has_value());
  EXPECT_EQ(*DurationFromSeconds(1.5, "t"), milliseconds(1500));
}

TEST(Time, Rfc3339RoundTrips) {
  TimePoint t = FromMillis(1'790'000'000'123);
  std::string s = FormatRfc3339(t);
  EXPECT_EQ(s.back(), 'Z');
  EXPECT_EQ(*ParseRfc3339(s), t);
  EXPECT_FALSE(ParseRfc3339("yesterday").has_value());
  EXPECT_FALSE(ParseRfc3339("2026-11-23T10:00:00+02:00").has_value());  // only UTC
}

TEST(Time, Rfc3339IsCountedInUtcWhateverTheTimeZone) {
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), FromMillis(0));
  EXPECT_EQ(*ParseRfc3339("2024-02-29T23:59:59.5Z"), FromMillis(1'709'251'199'500));
  EXPECT_EQ(*ParseRfc3339("2026-11-27T03:30:00.04Z"), FromMillis(1'795'750'200'040));
  EXPECT_EQ(*ParseRfc3339("1969-12-31T23:59:59Z"), FromMillis(-1000));
  // A date no calendar has is refused, not moved on to the next month as timegm would.
  for (const char* bad : {"2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
                          "2026-11-27T24:00:00Z", "2026-11-27T10:60:00Z"}) {
    auto parsed = ParseRfc3339(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().message().find(bad), std::string::npos) << parsed.error().message();
  }
}

TEST(Size, ParsesBinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseSize("40GiB", "memory"), 40LL << 30);
  EXPECT_EQ(*ParseSize("512MiB", "memory"), 512LL << 20);
  EXPECT_EQ(*ParseSize("1GB", "memory"), 1'000'000'000LL);
  EXPECT_EQ(*ParseSize("1024", "memory"), 1024);
}

TEST(Size, RejectsBadSizes) {
  for (const char* bad : {"", "-1GiB", "lots", "1QiB", "99999999999999999999999"}) {
    auto s = ParseSize(bad, "memory");
    ASSERT_FALSE(s.has_value()) << bad;
    EXPECT_NE(s.error().message().find("memory"), std::string::npos);
  }
  EXPECT_FALSE(SizeFromNumber(std::numeric_limits<double>::infinity(), "memory").has_value());
  EXPECT_FALSE(SizeFromNumber(-3, "memory").has_value());
}

TEST(Milli, ParsesFractionsExactly) {
  EXPECT_EQ(*ParseMilli("0.25", "gpus", 8000), 250);
  EXPECT_EQ(*ParseMilli("2", "gpus", 8000), 2000);
  EXPECT_EQ(FormatMilli(250), "0.25");
  EXPECT_EQ(FormatMilli(2000), "2");
  EXPECT_FALSE(ParseMilli("0.0001", "gpus", 8000).has_value());  // finer than a milli-GPU
  EXPECT_FALSE(ParseMilli("9", "gpus", 8000).has_value());       // above the bound
  EXPECT_FALSE(ParseMilli("-1", "gpus", 8000).has_value());
  EXPECT_FALSE(MilliFromNumber(std::nan(""), "gpus", 8000).has_value());
}

JobSpec GoodSpec() {
  JobSpec s;
  s.name = "train";
  s.command = {"python", "train.py"};
  s.resources.milli_gpus = 1000;
  return s;
}

TEST(JobSpec, AcceptsAGoodSpec) { EXPECT_TRUE(ValidateJobSpec(GoodSpec()).ok()); }

TEST(JobSpec, EveryBoundNamesItsField) {
  struct Case {
    const char* field;
    void (*mutate)(JobSpec&);
  };
  const Case cases[] = {
      {"command", [](JobSpec& s) { s.command.clear(); }},
      {"command", [](JobSpec& s) { s.command = {""}; }},
      {"name", [](JobSpec& s) { s.name = std::string(1000, 'x'); }},
      {"gpus", [](JobSpec& s) { s.resources.milli_gpus = -1000; }},
      {"gpus", [](JobSpec& s) { s.resources.milli_gpus = SpecLimits::kMaxMilliGpus + 1000; }},
      {"gpus",
       [](JobSpec& s) { s.resources.milli_gpus = 1500; }},  // 1.5 GPUs: fractions only below 1
      {"nodes", [](JobSpec& s) { s.resources.nodes = -1; }},
      {"nodes", [](JobSpec& s) { s.resources.nodes = SpecLimits::kMaxNodes + 1; }},
      {"nodes",
       [](JobSpec& s) {
         s.resources.nodes = 3;
         s.resources.milli_gpus = 4000;
       }},
      {"retries", [](JobSpec& s) { s.retries = -1; }},
      {"retries", [](JobSpec& s) { s.retries = 1000; }},
      {"env",
       [](JobSpec& s) {
         s.env = {{"", "x"}};
       }},
      {"env",
       [](JobSpec& s) {
         s.env = {{"A=B", "x"}};
       }},
      {"project", [](JobSpec& s) { s.project = std::string(100, 'p'); }},
      {"cpus", [](JobSpec& s) { s.resources.cpus = -1; }},
      {"time_limit", [](JobSpec& s) { s.time_limit = milliseconds(-5); }},
  };
  for (const Case& c : cases) {
    JobSpec s = GoodSpec();
    c.mutate(s);
    Status st = ValidateJobSpec(s);
    ASSERT_FALSE(st.ok()) << c.field;
    EXPECT_NE(st.message().find(c.field), std::string::npos) << c.field << ": " << st.message();
  }
}

TEST(QueueWords, AnEstimateBeyondTodaySaysItsDate) {
  TimePoint now = *ParseRfc3339("2026-11-28T20:53:10Z");
  EXPECT_EQ(QueueWords(2, *ParseRfc3339("2026-11-28T21:30:00Z"), now),
            "; 2 jobs ahead in the queue; expected start in ~36m50s (21:30 UTC)");
  EXPECT_EQ(QueueWords(0, *ParseRfc3339("2026-11-29T20:53:00Z"), now),
            "; expected start in ~23h59m50s (2026-11-29 20:53 UTC)");
  EXPECT_EQ(QueueWords(1, std::nullopt, now), "; 1 job ahead in the queue");
}

TEST(JobState, OnlyLegalTransitions) {
  using S = JobState;
  EXPECT_TRUE(CanTransition(S::kPending, S::kRunning));
  EXPECT_TRUE(CanTransition(S::kPending, S::kHeld));
  EXPECT_TRUE(CanTransition(S::kHeld, S::kPending));
  EXPECT_TRUE(CanTransition(S::kPending, S::kCancelled));
  EXPECT_TRUE(CanTransition(S::kRunning, S::kSucceeded));
  EXPECT_TRUE(CanTransition(S::kRunning, S::kFailed));
  EXPECT_TRUE(CanTransition(S::kRunning, S::kTimedOut));
  EXPECT_TRUE(CanTransition(S::kRunning, S::kPending));  // requeue: retry, lost node
  EXPECT_FALSE(CanTransition(S::kHeld, S::kRunning));
  EXPECT_FALSE(CanTransition(S::kPending, S::kSucceeded));
  for (S terminal : {S::kSucceeded, S::kFailed, S::kCancelled, S::kTimedOut}) {
    EXPECT_TRUE(IsTerminal(terminal));
    for (S to : {S::kPending, S::kHeld, S::kRunning, S::kSucceeded, S::kFailed, S::kCancelled,
                 S::kTimedOut}) {
      EXPECT_FALSE(CanTransition(terminal, to))
          << JobStateName(terminal) << " -> " << JobStateName(to);
    }
  }
}

TEST(JobState, NamesRoundTrip) {
  for (JobState s : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kSucceeded,
                     JobState::kFailed, JobState::kCancelled, JobState::kTimedOut}) {
    EXPECT_EQ(*ParseJobState(JobStateName(s)), s);
  }
  EXPECT_FALSE(ParseJobState("exploded").has_value());
  EXPECT_EQ(*ParsePriority("high"), Priority::kHigh);
  EXPECT_FALSE(ParsePriority("urgent!").has_value());
}

TEST(GpuSpec, ParsesCountModelAndTopology) {
  GpuSpec s = *ParseGpuSpec("8xH100-80GB");
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.model, "H100-80GB");
  EXPECT_EQ(s.memory_bytes, 80LL << 30);
  GpuSpec p = *ParseGpuSpec("4xA100-40GB:topo=pairs");
  EXPECT_EQ(p.count, 4);
  EXPECT_EQ(p.topology, GpuTopology::kPairs);
  for (const char* bad : {"", "x", "8", "8xH100-80GB:topo=mesh", "100000xH100-80GB"}) {
    EXPECT_FALSE(ParseGpuSpec(bad).has_value()) << bad;
  }
}

TEST(GpuType, MatchesModelFamilyCaseInsensitively) {
  const Gpu h100{.model = "H100-80GB"};
  EXPECT_TRUE(GpuTypeMatches(h100, "h100"));
  EXPECT_TRUE(GpuTypeMatches(h100, "H100-80GB"));
  EXPECT_TRUE(GpuTypeMatches(h100, ""));
  EXPECT_FALSE(GpuTypeMatches(h100, "A100"));
  EXPECT_FALSE(GpuTypeMatches(Gpu{.model = "A100-40GB"}, "A100-80GB"));
}

TEST(GpuSpec, MigLayoutsAreCheckedAgainstTheHardware) {
  auto parsed = ParseGpuSpec("2xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb*2");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message();
  GpuSpec s = *parsed;
  EXPECT_EQ(s.mig, (std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}));
  // Placed as the hardware can hold them: the 3g.40gb on slices 4-7, the rest below.
  EXPECT_EQ(s.mig_starts, (std::vector<int>{4, 0, 2, 3}));
  std::vector<Gpu> gpus = SimulatedGpus(s, "a");
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[0].mig_start, 4);
  EXPECT_EQ(gpus[7].mig_start, 3);
  GpuSpec t = *ParseGpuSpec("1xA100-80GB:topo=pcie:mig=1g.10gb*7");
  EXPECT_EQ(t.mig.size(), 7u);
  EXPECT_EQ(t.topology, GpuTopology::kPcie);
  struct Bad {
    const char* spec;
    const char* why;
  } bad[] = {
      {"1xA100-80GB:mig=7g.80gb+1g.10gb", "8 compute slices"},  // more than 7 slices
      {"1xA100-40GB:mig=3g.40gb+1g.10gb", "50GB; the GPU has 40GB"},
      {"1xA100-80GB:mig=big", "not <C>g.<M>gb"},
      {"1xA100-80GB:mig=", "names no profile"},
      {"1xA100-80GB:mig=1g.10gb*9", "count after '*'"},
      {"1xA100-80GB:colour=red", "unknown option"},
      {"1xA100-80GB:mig=7g.80gb:mig=7g.80gb", "option given twice"},
  };
  for (const auto& b : bad) {
    auto r = ParseGpuSpec(b.spec);
    ASSERT_FALSE(r.has_value()) << b.spec;
    EXPECT_NE(r.error().message().find(b.why), std::string::npos)
        << b.spec << ": " << r.error().message();
  }
}

TEST(GpuType, MigSlicesGoOnlyToJobsThatNameTheirProfile) {
  const Gpu slice{.model = MigModel("A100-80GB", "1g.10gb"), .mig_profile = "1g.10gb"};
  EXPECT_EQ(slice.model, "A100-80GB-MIG-1g.10gb");
  EXPECT_TRUE(GpuTypeMatches(slice, "1g.10gb"));
  EXPECT_TRUE(GpuTypeMatches(slice, "1G.10GB"));
  EXPECT_TRUE(GpuTypeMatches(slice, "A100-80GB-MIG-1g.10gb"));
  EXPECT_FALSE(GpuTypeMatches(slice, ""));      // "any GPU" means a whole one
  EXPECT_FALSE(GpuTypeMatches(slice, "A100"));  // so does "an A100"
  EXPECT_FALSE(GpuTypeMatches(slice, "2g.20gb"));
  EXPECT_FALSE(GpuTypeMatches(Gpu{.model = "A100-80GB"}, "1g.10gb"));
  // What makes a GPU a slice is its profile, not its model's name.
  EXPECT_TRUE(GpuTypeMatches(Gpu{.model = "A100-80GB-MIG-1g.10gb"}, ""));
}

TEST(NodeName, Validated) {
  EXPECT_TRUE(IsValidNodeName("gpu-01"));
  EXPECT_FALSE(IsValidNodeName(""));
  EXPECT_FALSE(IsValidNodeName("a b"));
  EXPECT_FALSE(IsValidNodeName("../etc"));
  EXPECT_FALSE(IsValidNodeName(".."));
  EXPECT_FALSE(IsValidNodeName("-n"));
}

TEST(Budget, PeriodsStartAtUtcDayMondayAndFirstOfTheMonth) {
  TimePoint wed = FromMillis(1'795'620'600'000);  // 2026-11-25T15:30Z, a Wednesday
  EXPECT_EQ(PeriodStart(BudgetPeriod::kDay, wed), FromMillis(1'795'564'800'000));       // 11-25
  EXPECT_EQ(NextPeriodStart(BudgetPeriod::kDay, wed), FromMillis(1'795'651'200'000));   // 11-26
  EXPECT_EQ(PeriodStart(BudgetPeriod::kWeek, wed), FromMillis(1'795'392'000'000));      // Mon 11-23
  EXPECT_EQ(NextPeriodStart(BudgetPeriod::kWeek, wed), FromMillis(1'795'996'800'000));  // Mon 11-30
  EXPECT_EQ(PeriodStart(BudgetPeriod::kMonth, wed), FromMillis(1'793'491'200'000));     // 11-01
  EXPECT_EQ(NextPeriodStart(BudgetPeriod::kMonth, wed), FromMillis(1'796'083'200'000));  // 12-01
  EXPECT_EQ(PeriodStart(BudgetPeriod::kMonth, FromMillis(1'796'083'200'000)),
            FromMillis(1'796'083'200'000));
  EXPECT_EQ(PeriodStart(BudgetPeriod::kTotal, wed), TimePoint{});
  EXPECT_EQ(NextPeriodStart(BudgetPeriod::kTotal, wed), TimePoint::max());
}

TEST(Budget, APriceIsFoundByModelThenByTheLongestPrefixAGpuTypeWouldName) {
  Policy p;
  p.prices["H100"] = GpuPrice{.on_demand = 2};
  p.prices["H100-80GB"] = GpuPrice{.on_demand = 3};
  p.prices["a100"] = GpuPrice{.on_demand = 1};
  p.prices["1g.10gb"] = GpuPrice{.on_demand = 0.5};
  auto gpu = [](std::string model) { return Gpu{.model = std::move(model)}; };
  auto slice = [](std::string model, std::string profile) {
    return Gpu{.model = MigModel(model, profile), .mig_profile = profile};
  };
  EXPECT_EQ(p.Price(gpu("H100-80GB"))->on_demand, 3);
  EXPECT_EQ(p.Price(gpu("H100-94GB"))->on_demand, 2);
  EXPECT_EQ(p.Price(gpu("A100-40GB"))->on_demand, 1);  // case does not matter
  EXPECT_EQ(p.Price(slice("A100-80GB", "1g.10gb"))->on_demand, 0.5);
  EXPECT_EQ(p.Price(gpu("L4")), nullptr);
  EXPECT_EQ(p.Price(gpu("H1000")), nullptr);
  // Spot when asked for and priced; MIG instances not named pay their slices of their GPU.
  p.prices["H100"].spot = 1;
  EXPECT_EQ(p.HourlyPrice(gpu("H100-94GB"), true), 1.0);
  EXPECT_EQ(p.HourlyPrice(gpu("A100-40GB"), true), 1.0);  // no spot price: on demand
  EXPECT_EQ(p.HourlyPrice(slice("A100-80GB", "1g.10gb"), false), 0.5);
  EXPECT_DOUBLE_EQ(*p.HourlyPrice(slice("H100-80GB", "3g.40gb"), false), 3.0 * 3 / 7);
  p.prices["A30"] = GpuPrice{.on_demand = 2};
  EXPECT_EQ(p.HourlyPrice(slice("A30-24GB", "2g.12gb"), false), 1.0);  // 2 of an A30's 4
  EXPECT_EQ(p.HourlyPrice(slice("L4", "1g.5gb"), false), std::nullopt);
  EXPECT_EQ(p.HourlyPrice(gpu("L4"), false), std::nullopt);
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

// Issue 16: Slurm's --signal SIG[@TIME].
TEST(NoticeSignal, ReadsNamesNumbersAndTimesAsSlurmDoes) {
  auto usr1 = ParseNoticeSignal("USR1@2m", "signal");
  ASSERT_TRUE(usr1.has_value()) << usr1.error().message();
  EXPECT_EQ(usr1->signal, SIGUSR1);
  EXPECT_EQ(usr1->before, std::chrono::minutes(2));
  auto plain = ParseNoticeSignal("sigusr2", "signal");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->signal, SIGUSR2);
  EXPECT_EQ(plain->before, std::chrono::seconds(60));  // Slurm's default
  EXPECT_EQ(ParseNoticeSignal("10@90s", "signal")->signal, SIGUSR1);
  EXPECT_EQ(FormatNoticeSignal(SIGUSR1, std::chrono::minutes(2)), "USR1@2m");
  auto back = ParseNoticeSignal(FormatNoticeSignal(SIGINT, std::chrono::seconds(90)), "signal");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->signal, SIGINT);
  EXPECT_EQ(back->before, std::chrono::seconds(90));
  EXPECT_FALSE(back->shell);
  // Slurm's B: (a batch script's shell alone), read and written back.
  auto shell = ParseNoticeSignal("B:USR1@90", "signal");
  ASSERT_TRUE(shell.has_value()) << shell.error().message();
  EXPECT_EQ(shell->signal, SIGUSR1);
  EXPECT_EQ(shell->before, std::chrono::seconds(90));
  EXPECT_TRUE(shell->shell);
  EXPECT_EQ(FormatNoticeSignal(SIGUSR1, std::chrono::seconds(90), true), "B:USR1@1m30s");
  EXPECT_FALSE(ParseNoticeSignal("B:", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("B:KILL", "signal").has_value());
}

TEST(NoticeSignal, RefusesWhatAJobCannotCatchAndBadTimes) {
  auto kill = ParseNoticeSignal("KILL@1m", "--signal");
  ASSERT_FALSE(kill.has_value());
  EXPECT_NE(kill.error().message().find("--signal"), std::string::npos);
  EXPECT_NE(kill.error().message().find("cannot be caught"), std::string::npos);
  EXPECT_FALSE(ParseNoticeSignal("9", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("STOP", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("USR1@", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("USR1@0s", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("USR1@48h", "signal").has_value());
  EXPECT_FALSE(ParseNoticeSignal("USR1@soon", "signal").has_value());
}

TEST(NoticeSignal, MustComeBeforeTheStartOfTheJob) {
  JobSpec spec;
  spec.command = {"train"};
  spec.time_limit = std::chrono::minutes(5);
  spec.signal = SIGUSR1;
  spec.signal_before = std::chrono::minutes(5);
  Status st = ValidateJobSpec(spec);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("signal"), std::string::npos) << st.message();
  spec.signal_before = std::chrono::minutes(4);
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
}

}  // namespace
}  // namespace baton
