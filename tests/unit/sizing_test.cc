// LLM-aware sizing (core/sizing.h), pinned to published figures: mixed-precision AdamW holds
// 16 bytes per parameter before activations (ZeRO), a 7B model's bf16 weights are 14 GB, the
// KV cache of Llama-2-7B is 0.5 MiB per token and Llama-3-70B's 320 KiB, QLoRA fine-tunes a
// 65B model on one 48 GB GPU, and Llama-2-70B serves in bf16 on two 80 GB GPUs.
#include "core/sizing.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

SizingRequest Of(const char* model, ModelTask task) {
  const ModelShape* m = FindModel(model);
  EXPECT_NE(m, nullptr) << model;
  SizingRequest r;
  if (m != nullptr) r.model = *m;
  r.task = task;
  return r;
}

TEST(Sizing, SevenBillionBf16WeightsAreFourteenGigabytes) {
  SizingRequest r;
  r.model = ShapeFor(*ParseParams("7B", "params"));
  EXPECT_EQ(r.model.name, "shaped as Llama-2-7B");
  ASSERT_TRUE(ValidateSizing(r).ok());
  EXPECT_EQ(EstimateMemory(r, 1).weights, 14'000'000'000);
  r.precision = Precision::kInt4;
  EXPECT_EQ(EstimateMemory(r, 1).weights, 3'500'000'000);
  r.precision = Precision::kInt8;
  EXPECT_EQ(EstimateMemory(r, 2).weights, 3'500'000'000);  // tensor parallel over two
}

TEST(Sizing, MixedPrecisionAdamWHoldsSixteenBytesAParameterAndZeroShardsThem) {
  SizingRequest r = Of("llama-2-7b", ModelTask::kFinetune);
  r.zero = 0;
  const double p = r.model.params;
  MemoryBreakdown one = EstimateMemory(r, 1);
  EXPECT_NEAR(one.weights + one.gradients + one.optimizer, 16 * p, 1);
  EXPECT_NEAR(one.optimizer, 12 * p, 1);
  EXPECT_EQ(EstimateMemory(r, 8).optimizer, one.optimizer);  // DDP: every rank holds all
  r.zero = 1;
  EXPECT_NEAR(EstimateMemory(r, 8).optimizer, 12 * p / 8, 1);
  EXPECT_EQ(EstimateMemory(r, 8).gradients, one.gradients);
  r.zero = 3;
  MemoryBreakdown eight = EstimateMemory(r, 8);
  EXPECT_NEAR(eight.weights + eight.gradients + eight.optimizer, 16 * p / 8, 2);
  EXPECT_EQ(eight.activations, one.activations);  // each rank's own micro-batch
  // fp32 training: no master copy, 4 + 4 + 8 bytes.
  r.zero = 0;
  r.precision = Precision::kFp32;
  MemoryBreakdown full = EstimateMemory(r, 1);
  EXPECT_NEAR(full.weights + full.gradients + full.optimizer, 16 * p, 1);
  r.precision = Precision::kBf16;
  r.optimizer = Optimizer::kSgd;
  EXPECT_NEAR(EstimateMemory(r, 1).optimizer, 8 * p, 1);
}

TEST(Sizing, TheKvCacheIsPublishedSizesPerToken) {
  SizingRequest r = Of("Llama-2-7B", ModelTask::kInference);
  r.seq = 4096;
  EXPECT_EQ(EstimateMemory(r, 1).kv_cache, 2 * kGiB);  // 0.5 MiB a token
  r = Of("Llama-3-70B", ModelTask::kInference);
  r.seq = 1;
  EXPECT_EQ(EstimateMemory(r, 1).kv_cache, 320 * 1024);  // grouped-query attention, 8 KV heads
  r.seq = 1000;
  r.batch = 4;
  EXPECT_EQ(EstimateMemory(r, 2).kv_cache, 320 * 1024 * 4000 / 2);
  // Gemma's heads are 256 wide, not hidden / heads.
  r = Of("Gemma-7B", ModelTask::kInference);
  r.seq = 1;
  EXPECT_EQ(EstimateMemory(r, 1).kv_cache, 2 * 28 * 16 * 256 * 2);
}

TEST(Sizing, FewestGpusMatchesWhatPractitionersRun) {
  constexpr int64_t k80 = 80 * kGiB, k24 = 24 * kGiB, k48 = 48 * kGiB;
  EXPECT_EQ(FewestGpus(Of("Llama-2-7B", ModelTask::kInference), k24, 8), 1);
  EXPECT_EQ(FewestGpus(Of("Llama-2-70B", ModelTask::kInference), k80, 8), 2);
  EXPECT_EQ(FewestGpus(Of("Llama-3.1-405B", ModelTask::kInference), k80, 8), 16);  // two nodes
  // QLoRA (Dettmers et al. 2023): a 65B model on one 48 GB GPU, with gradient checkpointing.
  SizingRequest q;
  q.model = ShapeFor(65e9);
  q.task = ModelTask::kQlora;
  q.checkpointing = true;
  ASSERT_TRUE(ValidateSizing(q).ok());
  EXPECT_EQ(FewestGpus(q, k48, 8), 1);
  EXPECT_GT(EstimateMemory(q, 1).total(), 32 * kGiB);  // NF4 weights alone are ~31 GiB
  // Full fine-tuning of a 7B model (AdamW, bf16, FSDP) does not fit one 80 GB GPU.
  SizingRequest ft = Of("Llama-2-7B", ModelTask::kFinetune);
  EXPECT_GT(EstimateMemory(ft, 1).total(), k80);
  EXPECT_EQ(FewestGpus(ft, k80, 8), 2);
  // Without sharding, more GPUs never make it smaller.
  ft.zero = 0;
  EXPECT_EQ(FewestGpus(ft, k80, 8, 64), std::nullopt);
  EXPECT_EQ(GpuCounts(8, 32), (std::vector<int>{1, 2, 4, 8, 16, 24, 32}));
  EXPECT_EQ(GpuCounts(6, 12), (std::vector<int>{1, 2, 4, 6, 12}));
}

TEST(Sizing, CheckpointingKeepsOnlyEachLayersInput) {
  SizingRequest r = Of("Llama-2-7B", ModelTask::kFinetune);
  const double tokens = 2048;
  const double logits = 4 * tokens * 32000;
  EXPECT_NEAR(EstimateMemory(r, 1).activations, 34 * 32 * 4096 * tokens + logits, 1);
  r.checkpointing = true;
  EXPECT_NEAR(EstimateMemory(r, 1).activations, (2 * 32 + 34) * 4096 * tokens + logits, 1);
}

TEST(Sizing, BadRequestsAreNamed) {
  EXPECT_EQ(ParseParams("70b", "params").value(), 70e9);
  EXPECT_EQ(ParseParams("1.5T", "params").value(), 1.5e12);
  EXPECT_EQ(ParseParams("125M", "params").value(), 125e6);
  EXPECT_EQ(ParseParams("seven", "--params").error().message(),
            "--params: \"seven\" is not a parameter count (7B, 70b, 1.5T, 125M)");
  EXPECT_EQ(ParseParams("10", "--params").error().message(),
            "--params: 10 parameters is outside 1 thousand to 100 trillion");
  EXPECT_EQ(ParseModelTask("train", "--task").error().message(),
            "--task: must be one of inference, finetune, lora, qlora, pretrain (got \"train\")");
  EXPECT_EQ(ParsePrecision("BF16", "--precision").value(), Precision::kBf16);
  SizingRequest r = Of("Llama-2-7B", ModelTask::kFinetune);
  r.precision = Precision::kInt4;
  EXPECT_EQ(ValidateSizing(r).message(),
            "precision int4: finetune trains in fp32, bf16 or fp16 (qlora trains adapters on a "
            "4-bit model; lora on an int8 one)");
  r.task = ModelTask::kLora;
  EXPECT_EQ(ValidateSizing(r).message(), "precision int4: that is qlora (--task qlora)");
  r.precision = Precision::kInt8;
  EXPECT_TRUE(ValidateSizing(r).ok());
  EXPECT_EQ(FindModel("no-such-model"), nullptr);
  ModelShape mine{.name = "house-13b",
                  .params = 13e9,
                  .layers = 40,
                  .hidden = 5120,
                  .heads = 40,
                  .kv_heads = 40,
                  .vocab = 50000};
  const std::vector<ModelShape> configured = {mine};
  ASSERT_NE(FindModel("HOUSE-13B", configured), nullptr);
  EXPECT_EQ(*FindModel("HOUSE-13B", configured), mine);
}

}  // namespace
}  // namespace baton
