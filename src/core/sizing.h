// LLM-aware sizing: how much GPU memory a transformer needs per GPU to serve or train, and
// the fewest GPUs of a given size that hold it. Pure arithmetic over a model's shape (from a
// catalog of well-known open models, or a parameter count) and the job's task, precision,
// sequence length, batch, optimizer and ZeRO stage. The formulas and their sources are in
// docs/scheduling.md#llm-aware-sizing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace baton {

// A decoder-only transformer's shape, from its public model card (config.json).
struct ModelShape {
  std::string name;
  double params = 0;  // every parameter (all experts of a mixture of experts)
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // grouped-query attention: fewer key/value heads than query heads
  int head_dim = 0;  // 0: hidden / heads (Gemma's are wider)
  int64_t vocab = 0;
  bool operator==(const ModelShape&) const = default;
};

// A head's width: `head_dim`, else hidden / heads.
int HeadDim(const ModelShape& m);

// The built-in catalog, smallest first.
const std::vector<ModelShape>& KnownModels();
// By name, ignoring case; null when the catalog has none.
const ModelShape* FindModel(std::string_view name, const std::vector<ModelShape>& extra = {});
// A model of `params` parameters with the shape (for activations and the KV cache) of the
// Llama or GPT-2 of the catalog nearest in size; its name says so ("shaped as Llama-2-7B").
ModelShape ShapeFor(double params);
// "7B", "70b", "1.5T", "125M", "350k", or a plain number; 1 thousand to 100 trillion.
// FormatParams writes "6.74B", "124M".
Result<double> ParseParams(std::string_view text, std::string_view field);
std::string FormatParams(double params);

enum class ModelTask { kInference, kFinetune, kLora, kQlora, kPretrain };
enum class Precision { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4 };
enum class Optimizer { kAdamW, kSgd, kAdafactor };
std::string_view ModelTaskName(ModelTask t);
std::string_view PrecisionName(Precision p);
std::string_view OptimizerName(Optimizer o);
Result<ModelTask> ParseModelTask(std::string_view text, std::string_view field);
Result<Precision> ParsePrecision(std::string_view text, std::string_view field);
Result<Optimizer> ParseOptimizer(std::string_view text, std::string_view field);

struct SizingRequest {
  ModelShape model;
  ModelTask task = ModelTask::kInference;
  Precision precision = Precision::kBf16;
  int64_t seq = 2048;  // tokens per sequence (inference: prompt and output together)
  int64_t batch = 1;   // sequences per GPU at once (training: the micro-batch of each rank)
  Optimizer optimizer = Optimizer::kAdamW;
  // Training: which model states data-parallel ranks shard (ZeRO, FSDP): 0 none (DDP), 1 the
  // optimizer's, 2 and the gradients, 3 and the weights (FSDP full shard).
  int zero = 3;
  int lora_rank = 16;  // LoRA and QLoRA adapters on the attention projections
  // Training: activation (gradient) checkpointing: each layer keeps only its input and
  // recomputes the rest in the backward pass.
  bool checkpointing = false;
};

// Bytes each GPU holds when the job runs on `gpus` GPUs.
struct MemoryBreakdown {
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;
  int64_t kv_cache = 0;
  int64_t overhead = 0;  // CUDA context and allocator fragmentation
  int64_t total() const {
    return weights + gradients + optimizer + activations + kv_cache + overhead;
  }
};

// Checks the request (a precision the task cannot train in, a shape without parameters).
Status ValidateSizing(const SizingRequest& r);
// REQUIRES: ValidateSizing(r) is ok, gpus >= 1.
MemoryBreakdown EstimateMemory(const SizingRequest& r, int gpus);

// The GPU counts a job of this kind would ask for, in order: 1, 2, 4, ... up to a node's
// `gpus_per_node`, then whole nodes (2, 3, ... nodes), at most `max_gpus`.
std::vector<int> GpuCounts(int gpus_per_node, int max_gpus);
// The fewest of GpuCounts on GPUs of `memory_per_gpu` bytes that hold it; none when even
// `max_gpus` cannot (training without weight sharding never gets smaller per GPU).
std::optional<int> FewestGpus(const SizingRequest& r, int64_t memory_per_gpu, int gpus_per_node,
                              int max_gpus = 1024);

}  // namespace baton
