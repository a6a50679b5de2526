// `baton size` through the real binary (issue 17): the memory a model needs and the fewest
// GPUs of each model in the cluster that hold it, from the nodes the server knows.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

TEST(Size, SizesAModelForTheClustersGpus) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "4xA100-40GB"});
  ASSERT_TRUE(NodesReady(*baton.Client(), 1));

  // 140 GB of bf16 weights: four 40 GB GPUs, as practitioners serve it.
  CliResult r = RunCli(baton, {"size", "--model", "Llama-2-70B"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Llama-2-70B: 68.98B parameters, 80 layers, hidden 8192, 64 heads (8 KV)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("weights          128.5GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("A100-40GB  40GiB   4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 on 1 node\n"), std::string::npos) << r.out;

  json::value j = json::parse(RunCli(baton, {"size", "--model", "llama-2-70b", "--json"}).out);
  const json::array& gpus = j.at("gpus").as_array();
  ASSERT_EQ(gpus.size(), 1u) << j;
  EXPECT_EQ(gpus[0].at("model"), "A100-40GB");
  EXPECT_EQ(gpus[0].at("fewest_gpus").as_int64(), 4) << j;
  EXPECT_LE(gpus[0].at("per_gpu").at("total").as_int64(), int64_t{40} << 30) << j;

  // More than the cluster has is said so; a full fine-tune without sharding never fits.
  r = RunCli(baton, {"size", "--params", "405B"});
  EXPECT_NE(r.out.find("(more than the 4 here)"), std::string::npos) << r.out;
  r = RunCli(baton, {"size", "--model", "Llama-2-13B", "--task", "finetune", "--zero", "0"});
  EXPECT_NE(r.out.find("does not fit"), std::string::npos) << r.out;

  r = RunCli(baton,
             {"size", "--model", "Llama-2-70B", "--task", "pretrain", "--precision", "int4"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("baton: precision int4: pretrain trains in fp32, bf16 or fp16"),
            std::string::npos)
      << r.out;
  r = RunCli(baton, {"size"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("baton: size: name a --model (baton size --list) or --params (7B)"),
            std::string::npos)
      << r.out;
}

// `baton submit --model`: the GPUs and GPU memory not given come from the estimate, `baton
// show` says how; a model of the configuration is known to `baton size` and to submit.
TEST(Size, SubmitByModelFillsTheGpusAndShowSaysHow) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "models:\n"
                           "  house-13b: {params: 13B, layers: 40, hidden: 5120, heads: 40, "
                           "vocab: 50000}\n";
  BatonProcess baton(dir.path() + "/data", {"--gpus", "4xA100-40GB", "--config", config});
  ASSERT_TRUE(NodesReady(*baton.Client(), 1));

  CliResult r = RunCli(
      baton, {"submit", "--model", "Llama-2-7B", "--task", "finetune", "--", "sleep", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  json::value job = json::parse(RunCli(baton, {"show", id, "--json"}).out);
  EXPECT_EQ(job.at("resources").at("gpus").as_int64(), 4) << job;  // 4 x 40 GB for 16 B/param
  EXPECT_GT(job.at("resources").at("gpu_memory_bytes").as_int64(), int64_t{30} << 30) << job;
  EXPECT_EQ(job.at("model").at("name"), "Llama-2-7B") << job;
  EXPECT_EQ(job.at("model").at("task"), "finetune") << job;
  CliResult shown = RunCli(baton, {"show", id});
  EXPECT_NE(shown.out.find("Llama-2-7B finetune in bf16: 4 GPUs of "), std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("(fewest on A100-40GB)"), std::string::npos) << shown.out;
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);

  // A job file names its model the same way.
  std::string file = dir.path() + "/serve.yaml";
  std::ofstream(file) << "command: [sleep, '0.1']\nmodel: {name: house-13b, seq: 4096}\n";
  r = RunCli(baton, {"submit", "-f", file});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  shown = RunCli(baton, {"show", FirstLine(r.out)});
  EXPECT_NE(shown.out.find("house-13b inference in bf16: 1 GPU of "), std::string::npos)
      << shown.out;
  r = RunCli(baton, {"size", "--model", "house-13b"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("house-13b: 13.00B parameters, 40 layers"), std::string::npos) << r.out;
  EXPECT_NE(RunCli(baton, {"size", "--list"}).out.find("house-13b"), std::string::npos);

  r = RunCli(baton, {"submit", "--model", "Llama-2-70B", "--task", "finetune", "--", "true"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("baton: model: Llama-2-70B finetune in bf16 needs "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("A100-40GB GPUs hold; pool default has 4"), std::string::npos) << r.out;
  r = RunCli(baton, {"submit", "--task", "finetune", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("baton: --task: sizes a job from its model: give --model NAME or --params"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace baton::testing
