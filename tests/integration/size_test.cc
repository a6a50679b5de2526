// `baton size` through the real binary (issue 17): the memory a model needs and the fewest
// GPUs of each model in the cluster that hold it, from the nodes the server knows.
#include <gtest/gtest.h>

#include <boost/json.hpp>
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
  EXPECT_NE(r.out.find("4 on 1 nodes"), std::string::npos) << r.out;

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

}  // namespace
}  // namespace baton::testing
