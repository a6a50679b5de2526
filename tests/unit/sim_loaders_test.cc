// Trace and cluster loaders for `baton sim` beyond the CSV: Slurm's sacct, the Alibaba openb
// node list, and the CSV writer that turns any trace back into the PRODUCT.md §6 format.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/node.h"
#include "sim/alibaba_nodes.h"
#include "sim/openb_models.h"
#include "sim/sacct.h"
#include "sim/trace.h"

namespace baton::sim {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// What `sacct --parsable2 --allusers --format=JobID,JobName,User,Account,Partition,Submit,Start,
// End,State,AllocTRES,Timelimit,Priority,NNodes` prints, written here: steps under their
// allocations, an array task, a two-node typed job, a pending and a cancelled-while-pending job,
// a CPU-only job, a heterogeneous component and a job still running.
constexpr const char* kSacct =
    "JobID|JobName|User|Account|Partition|Submit|Start|End|State|AllocTRES|Timelimit|Priority|"
    "NNodes\n"
    "4101|train-resnet50|alice|vision|gpu|2024-03-01T12:00:00|2024-03-01T12:00:05|2024-03-01T14:00:"
    "05|COMPLETED|"
    "billing=8,cpu=8,gres/gpu=2,mem=64G,node=1|1-00:00:00|4294901000|1\n"
    "4101.batch|batch||vision||2024-03-01T12:00:05|2024-03-01T12:00:05|2024-03-01T14:00:05|"
    "COMPLETED|"
    "cpu=8,gres/gpu=2,mem=64G,node=1|||1\n"
    "4101.extern|extern||vision||2024-03-01T12:00:05|2024-03-01T12:00:05|2024-03-01T14:00:05|"
    "COMPLETED|"
    "billing=8,cpu=8,gres/gpu=2,mem=64G,node=1|||1\n"
    "4102_3|sweep|bob|nlp|gpu|2024-03-01T12:30:00|2024-03-01T13:00:00|2024-03-01T13:45:30|"
    "COMPLETED|"
    "billing=4,cpu=4,gres/gpu=1,mem=16G,node=1|UNLIMITED|4294900500|1\n"
    "4102_3.batch|batch||nlp||2024-03-01T13:00:00|2024-03-01T13:00:00|2024-03-01T13:45:30|"
    "COMPLETED|"
    "cpu=4,gres/gpu=1,mem=16G,node=1|||1\n"
    "4103|llm-pretrain|carol|nlp|gpu|2024-03-01T11:00:00|2024-03-01T11:10:00|2024-03-02T11:10:07|"
    "TIMEOUT|"
    "billing=64,cpu=64,gres/gpu:a100=16,gres/gpu=16,mem=1000G,node=2|1-00:00:00|4294900800|2\n"
    "4103.0|python||nlp||2024-03-01T11:10:02|2024-03-01T11:10:02|2024-03-02T11:10:07|CANCELLED|"
    "cpu=64,gres/gpu:a100=16,gres/gpu=16,mem=1000G,node=2|||2\n"
    "4104|waiting|dave|vision|gpu|2024-03-01T12:45:00|Unknown|Unknown|PENDING||02:00:00|4294900100|"
    "1\n"
    "4105|gave-up|dave|vision|gpu|2024-03-01T12:50:00|None|2024-03-01T12:55:00|CANCELLED by 1001||"
    "Partition_Limit|4294900100|1\n"
    "4106|preprocess|erin|data|cpu|2024-03-01T12:10:00|2024-03-01T12:10:01|2024-03-01T12:40:01|"
    "COMPLETED|"
    "billing=16,cpu=16,mem=32G,node=1|30:00|4294900700|1\n"
    "4107+0|het-leader|frank@corp|robotics|gpu|2024-03-01T13:00:00|2024-03-01T13:00:10|2024-03-"
    "01T13:30:10|"
    "COMPLETED|billing=8,cpu=8,gres/gpu:rtx8000=4,gres/gpu=4,mem=64G,node=1|04:00:00|4294900600|1\n"
    "4108|still-going|alice|vision|gpu|2024-03-01T13:05:00|2024-03-01T13:05:02|Unknown|RUNNING|"
    "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1|2-00:00:00|4294900900|1\n";

TEST(Sacct, OneJobPerAllocationThatRanWithGpus) {
  SacctSkipped skipped;
  auto t = ParseSacct(kSacct, "jobs.sacct", 10'000'000, &skipped);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->size(), 4u);
  const TraceJob& resnet = (*t)[0];
  EXPECT_EQ(resnet.line, 2);
  EXPECT_EQ(resnet.name, "train-resnet50");
  EXPECT_EQ(resnet.user, "alice");
  EXPECT_EQ(resnet.project, "vision");
  EXPECT_EQ(resnet.submit, hours(1));  // after 4103, the earliest submit
  EXPECT_EQ(resnet.duration, hours(2));
  EXPECT_EQ(resnet.resources.milli_gpus, 2000);
  EXPECT_EQ(resnet.resources.nodes, 1);
  EXPECT_EQ(resnet.resources.gpu_type, "");
  EXPECT_EQ(resnet.time_limit, hours(24));  // 1-00:00:00
  EXPECT_EQ(resnet.priority, Priority::kNormal);

  const TraceJob& sweep = (*t)[1];  // an array task is an allocation of its own
  EXPECT_EQ(sweep.line, 5);
  EXPECT_EQ(sweep.submit, minutes(90));
  EXPECT_EQ(sweep.duration, minutes(45) + seconds(30));
  EXPECT_EQ(sweep.time_limit, Duration(0));  // UNLIMITED

  const TraceJob& llm = (*t)[2];
  EXPECT_EQ(llm.line, 7);
  EXPECT_EQ(llm.submit, Duration(0));
  EXPECT_EQ(llm.duration, hours(24) + seconds(7));
  EXPECT_EQ(llm.resources.milli_gpus, 16'000);  // the total, over two nodes of 8
  EXPECT_EQ(llm.resources.nodes, 2);
  EXPECT_EQ(llm.resources.gpu_type, "A100");

  const TraceJob& het = (*t)[3];
  EXPECT_EQ(het.line, 12);
  EXPECT_EQ(het.resources.milli_gpus, 4000);
  EXPECT_EQ(het.resources.gpu_type, "");  // rtx8000 is no Baton GPU type
  EXPECT_EQ(het.user, "frank_corp");
  EXPECT_EQ(het.time_limit, hours(4));

  EXPECT_EQ(skipped.steps, 4);
  EXPECT_EQ(skipped.never_started, 2);  // Start Unknown, Start None
  EXPECT_EQ(skipped.running, 1);
  EXPECT_EQ(skipped.without_gpus, 1);
}

TEST(Sacct, FieldsInAnyOrderElapsedReqTresAndParsableTrailingPipes) {
  // --parsable (not 2) ends each line with '|'; no Start, so durations come from Elapsed.
  auto t = ParseSacct(
      "JobIDRaw|JobID|Elapsed|State|Submit|End|ReqTRES|Account|\n"
      "77|77|01:30:00|COMPLETED|2024-05-01T00:00:00|2024-05-01T01:30:00|cpu=2,gres/"
      "gpu:h100=1,mem=8G,node=1|ml|\n"
      "78|78|00:00:00|CANCELLED by "
      "0|2024-05-01T00:10:00|2024-05-01T00:11:00|cpu=2,gres/gpu=1,node=1||\n"
      "79|79|2-03:04:05|COMPLETED|2024-05-01T00:20:00|2024-05-03T03:24:05|billing=16,cpu=16,gres/"
      "gpu=8,node=2|ml|\n",
      "jobs.sacct");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->size(), 2u);  // 78 never started
  EXPECT_EQ((*t)[0].duration, minutes(90));
  EXPECT_EQ((*t)[0].resources.gpu_type, "H100");
  EXPECT_EQ((*t)[0].project, "ml");
  EXPECT_EQ((*t)[0].user, "user");  // no User field
  EXPECT_EQ((*t)[1].submit, minutes(20));
  EXPECT_EQ((*t)[1].duration, hours(51) + minutes(4) + seconds(5));
  EXPECT_EQ((*t)[1].resources.nodes, 2);  // from node=
  EXPECT_EQ((*t)[1].resources.milli_gpus, 8000);
}

TEST(Sacct, OldSlurmAllocGres) {
  auto t = ParseSacct(
      "JobID|Submit|Start|End|AllocGRES|NNodes\n"
      "1|2019-01-01T00:00:00|2019-01-01T00:00:00|2019-01-01T00:01:00|gpu:v100:2(IDX:0,1)|1\n"
      "2|2019-01-01T00:00:30|2019-01-01T00:00:30|2019-01-01T00:01:00|gpu:4,mps:100|1\n",
      "old.sacct");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].resources.milli_gpus, 2000);
  EXPECT_EQ((*t)[0].resources.gpu_type, "V100");
  EXPECT_EQ((*t)[1].resources.milli_gpus, 4000);
  EXPECT_EQ((*t)[1].duration, seconds(30));
}

TEST(Sacct, ErrorsNameTheFileTheLineAndTheField) {
  const std::string header = "JobID|User|Submit|Start|End|AllocTRES|Timelimit|NNodes\n";
  auto row = [](std::string submit, std::string start, std::string end, std::string tres,
                std::string limit, std::string nodes) {
    return "7|ana|" + submit + "|" + start + "|" + end + "|" + tres + "|" + limit + "|" + nodes +
           "\n";
  };
  const std::string t0 = "2024-03-01T00:00:00", t1 = "2024-03-01T00:00:10",
                    t2 = "2024-03-01T01:00:00";
  const std::string good = row(t0, t1, t2, "gres/gpu=8,node=1", "01:00:00", "1");
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"", "jobs.sacct: empty"},
      {"JobID|Start|End|AllocTRES\n", "jobs.sacct: line 1: Submit: required field missing"},
      {"JobID|Submit|Start|End\n", "jobs.sacct: line 1: AllocTRES: required field"},
      {"JobID|Submit|End|AllocTRES\n", "jobs.sacct: line 1: Start: required field (or Elapsed)"},
      {"JobID|jobid|Submit|Start|End|AllocTRES\n", "line 1: JobID: field named twice"},
      {header + row("2024-13-01T00:00:00", t1, t2, "gres/gpu=8", "", "1"),
       "jobs.sacct: line 2: Submit: \"2024-13-01T00:00:00\" is not a time"},
      {header + row(t0, "2024-02-30T00:00:00", t2, "gres/gpu=8", "", "1"),
       "jobs.sacct: line 2: Start: "},
      {header + row(t0, t1, "yesterday", "gres/gpu=8", "", "1"), "jobs.sacct: line 2: End: "},
      {header + row(t0, t2, t1, "gres/gpu=8", "", "1"),
       "jobs.sacct: line 2: End: \"2024-03-01T00:00:10\" is before"},
      {header + row(t0, "2024-01-01T00:00:00", "2025-06-01T00:00:00", "gres/gpu=8", "", "1"),
       "line 2: End: the job ran longer than 366 days"},
      {header + row(t0, t1, t2, "cpu=8,gres/gpu=nan", "", "1"),
       "jobs.sacct: line 2: AllocTRES: \"gres/gpu=nan\""},
      {header + row(t0, t1, t2, "gres/gpu=99999999999999999999999", "", "1"),
       "jobs.sacct: line 2: AllocTRES: "},
      {header + row(t0, t1, t2, "gres/gpu=5000", "", "1"), "jobs.sacct: line 2: AllocTRES: "},
      {header + row(t0, t1, t2, "gres/gpu:a100=4000,gres/gpu:h100=4000", "", "1"),
       "line 2: AllocTRES: more than 4096"},
      {header + row(t0, t1, t2, "cpu=8,gres/gpu", "", "1"),
       "jobs.sacct: line 2: AllocTRES: \"gres/gpu\" is not"},
      {header + row(t0, t1, t2, "gres/gpu=8", "soon", "1"),
       "jobs.sacct: line 2: Timelimit: \"soon\""},
      {header + row(t0, t1, t2, "gres/gpu=8", "1-2:3:4:5", "1"), "jobs.sacct: line 2: Timelimit: "},
      {header + row(t0, t1, t2, "gres/gpu=8", "", "3"),
       "jobs.sacct: line 2: NNodes: 8 GPUs (AllocTRES) do not divide evenly over 3 nodes"},
      {header + row(t0, t1, t2, "gres/gpu=8,node=3", "", ""),
       "line 2: AllocTRES: 8 GPUs (AllocTRES) do not divide"},
      {header + row(t0, t1, t2, "gres/gpu=8", "", "0"), "jobs.sacct: line 2: NNodes: \"0\""},
      {header + row(t0, t1, t2, "gres/gpu=8", "", "99999999999999999999"),
       "jobs.sacct: line 2: NNodes: "},
      {header + good + "8|ana|" + t0 + "\n", "jobs.sacct: line 3: 3 fields where the header has 8"},
      {header + "|ana|" + t0 + "|" + t1 + "|" + t2 + "|gres/gpu=1||1\n",
       "jobs.sacct: line 2: JobID: empty"},
      {header + good +
           row("2025-06-01T00:00:00", "2025-06-01T00:00:00", "2025-06-01T00:00:01", "gres/gpu=1",
               "", "1"),
       "jobs.sacct: line 3: Submit: more than 366 days after the first submit"},
      {header + row(t0, t1, t2, "cpu=8,mem=8G", "", "1") +
           row(t0, "Unknown", "Unknown", "", "", "1"),
       "no job with GPUs in jobs.sacct (allocations left out: 1 never started, 0 still running, 1 "
       "without GPUs)"},
      {header + "7|" + std::string(70'000, 'a') + "\n",
       "jobs.sacct: line 2: longer than 65536 bytes"},
  };
  for (const auto& c : cases) {
    auto t = ParseSacct(c.text, "jobs.sacct");
    ASSERT_FALSE(t.has_value()) << c.text.substr(0, 400);
    EXPECT_NE(t.error().message().find(c.message), std::string::npos)
        << c.text.substr(0, 400) << " -> " << t.error().message();
  }
  auto capped = ParseSacct(header + good + good, "jobs.sacct", 1);
  ASSERT_FALSE(capped.has_value());
  EXPECT_NE(capped.error().message().find("line 3: more than 1 jobs"), std::string::npos)
      << capped.error().message();
}

TEST(Sacct, TheHeaderTellsSacctFromOtherTraces) {
  EXPECT_TRUE(
      IsSacctHeader("JobID|JobName|User|Account|Partition|Submit|Start|End|State|AllocTRES"));
  EXPECT_TRUE(IsSacctHeader("Submit|jobid|End|"));
  EXPECT_FALSE(IsSacctHeader("submit_time,duration,gpus"));
  EXPECT_FALSE(IsSacctHeader("timestamp,duration,num_gpus,gpu_time,cluster"));
  EXPECT_FALSE(IsSacctHeader("JobIDRaw|User"));
  EXPECT_FALSE(IsSacctHeader("JobID"));  // one field: not a '|' table
}

TEST(Sacct, TheFuzzSeedIsAValidSacctFile) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/tests/fuzz/corpus/trace/sacct.txt");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  auto t = ParseSacct(text.str(), "sacct.txt");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_GE(t->size(), 2u);
}

void ExpectSameJobs(const std::vector<TraceJob>& a, const std::vector<TraceJob>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("job " + std::to_string(i));
    EXPECT_EQ(a[i].submit, b[i].submit);
    EXPECT_EQ(a[i].duration, b[i].duration);
    EXPECT_EQ(a[i].resources, b[i].resources);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].user, b[i].user);
    EXPECT_EQ(a[i].project, b[i].project);
    EXPECT_EQ(a[i].priority, b[i].priority);
    EXPECT_EQ(a[i].time_limit, b[i].time_limit);
    EXPECT_EQ(a[i].preemptible, b[i].preemptible);
  }
}

TEST(TraceCsv, SacctJobsRoundTripThroughParseTraceCsv) {
  auto jobs = ParseSacct(kSacct, "jobs.sacct");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  std::string csv = TraceCsv(*jobs);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "submit_time,duration,gpus,nodes,name,user,project,gpu_type,time_limit");
  auto back = ParseTraceCsv(csv, "out.csv");
  ASSERT_TRUE(back.has_value()) << back.error().message() << "\n" << csv;
  ExpectSameJobs(*jobs, *back);
}

TEST(TraceCsv, QuotesNamesAndKeepsMillisecondsPriorityAndPreemption) {
  TraceJob j;
  j.submit = std::chrono::milliseconds(1234);
  j.duration = std::chrono::milliseconds(500);
  j.resources.milli_gpus = 250;
  j.resources.gpu_type = "T4";
  j.name = "eval, \"big\"";
  j.user = "ana";
  j.project = "vision";
  j.priority = Priority::kHigh;
  j.preemptible = true;
  j.time_limit = seconds(90);
  TraceJob k;
  k.submit = hours(300);
  k.duration = hours(1);
  k.resources.milli_gpus = 16'000;
  k.resources.nodes = 2;
  std::vector<TraceJob> jobs = {j, k};
  std::string csv = TraceCsv(jobs);
  EXPECT_NE(csv.find("1.234,0.5,0.25,1,\"eval, \"\"big\"\"\",ana,vision,T4,90,high,true\n"),
            std::string::npos)
      << csv;
  auto back = ParseTraceCsv(csv, "out.csv");
  ASSERT_TRUE(back.has_value()) << back.error().message() << "\n" << csv;
  ExpectSameJobs(jobs, *back);
}

// Rows in the shape of the node list of the Alibaba GPU cluster trace (cluster-trace-gpu-v2023,
// github.com/alibaba/clusterdata; Weng et al., "Beware of Fragmentation", USENIX ATC'23): made
// up here, one per model and GPU count the real list holds, since the trace's licence for
// copies is unconfirmed.
constexpr const char* kOpenbNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "node-a,64000,262144,2,P100\n"
    "node-b,128000,786432,8,G3\n"
    "node-c,96000,786432,8,V100M32\n"
    "node-d,32000,131072,4,V100M16\n"
    "node-e,96000,393216,8,G2\n"
    "node-f,96000,393216,4,T4\n"
    "node-g,104000,524288,2,T4\n"
    "node-h,128000,1048576,1,A10\n"
    "node-i,96000,524288,0,\n";

TEST(AlibabaNodes, OneNodePerRowWithGpusAndTheModelsMapped) {
  auto nodes = ParseAlibabaNodes(kOpenbNodes, "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(nodes.has_value()) << nodes.error().message();
  ASSERT_EQ(nodes->size(), 8u);  // not the node without GPUs
  EXPECT_EQ((*nodes)[0].name, "node-a");
  EXPECT_EQ((*nodes)[0].gpus, "2xP100-16GB");
  EXPECT_EQ((*nodes)[0].pool, "default");
  std::map<std::string, std::pair<int, int>> per_model;  // model -> nodes, GPUs
  int total = 0;
  for (const SimNode& n : *nodes) {
    auto spec = ParseGpuSpec(n.gpus);
    ASSERT_TRUE(spec.has_value()) << n.gpus;
    per_model[spec->model].first += 1;
    per_model[spec->model].second += spec->count;
    total += spec->count;
  }
  std::map<std::string, std::pair<int, int>> want = {
      {"P100-16GB", {1, 2}}, {"G3", {1, 8}},      {"V100-32GB", {1, 8}}, {"V100-16GB", {1, 4}},
      {"G2", {1, 8}},        {"T4-16GB", {2, 6}}, {"A10-24GB", {1, 1}},
  };
  EXPECT_EQ(per_model, want);
  EXPECT_EQ(total, 37);
  auto v100 = ParseGpuSpec((*nodes)[2].gpus);
  EXPECT_EQ(v100->memory_bytes, int64_t{32} << 30);
  EXPECT_EQ(v100->topology, GpuTopology::kCubemesh);
}

TEST(AlibabaNodes, PodGpuSpecsMatchTheNodesOnceMappedToo) {
  // The pod lists name GPU types as the node list does; the V100s need the same mapping.
  EXPECT_EQ(OpenbGpuModel("V100M16"), "V100-16GB");
  EXPECT_EQ(OpenbGpuModel("G2"), "G2");
  EXPECT_EQ(OpenbGpuModel("X9"), "X9");
  EXPECT_TRUE(GpuTypeMatches(OpenbGpuModel("V100M32"), "", OpenbGpuModel("V100M32")));
  EXPECT_FALSE(GpuTypeMatches(OpenbGpuModel("V100M32"), "", "V100M32"));
  for (const char* model : {"P100", "T4", "A10", "G2", "G3"}) {
    EXPECT_TRUE(GpuTypeMatches(OpenbGpuModel(model), "", model)) << model;
  }
}

TEST(AlibabaNodes, ErrorsNameTheFileTheLineAndTheColumn) {
  const std::string header = "sn,cpu_milli,memory_mib,gpu,model\n";
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"", "nodes.csv: empty"},
      {"sn,cpu_milli,gpu\n", "nodes.csv: line 1: model: required column missing"},
      {"sn,gpu,gpu,model\n", "nodes.csv: line 1: gpu: column named twice"},
      {header + "n1,64000,262144,two,T4\n", "nodes.csv: line 2: gpu: \"two\""},
      {header + "n1,64000,262144,-1,T4\n", "nodes.csv: line 2: gpu: "},
      {header + "n1,64000,262144,99999999999,T4\n", "nodes.csv: line 2: gpu: "},
      {header + "../n1,64000,262144,2,T4\n", "nodes.csv: line 2: sn: \"../n1\""},
      {header + "n1,64000,262144,2,T4\nn1,64000,262144,2,T4\n",
       "nodes.csv: line 3: sn: \"n1\" is on line 2 too"},
      {header + "n1,64000,262144,2,\n", "nodes.csv: line 2: model: empty"},
      {header + "n1,64000,262144,2,V100 32\n", "nodes.csv: line 2: model: "},
      {header + "n1,64000,2,T4\n", "nodes.csv: line 2: 4 fields where the header has 5"},
      {header + "n1,64000,262144,0,\n", "no node with GPUs in nodes.csv"},
      {header + std::string(5000, 'n') + ",1,1,1,T4\n", "nodes.csv: line 2: longer than"},
  };
  for (const auto& c : cases) {
    auto nodes = ParseAlibabaNodes(c.text, "nodes.csv");
    ASSERT_FALSE(nodes.has_value()) << c.text.substr(0, 200);
    EXPECT_NE(nodes.error().message().find(c.message), std::string::npos)
        << c.text.substr(0, 200) << " -> " << nodes.error().message();
  }
}

}  // namespace
}  // namespace baton::sim
