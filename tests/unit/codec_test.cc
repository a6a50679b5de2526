#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "codec/json_codec.h"

namespace baton::codec {
namespace {

using std::chrono::seconds;

TEST(DecodeJobSpec, ReadsEveryContractField) {
  auto spec = DecodeJobSpec(R"({
    "name": "train", "command": ["python", "train.py", "--lr", "3e-4"],
    "resources": {"gpus": 2, "gpu_type": "H100", "gpu_memory": "40GiB", "cpus": 8, "memory": "64GiB"},
    "priority": "high", "project": "vision", "pool": "batch", "time_limit": "2h", "retries": 3,
    "env": {"SEED": "7"}, "workdir": "/tmp", "after": [4, 5], "preemptible": true, "hold": true})");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  EXPECT_EQ(spec->name, "train");
  EXPECT_EQ(spec->command.size(), 4u);
  EXPECT_FALSE(spec->shell);
  EXPECT_EQ(spec->resources.milli_gpus, 2000);
  EXPECT_EQ(spec->resources.gpu_type, "H100");
  EXPECT_EQ(spec->resources.gpu_memory_bytes, 40LL << 30);
  EXPECT_EQ(spec->resources.cpus, 8);
  EXPECT_EQ(spec->resources.memory_bytes, 64LL << 30);
  EXPECT_EQ(spec->priority, Priority::kHigh);
  EXPECT_EQ(spec->project, "vision");
  EXPECT_EQ(spec->pool, "batch");
  EXPECT_EQ(spec->time_limit, std::chrono::hours(2));
  EXPECT_EQ(spec->retries, 3);
  ASSERT_EQ(spec->env.size(), 1u);
  EXPECT_EQ(spec->env[0].first, "SEED");
  EXPECT_EQ(spec->after.size(), 2u);
  EXPECT_EQ(spec->preemptible, std::optional<bool>(true));
  EXPECT_TRUE(spec->hold);
}

TEST(DecodeJobSpec, StringCommandRunsUnderShellAndNumbersAreSecondsAndBytes) {
  auto spec = DecodeJobSpec(R"({"command": "echo $HOME | wc -c", "time_limit": 90,
                               "resources": {"gpus": 0.5, "gpu_memory": 1073741824}})");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  EXPECT_TRUE(spec->shell);
  ASSERT_EQ(spec->command.size(), 1u);
  EXPECT_EQ(spec->time_limit, seconds(90));
  EXPECT_EQ(spec->resources.milli_gpus, 500);
  EXPECT_EQ(spec->resources.gpu_memory_bytes, 1LL << 30);
}

struct BadSpec {
  const char* json;
  const char* names;  // a word the error message must contain
};

class DecodeJobSpecRejects : public ::testing::TestWithParam<BadSpec> {};

TEST_P(DecodeJobSpecRejects, WithAMessageNamingTheProblem) {
  auto spec = DecodeJobSpec(GetParam().json);
  ASSERT_FALSE(spec.has_value()) << GetParam().json;
  EXPECT_EQ(spec.error().code(), Code::kInvalidArgument);
  EXPECT_NE(spec.error().message().find(GetParam().names), std::string::npos)
      << GetParam().json << " -> " << spec.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, DecodeJobSpecRejects,
    ::testing::Values(
        BadSpec{"", "JSON"}, BadSpec{"{", "JSON"}, BadSpec{R"({"command": ["a")", "JSON"},
        BadSpec{"[]", "object"}, BadSpec{"{}", "command"}, BadSpec{R"({"command": []})", "command"},
        BadSpec{R"({"command": ""})", "command"}, BadSpec{R"({"command": [""]})", "command"},
        BadSpec{R"({"command": [1, 2]})", "command"},
        BadSpec{R"({"command": ["a"], "resources": {"gpus": -1}})", "gpus"},
        BadSpec{R"({"command": ["a"], "resources": {"gpus": 1e300}})", "gpus"},
        BadSpec{R"({"command": ["a"], "resources": {"gpus": "lots"}})", "gpus"},
        BadSpec{R"({"command": ["a"], "resources": {"gpus": NaN}})", "JSON"},
        BadSpec{R"({"command": ["a"], "resources": {"gpus": true}})", "gpus"},
        BadSpec{R"({"command": ["a"], "resources": {"gpus": 99999}})", "gpus"},
        BadSpec{R"({"command": ["a"], "resources": {"gpuz": 1}})", "gpuz"},
        BadSpec{R"({"command": ["a"], "colour": "red"})", "colour"},
        BadSpec{R"({"command": ["a"], "time_limit": "soon"})", "time_limit"},
        BadSpec{R"({"command": ["a"], "time_limit": -4})", "time_limit"},
        BadSpec{R"({"command": ["a"], "resources": {"memory": "12 parsecs"}})", "memory"},
        BadSpec{R"({"command": ["a"], "priority": "urgent"})", "priority"},
        BadSpec{R"({"command": ["a"], "retries": 1.5})", "retries"},
        BadSpec{R"({"command": ["a"], "requeue": "no"})", "requeue"},
        BadSpec{R"({"command": ["a"], "env": {"BATON_JOB_ID": "1"}})", "BATON_"},
        BadSpec{R"({"command": ["a"], "env": ["A=B"]})", "env"},
        BadSpec{R"({"command": ["a"], "after": [0]})", "after"},
        BadSpec{R"({"command": ["a"], "workdir": "relative/dir"})", "workdir"},
        BadSpec{R"({"command": ["a"], "signal": "KILL@1m"})", "signal"},
        BadSpec{R"({"command": ["a"], "signal": "USR1@later"})", "signal"},
        BadSpec{R"({"command": ["a"], "time_limit": "1m", "signal": "USR1@2m"})", "signal"},
        BadSpec{"{\"command\": [\"\xff\xfe\"]}", "UTF-8"}));

TEST(DecodeJobSpec, DeepNestingIsRejectedNotRecursedInto) {
  std::string deep(200'000, '[');
  auto spec = DecodeJobSpec(deep);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code(), Code::kInvalidArgument);
  std::string deep_obj =
      R"({"command": ["a"], "env": )" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_FALSE(DecodeJobSpec(deep_obj).has_value());
}

TEST(DecodeJobSpecs, BatchNamesTheBadJob) {
  auto specs =
      DecodeJobSpecs(R"({"jobs": [{"command": ["a"]}, {"command": ["b"], "retries": -1}]})");
  ASSERT_FALSE(specs.has_value());
  EXPECT_NE(specs.error().message().find("jobs[1]"), std::string::npos) << specs.error().message();
  auto ok = DecodeJobSpecs(R"({"jobs": [{"command": ["a"]}, {"command": "b"}]})");
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_FALSE(DecodeJobSpecs(R"({"jobs": []})").has_value());
}

TEST(DecodeJobBatch, TakesOnlyAJobsObject) {
  auto ok = DecodeJobBatch(R"({"jobs": [{"command": ["a"]}, {"command": "b"}]})");
  ASSERT_TRUE(ok.has_value()) << ok.error().message();
  EXPECT_EQ(ok->size(), 2u);
  // A single spec or a bare array is what POST /v1/jobs takes, not a batch; a spec named "jobs"
  // is no batch either.
  for (const char* body : {R"({"command": ["a"]})", R"([{"command": ["a"]}])",
                           R"({"command": ["a"], "name": "\"jobs\""})"}) {
    auto bad = DecodeJobBatch(body);
    ASSERT_FALSE(bad.has_value()) << body;
    EXPECT_EQ(bad.error().message(), R"(body: must be {"jobs": [spec, ...]})") << body;
  }
  auto broken = DecodeJobBatch(R"({"jobs": [)");
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().code(), Code::kInvalidArgument);
  auto unknown = DecodeJobBatch(R"({"jobs": [{"command": ["a"]}], "extra": 1})");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message().find("extra"), std::string::npos);
}

TEST(DecodeTokenBody, ReadsTheRoleAsARole) {
  auto body = DecodeTokenBody(R"({"user": "ada", "role": "agent"})");
  ASSERT_TRUE(body.has_value()) << body.error().message();
  EXPECT_EQ(body->role, Role::kAgent);
  EXPECT_EQ(DecodeTokenBody("")->role, Role::kUser);
  auto bad = DecodeTokenBody(R"({"role": "superuser"})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(),
            "role: must be one of user, admin, agent, join (got \"superuser\")");
  auto shown = DecodeToken(EncodeToken(TokenInfo{.id = 3, .user = "ci", .role = Role::kAdmin}));
  ASSERT_TRUE(shown.has_value()) << shown.error().message();
  EXPECT_EQ(shown->role, Role::kAdmin);
}

TEST(JobRecord, RoundTripsEverything) {
  Job job;
  job.id = JobId{42};
  job.spec.name = "n";
  job.spec.command = {"sleep", "1"};
  job.spec.resources.milli_gpus = 250;
  job.spec.resources.gpu_memory_bytes = 10LL << 30;
  job.spec.env = {{"A", "b"}};
  job.spec.after = {JobId{3}};
  job.spec.after_any = {JobId{4}, JobId{5}};
  job.spec.after_notok = {JobId{6}};
  job.spec.singleton = true;
  job.spec.begin = FromMillis(1'790'000'100'000);
  job.spec.time_limit = seconds(30);
  job.spec.grace_period = seconds(5);
  job.spec.signal = 10;  // SIGUSR1
  job.spec.signal_before = seconds(20);
  job.user = "ada";
  job.state = JobState::kRunning;
  job.restarts = 2;
  job.failures = 1;
  job.submitted_at = FromMillis(1'790'000'000'000);
  job.started_at = FromMillis(1'790'000'001'000);
  job.allocation = {
      NodeAllocation{.node = "n1", .gpus = {3}, .milli_per_gpu = 250, .started = true}};
  job.launched = true;
  job.cost_micros = 1234;
  job.master_port = 29543;
  job.launch_failed_on = {"n7", "n9"};
  job.launch_blamed = 1;
  job.allocation[0].launch_failed = true;
  job.allocation[0].gpu_sharing = "mps";
  job.spec.schedule = "0 3 * * mon-fri";
  job.spec.best_metric = "eval/acc";
  job.spec.best_max = true;
  job.metric_best = MetricPoint{
      .value = 0.91, .step = 1200, .checkpoint = "/ck/1200", .at = FromMillis(1'790'000'002'000)};
  job.metric_last = MetricPoint{.value = 0.9, .at = FromMillis(1'790'000'003'000)};
  job.cron_id = JobId{40};
  job.cron_stopped = true;
  job.spec.resources.exclusive = true;
  job.spec.resources.nodelist = {"gpu01"};
  job.spec.resources.exclude = {"gpu07"};
  job.spec.requeue = false;
  auto back = DecodeJob(EncodeJob(job, JobForm::kRecord));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(*back, job);
}

TEST(JobSpecCodec, DependenciesBeginAndNodesRoundTripThroughASubmit) {
  JobSpec spec = SubmittedSpec();
  spec.command = {"eval"};
  spec.after_any = {JobId{4}};
  spec.after_notok = {JobId{5}, JobId{6}};
  spec.singleton = true;
  spec.begin = FromMillis(1'790'000'100'000);
  spec.schedule = "@daily";
  spec.requeue = false;
  auto back = DecodeJobSpec(EncodeJobSpec(spec));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(*back, spec);
  EXPECT_EQ(back->resources.nodes, 0);  // left to the controller
  spec.resources.nodes = 1;             // named: kept
  EXPECT_EQ(DecodeJobSpec(EncodeJobSpec(spec))->resources.nodes, 1);
  auto bad = DecodeJobSpec(R"({"command": ["x"], "begin": "tomorrow"})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("begin"), std::string::npos) << bad.error().message();
}

TEST(JobSpecCodec, WhereAJobMayGoIsReadAsNamesOrASlurmHostList) {
  auto spec = DecodeJobSpec(R"({"command": ["x"], "resources": {"gpus": 8, "nodes": 2,
      "nodelist": "gpu[01-02]", "exclude": ["gpu07"], "exclusive": true}})");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  EXPECT_EQ(spec->resources.nodelist, (std::vector<std::string>{"gpu01", "gpu02"}));
  EXPECT_EQ(spec->resources.exclude, std::vector<std::string>{"gpu07"});
  EXPECT_TRUE(spec->resources.exclusive);
  auto back = DecodeJobSpec(EncodeJobSpec(*spec));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(*back, *spec);
  // Absent, the fields stay out of what is shown.
  EXPECT_EQ(EncodeJobSpec(SubmittedSpec()).find("nodelist"), std::string::npos);
  for (const auto& [body, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"command": ["x"], "resources": {"nodelist": "gpu[01-"}})", "resources.nodelist"},
           {R"({"command": ["x"], "resources": {"nodelist": ["-x"]}})",
            "\"-x\" is not a node name"},
           {R"({"command": ["x"], "resources": {"exclude": ["a", "a"]}})", "a given twice"},
           {R"({"command": ["x"], "resources": {"nodelist": ["a"], "exclude": ["a"]}})",
            "a is also in resources.nodelist"},
           {R"({"command": ["x"], "resources": {"nodes": 1, "nodelist": "n[1-2]"}})",
            "2 nodes named for a job of 1 node"},
           {R"({"command": ["x"], "resources": {"exclusive": "yes"}})", "resources.exclusive"},
           {R"({"command": ["x"], "resources": {"nodelist": "n[1-2000]"}})",
            "resources.nodelist"}}) {
    auto bad = DecodeJobSpec(body);
    ASSERT_FALSE(bad.has_value()) << body;
    EXPECT_NE(bad.error().message().find(why), std::string::npos) << bad.error().message();
  }
}

TEST(JobSpecCodec, ASweepGridIsEveryCombinationAndAListIsItsSets) {
  auto json = YamlToJson(R"(
command: python train.py --lr {lr}
sweep:
  lr: [0.1, 0.01]
  bs: [32, 64, 128]
array: "%2"
)",
                         "sweep.yaml");
  ASSERT_TRUE(json.has_value()) << json.error().message();
  auto spec = DecodeJobSpec(*json);
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  ASSERT_EQ(spec->sweep.size(), 6u);
  using Set = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(spec->sweep[0], (Set{{"lr", "0.1"}, {"bs", "32"}}));  // YAML's words kept as text
  EXPECT_EQ(spec->sweep[5], (Set{{"lr", "0.01"}, {"bs", "128"}}));
  auto list =
      DecodeJobSpec(R"({"command": ["x"], "sweep": [{"seed": 1}, {"seed": 2.5, "ok": true}]})");
  ASSERT_TRUE(list.has_value()) << list.error().message();
  EXPECT_EQ(list->sweep[1], (Set{{"seed", "2.5"}, {"ok", "true"}}));
  EXPECT_EQ(*DecodeJobSpec(EncodeJobSpec(*list)), *list);
  for (const char* bad : {R"({"command": ["x"], "sweep": 3})", R"({"command": ["x"], "sweep": []})",
                          R"({"command": ["x"], "sweep": {"lr": []}})",
                          R"({"command": ["x"], "sweep": [{"lr": [1]}]})",
                          R"({"command": ["x"], "sweep": [{"BATON_X": "1"}]})"}) {
    auto r = DecodeJobSpec(bad);
    if (r) {
      EXPECT_FALSE(ValidateJobSpec(*r).ok()) << bad;
    } else {
      EXPECT_NE(r.error().message().find("sweep"), std::string::npos) << r.error().message();
    }
  }
}

TEST(JobView, PreemptibleIsWhatTheJobIsAndTheRecordKeepsOnlyWhatWasChosen) {
  auto unset = DecodeJobSpec(R"({"command": ["a"]})");
  ASSERT_TRUE(unset.has_value()) << unset.error().message();
  EXPECT_EQ(unset->preemptible, std::nullopt);
  auto no = DecodeJobSpec(R"({"command": ["a"], "preemptible": false})");
  ASSERT_TRUE(no.has_value()) << no.error().message();
  EXPECT_EQ(no->preemptible, std::optional<bool>(false));
  Job job;
  job.id = JobId{7};
  job.spec.command = {"a"};
  // The API's object says what the job is: a batch job is, a session is not, unless chosen.
  EXPECT_NE(EncodeJob(job, JobForm::kPublic).find(R"("preemptible":true)"), std::string::npos);
  EXPECT_EQ(EncodeJob(job, JobForm::kRecord).find("preemptible"), std::string::npos);
  job.spec.interactive = Interactive::kTty;
  EXPECT_NE(EncodeJob(job, JobForm::kPublic).find(R"("preemptible":false)"), std::string::npos);
  job.spec.preemptible = true;
  EXPECT_NE(EncodeJob(job, JobForm::kRecord).find(R"("preemptible":true)"), std::string::npos);
  auto back = DecodeJob(EncodeJob(job, JobForm::kRecord));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->spec.preemptible, std::optional<bool>(true));
}

TEST(JobView, ShowsTheMasterPortOnlyWhileTheJobRuns) {
  Job job;
  job.id = JobId{7};
  job.spec.command = {"torchrun"};
  job.state = JobState::kRunning;
  job.master_port = 29507;
  EXPECT_NE(EncodeJob(job, JobForm::kPublic).find(R"("master_port":29507)"), std::string::npos);
  job.state = JobState::kSucceeded;
  EXPECT_EQ(EncodeJob(job, JobForm::kPublic).find("master_port"), std::string::npos);
  EXPECT_NE(EncodeJob(job, JobForm::kRecord).find(R"("master_port":29507)"), std::string::npos);
  std::string bad = EncodeJob(job, JobForm::kRecord);
  bad.replace(bad.find("29507"), 5, "70000");
  auto decoded = DecodeJob(bad);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_NE(decoded.error().message().find("master_port"), std::string::npos)
      << decoded.error().message();
}

// `baton submit` reads only the id, schedule and first run of the job it made: what the full
// decoder reads of them, and the same errors for them.
TEST(JobView, ASubmitsAnswerGivesWhatTheFullDecoderGives) {
  Job job;
  job.id = JobId{4242};
  job.spec.command = {"train"};
  job.spec.resources.milli_gpus = 2000;
  for (bool recurring : {false, true}) {
    if (recurring) {
      job.spec.schedule = "0 3 * * *";
      job.spec.begin = TimePoint(std::chrono::milliseconds(1'800'000'000'000));
    }
    const std::string text = EncodeJob(job, JobForm::kPublic);
    auto full = DecodeJob(text);
    auto light = DecodeSubmitted(text);
    ASSERT_TRUE(full.has_value()) << full.error().message();
    ASSERT_TRUE(light.has_value()) << light.error().message();
    EXPECT_EQ(light->id, full->id);
    EXPECT_EQ(light->schedule, full->spec.schedule);
    EXPECT_EQ(light->begin, full->spec.begin);
  }
  auto unset = DecodeSubmitted(R"({"id":3,"begin":null})");  // as the spec decoder reads it
  ASSERT_TRUE(unset.has_value()) << unset.error().message();
  EXPECT_FALSE(unset->begin.has_value());
  EXPECT_EQ(DecodeSubmitted(R"({"name":"x"})").error().message(), "job: missing id");
  EXPECT_NE(DecodeSubmitted(R"({"id":0})").error().message().find("id"), std::string::npos);
  EXPECT_NE(DecodeSubmitted(R"({"id":3,"begin":"soon"})").error().message().find("begin"),
            std::string::npos);
  EXPECT_NE(
      DecodeSubmitted(R"({"id":3,"schedule":)" + std::string("\"") + std::string(300, 'x') + "\"}")
          .error()
          .message()
          .find("schedule"),
      std::string::npos);
  EXPECT_FALSE(DecodeSubmitted("[1,2").has_value());
}

TEST(Yaml, JobFileBecomesTheSameSpec) {
  auto json = YamlToJson(R"(
name: train
command: [python, train.py]
resources:
  gpus: 4
  gpu_type: H100
time_limit: 2h
env:
  SEED: "1"
)",
                         "job.yaml");
  ASSERT_TRUE(json.has_value()) << json.error().message();
  auto spec = DecodeJobSpecs(*json);
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  ASSERT_EQ(spec->size(), 1u);
  EXPECT_EQ((*spec)[0].resources.milli_gpus, 4000);
  EXPECT_EQ((*spec)[0].time_limit, std::chrono::hours(2));
}

TEST(Yaml, PlainNumbersInCommandsAndEnvStayText) {
  auto json = YamlToJson(
      "command: [python, x.py, --lr, 0.1, --epochs, 10]\nenv: {N: 4, DEBUG: true}\n"
      "retries: 2\nhold: yes\n",
      "job.yaml");
  ASSERT_TRUE(json.has_value()) << json.error().message();
  auto spec = DecodeJobSpec(*json);
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  EXPECT_EQ(spec->command,
            (std::vector<std::string>{"python", "x.py", "--lr", "0.1", "--epochs", "10"}));
  EXPECT_EQ(spec->env[0], (std::pair<std::string, std::string>{"N", "4"}));
  EXPECT_EQ(spec->env[1].second, "true");
  EXPECT_EQ(spec->retries, 2);
  EXPECT_TRUE(spec->hold);
}

TEST(Yaml, AliasBombsAreBounded) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i)
      bomb += std::string(i ? ", " : "") + "*" + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  auto json = YamlToJson(bomb, "bomb.yaml");
  ASSERT_FALSE(json.has_value());
  EXPECT_NE(json.error().message().find("bomb.yaml"), std::string::npos) << json.error().message();
}

TEST(Yaml, BadYamlNamesTheFileAndLine) {
  auto json = YamlToJson("name: [unclosed\n", "job.yaml");
  ASSERT_FALSE(json.has_value());
  EXPECT_NE(json.error().message().find("job.yaml"), std::string::npos) << json.error().message();
}

TEST(Protocol, ReportCarriesMetricsLinesApartFromOutput) {
  ReportRequest r;
  r.node = "n1";
  r.logs = {LogChunk{.job = JobId{1}, .offset = 0, .data = "out\n"},
            LogChunk{.job = JobId{1}, .offset = 7, .data = "{\"loss\": 1}\n", .metrics = true}};
  auto back = DecodeReport(EncodeReport(r));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  ASSERT_EQ(back->logs.size(), 2u);
  EXPECT_FALSE(back->logs[0].metrics);
  EXPECT_TRUE(back->logs[1].metrics);
  EXPECT_EQ(back->logs[1].offset, 7);
  // An agent's report with a stream this controller does not know is refused, naming it.
  std::string text = EncodeReport(r);
  size_t at = text.find("\"metrics\"");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 9, "\"other\"");
  auto bad = DecodeReport(text);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("logs[].stream"), std::string::npos);
}

TEST(Protocol, AStartSaysWhatCapsAFractionalJobsShare) {
  ReportRequest r;
  r.node = "n1";
  r.events = {JobEvent{.job = JobId{3}, .kind = JobEvent::Kind::kStarted, .gpu_sharing = "mps"},
              JobEvent{.job = JobId{4}, .kind = JobEvent::Kind::kStarted, .gpu_sharing = "none"},
              JobEvent{.job = JobId{5}, .kind = JobEvent::Kind::kStarted}};
  std::string text = EncodeReport(r);
  auto back = DecodeReport(text);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->events[0].gpu_sharing, "mps");
  EXPECT_EQ(back->events[1].gpu_sharing, "none");
  EXPECT_EQ(back->events[2].gpu_sharing, "");  // whole GPUs: not said at all
  size_t said = 0;
  for (size_t i = text.find("gpu_sharing"); i != std::string::npos;
       i = text.find("gpu_sharing", i + 1))
    ++said;
  EXPECT_EQ(said, 2u);
  // A mechanism this controller does not know is refused, naming the field.
  size_t at = text.find("\"mps\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "\"hami\"");
  auto bad = DecodeReport(text);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("gpu_sharing: must be mps or none"), std::string::npos)
      << bad.error().message();
}

TEST(Protocol, AMigInstanceSaysWhereOnItsGpuItSits) {
  RegisterRequest reg;
  reg.node.name = "n1";
  reg.node.gpus = {
      Gpu{.index = 0, .uuid = "MIG-a", .physical = 0, .mig_profile = "3g.40gb", .mig_start = 4}};
  auto back = DecodeRegister(EncodeRegister(reg));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->node.gpus[0].mig_start, 4);
  std::string text = EncodeRegister(reg);
  const size_t at = text.find("\"mig_start\":4");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 13, "\"mig_start\":8");  // the 9th of 8 memory slices
  auto bad = DecodeRegister(text);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("mig_start"), std::string::npos) << bad.error().message();
  text.replace(at, 13, "\"mig_start\":-1");
  EXPECT_EQ(DecodeRegister(text)->node.gpus[0].mig_start, -1);
}

TEST(Protocol, ANodeSaysItsGpusAreSharedThroughMps) {
  RegisterRequest reg;
  reg.node.name = "n1";
  reg.node.mps = true;
  auto back = DecodeRegister(EncodeRegister(reg));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_TRUE(back->node.mps);
  // An agent from before MPS says nothing: no MPS.
  std::string text = EncodeRegister(RegisterRequest{.node = NodeInfo{.name = "n1"}});
  const size_t at = text.find("\"mps\":false,");
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, 12);
  back = DecodeRegister(text);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_FALSE(back->node.mps);
  text.insert(text.find("\"name\""), "\"mps\":\"yes\",");
  EXPECT_FALSE(DecodeRegister(text).has_value()) << text;
}

TEST(Protocol, AReclaimNoticeTravelsInReportsAndRegistrations) {
  ReportRequest r;
  r.node = "spot1";
  r.reclaim =
      ReclaimNotice{.source = "gcp", .seen = FromMillis(5000), .deadline = FromMillis(35000)};
  auto back = DecodeReport(EncodeReport(r));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->reclaim, r.reclaim);
  r.reclaim.reset();
  EXPECT_EQ(DecodeReport(EncodeReport(r))->reclaim, std::nullopt);

  RegisterRequest reg;
  reg.node.name = "spot1";
  reg.reclaim =
      ReclaimNotice{.source = "aws", .seen = FromMillis(1000), .deadline = FromMillis(121000)};
  auto reg_back = DecodeRegister(EncodeRegister(reg));
  ASSERT_TRUE(reg_back.has_value()) << reg_back.error().message();
  EXPECT_EQ(reg_back->reclaim, reg.reclaim);

  auto bad = DecodeReport(R"({"node": "n1", "reclaim": {"source": "azure", "seen": )"
                          R"("2026-11-29T12:00:00Z", "deadline": "2026-11-29T12:02:00Z"}})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "reclaim.source: must be aws, gcp or file");
  bad = DecodeReport(R"({"node": "n1", "reclaim": {"source": "aws"}})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "reclaim: needs seen and deadline");
}

TEST(Protocol, AnInstanceActionSaysItsTime) {
  auto t = DecodeInstanceAction(R"({"action": "hibernate", "time": "2026-11-29T12:02:00Z"})");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-29T12:02:00.000Z");
  EXPECT_EQ(DecodeInstanceAction(R"({"action": "terminate"})").error().message(), "time: missing");
  EXPECT_FALSE(DecodeInstanceAction("[]").has_value());
}

TEST(MetricsLines, ParsesWholeLinesAndSaysWhereTheNextReadStarts) {
  // A running job: the last line may still be being written.
  std::string data = "{\"step\": 1, \"loss\": 0.5}\nnot json\n[1, 2]\n{\"step\": 2}";
  std::string out = EncodeMetricsLines(JobId{4}, "n1", data, 100, 100 + data.size(), false);
  EXPECT_NE(out.find("\"lines\":[{\"step\":1,\"loss\":5E-1}]"), std::string::npos) << out;
  size_t whole = data.rfind('\n') + 1;
  EXPECT_NE(out.find("\"next\":" + std::to_string(100 + whole)), std::string::npos) << out;
  EXPECT_NE(out.find("\"ended\":false"), std::string::npos) << out;
  // Once the job has ended, that last line counts.
  out = EncodeMetricsLines(JobId{4}, "n1", data, 100, 100 + data.size(), true);
  EXPECT_NE(out.find("{\"step\":2}"), std::string::npos) << out;
  EXPECT_NE(out.find("\"next\":" + std::to_string(100 + data.size())), std::string::npos) << out;
  // Nothing yet.
  out = EncodeMetricsLines(JobId{4}, "", "", 0, 0, false);
  EXPECT_NE(out.find("\"lines\":[]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"next\":0"), std::string::npos) << out;
}

// A report's answer: how often the controller wants the agent's readings (issue 41). An
// older controller's "{}" leaves the agent's own; a value past an hour is refused by name.
TEST(Protocol, AReportsAnswerSaysHowOftenToSendReadings) {
  auto back = DecodeReportReply(EncodeReportReply(std::chrono::seconds(10)));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(*back, std::chrono::seconds(10));
  EXPECT_EQ(*DecodeReportReply("{}"), Duration(0));
  auto bad = DecodeReportReply(R"({"sample_interval_ms": 3600001})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("sample_interval_ms"), std::string::npos)
      << bad.error().message();
  EXPECT_FALSE(DecodeReportReply(R"({"sample_interval_ms": "10s"})").has_value());
  EXPECT_FALSE(DecodeReportReply("[]").has_value());
}

TEST(Protocol, ReportRoundTripsBinaryLogs) {
  ReportRequest r;
  r.node = "n1";
  r.session = 9;
  r.events = {JobEvent{.job = JobId{1},
                       .attempt = 0,
                       .kind = JobEvent::Kind::kExited,
                       .at = FromMillis(5000),
                       .exit_code = 3}};
  r.logs = {LogChunk{.job = JobId{1}, .offset = 10, .data = std::string("\x00\xff\n ok", 5)}};
  auto back = DecodeReport(EncodeReport(r));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->logs[0].data, r.logs[0].data);
  EXPECT_EQ(back->events[0].exit_code, 3);
  EXPECT_EQ(back->session, 9u);
  // A tracked metric's value, its step and the checkpoint of its line.
  r.events = {JobEvent{.job = JobId{1},
                       .kind = JobEvent::Kind::kMetric,
                       .at = FromMillis(6000),
                       .message = "/ck/7",
                       .value = 0.125,
                       .step = 7}};
  back = DecodeReport(EncodeReport(r));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->events[0].kind, JobEvent::Kind::kMetric);
  EXPECT_EQ(back->events[0].value, 0.125);
  EXPECT_EQ(back->events[0].step, 7);
  EXPECT_EQ(back->events[0].message, "/ck/7");
}

TEST(Errors, ContractShape) {
  std::string body = EncodeError(InvalidArgument("gpus: must be a number"));
  EXPECT_NE(body.find(R"("error")"), std::string::npos);
  EXPECT_NE(body.find(R"("code")"), std::string::npos);
  EXPECT_EQ(ErrorMessage(body), "gpus: must be a number");
}

}  // namespace
}  // namespace baton::codec

namespace baton::codec {
namespace {

TEST(MetricsFile, CheckpointLinesAreRecognisedAndNothingElse) {
  EXPECT_EQ(CheckpointFromMetricsLine(R"({"checkpoint": "/ckpt/step-100.pt", "step": 100})"),
            "/ckpt/step-100.pt");
  EXPECT_EQ(CheckpointFromMetricsLine(R"({"step": 100, "loss": 0.42})"), std::nullopt);
  EXPECT_EQ(CheckpointFromMetricsLine(R"({"checkpoint": 7})"), std::nullopt);
  EXPECT_EQ(CheckpointFromMetricsLine(R"({"checkpoint": ""})"), std::nullopt);
  EXPECT_EQ(CheckpointFromMetricsLine(R"({"checkpoint": "/x")"), std::nullopt);  // cut short
  EXPECT_EQ(CheckpointFromMetricsLine(R"(["checkpoint"])"), std::nullopt);
}

}  // namespace
}  // namespace baton::codec

namespace baton::codec {
namespace {

// `baton crons` reads what GET /v1/crons writes; a run shown by `baton show --json` and given
// to `submit -f` is that run again, not a second series.
TEST(CronCodec, ListsRoundTripAndAShownRunResubmitsOnce) {
  Job run;
  run.id = JobId{9};
  run.user = "ada";
  run.spec.command = {"eval"};
  run.spec.schedule = "0 3 * * *";
  run.spec.begin = FromMillis(1'790'000'100'000);
  run.cron_id = JobId{5};
  Job last = run;
  last.id = JobId{8};
  last.state = JobState::kSucceeded;
  CronEntry e{.id = JobId{5}, .runs = 4, .current = run, .last = last};
  std::string text = EncodeCronList({e});
  EXPECT_NE(text.find(R"("next_run":")"), std::string::npos) << text;
  auto back = DecodeCronList(text);
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].id, JobId{5});
  EXPECT_EQ((*back)[0].runs, 4);
  EXPECT_EQ((*back)[0].current.spec.schedule, "0 3 * * *");
  EXPECT_EQ((*back)[0].current.cron_id, JobId{5});
  ASSERT_TRUE((*back)[0].last);
  EXPECT_EQ((*back)[0].last->state, JobState::kSucceeded);

  auto specs = DecodeJobFile(EncodeJob(run));
  ASSERT_TRUE(specs) << specs.error().message();
  EXPECT_TRUE(specs->front().schedule.empty());
  EXPECT_FALSE(specs->front().begin);
}

}  // namespace
}  // namespace baton::codec

namespace baton::codec {
namespace {

// A shown job given back to `submit -f` keeps what it was sized from and where it runs.
TEST(JobSpecCodec, ModelVenvAndCondaRoundTripThroughAShownJob) {
  Job job;
  job.id = JobId{3};
  job.user = "ada";
  job.spec.command = {"train"};
  job.spec.model = ModelSizing{.name = "Llama-3-8B", .task = ModelTask::kLora, .seq = 4096};
  job.spec.venv = "/opt/venvs/train";
  job.sized = "Llama-3-8B lora in bf16: 1 GPU of 30.0GiB (fewest on H100-80GB)";
  auto specs = DecodeJobFile(EncodeJob(job));
  ASSERT_TRUE(specs) << specs.error().message();
  EXPECT_EQ(specs->front().model, job.spec.model);
  EXPECT_EQ(specs->front().venv, "/opt/venvs/train");
  auto back = DecodeJob(EncodeJob(job, JobForm::kRecord));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, job);
  job.spec.venv.clear();
  job.spec.conda = "torch-2.3";
  EXPECT_EQ(DecodeJobSpec(EncodeJobSpec(job.spec))->conda, "torch-2.3");
  auto bad = DecodeJobSpec(R"({"command": ["x"], "venv": "/v", "conda": "base"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "conda: a job runs in a venv or a conda environment, not both");
  bad = DecodeJobSpec(R"({"command": ["x"], "model": {"name": "x", "task": "train"}})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(
      bad.error().message(),
      "model.task: must be one of inference, finetune, lora, qlora, pretrain (got \"train\")");
}

}  // namespace
}  // namespace baton::codec
