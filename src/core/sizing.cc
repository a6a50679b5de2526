#include "core/sizing.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/names.h"

namespace baton {
namespace {

// From each model's config.json on its public model card (Hugging Face): parameter count,
// num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim where it
// is not hidden / heads, vocab_size.
const std::vector<ModelShape> kCatalog = {
    {"GPT-2", 124.44e6, 12, 768, 12, 12, 0, 50257},
    {"GPT-2-XL", 1.558e9, 48, 1600, 25, 25, 0, 50257},
    {"Gemma-2B", 2.51e9, 18, 2048, 8, 1, 256, 256000},
    {"Phi-3-mini", 3.82e9, 32, 3072, 32, 32, 0, 32064},
    {"Llama-2-7B", 6.74e9, 32, 4096, 32, 32, 0, 32000},
    {"Falcon-7B", 7.22e9, 32, 4544, 71, 1, 0, 65024},
    {"Mistral-7B", 7.24e9, 32, 4096, 32, 8, 0, 32000},
    {"Qwen2-7B", 7.62e9, 28, 3584, 28, 4, 0, 152064},
    {"Llama-3-8B", 8.03e9, 32, 4096, 32, 8, 0, 128256},
    {"Llama-3.1-8B", 8.03e9, 32, 4096, 32, 8, 0, 128256},
    {"Gemma-7B", 8.54e9, 28, 3072, 16, 16, 256, 256000},
    {"Llama-2-13B", 13.02e9, 40, 5120, 40, 40, 0, 32000},
    {"Falcon-40B", 41.8e9, 60, 8192, 128, 8, 0, 65024},
    {"Mixtral-8x7B", 46.7e9, 32, 4096, 32, 8, 0, 32000},
    {"Llama-2-70B", 68.98e9, 80, 8192, 64, 8, 0, 32000},
    {"Llama-3-70B", 70.55e9, 80, 8192, 64, 8, 0, 128256},
    {"Llama-3.1-70B", 70.55e9, 80, 8192, 64, 8, 0, 128256},
    {"Qwen2-72B", 72.71e9, 80, 8192, 64, 8, 0, 152064},
    {"Mixtral-8x22B", 140.6e9, 56, 6144, 48, 8, 0, 32000},
    {"Llama-3.1-405B", 405.9e9, 126, 16384, 128, 8, 0, 128256},
};

constexpr int64_t kGiB = int64_t{1} << 30;
// The CUDA context, cuBLAS and NCCL workspaces of one process, before any tensor.
constexpr int64_t kContextBytes = kGiB;
// What the caching allocator loses to fragmentation, as a share of what tensors take.
constexpr double kFragmentation = 0.10;
// NF4 weights with double-quantised constants: 4.127 bits per parameter (QLoRA, sec. 3).
constexpr double kNf4Bytes = 4.127 / 8;
// Per layer and token, in 16-bit: what one transformer layer keeps for its backward pass with
// flash attention (Korthikanti et al. 2022, eq. 1 without the 5as/h attention-score term).
constexpr double kActivationBytesPerHidden = 34;

bool EqualFold(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

constexpr std::array<std::string_view, 5> kTaskNames = {"inference", "finetune", "lora", "qlora",
                                                        "pretrain"};
constexpr std::array<std::string_view, 6> kPrecisionNames = {"fp32", "bf16", "fp16",
                                                             "fp8",  "int8", "int4"};
constexpr std::array<std::string_view, 3> kOptimizerNames = {"adamw", "sgd", "adafactor"};

double WeightBytes(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return 4;
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1;
    case Precision::kInt4:
      return 0.5;
  }
  return 2;
}

// Optimizer state per trained parameter. Mixed precision keeps an fp32 master copy of the
// weights beside the 16-bit ones (ZeRO, Rajbhandari et al. 2020, sec. 3.1: 12 bytes for Adam).
double OptimizerBytes(Optimizer o, bool mixed) {
  double master = mixed ? 4 : 0;
  switch (o) {
    case Optimizer::kAdamW:
      return master + 8;  // first and second moments, fp32
    case Optimizer::kSgd:
      return master + 4;  // momentum
    case Optimizer::kAdafactor:
      return master;  // factored second moments: rows + columns, negligible
  }
  return master + 8;
}

// LoRA adapters of rank r on the query, key, value and output projections of every layer.
double AdapterParams(const ModelShape& m, int rank) {
  double kv = static_cast<double>(m.kv_heads) * HeadDim(m);
  double q_out = static_cast<double>(m.heads) * HeadDim(m);
  double per_layer = rank * ((m.hidden + q_out) + 2 * (m.hidden + kv) + (q_out + m.hidden));
  return per_layer * m.layers;
}

bool Trains(ModelTask t) { return t != ModelTask::kInference; }

}  // namespace

int HeadDim(const ModelShape& m) {
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}

const std::vector<ModelShape>& KnownModels() { return kCatalog; }

const ModelShape* FindModel(std::string_view name, const std::vector<ModelShape>& extra) {
  for (const auto* list : {&extra, &kCatalog}) {
    for (const ModelShape& m : *list) {
      if (EqualFold(m.name, name)) return &m;
    }
  }
  return nullptr;
}

ModelShape ShapeFor(double params) {
  // The shape donors: plain dense models with the common proportions (Llama's, GPT-2's for
  // the small), not multi-query or mixture-of-experts ones.
  const ModelShape* nearest = &kCatalog.front();
  for (const ModelShape& m : kCatalog) {
    if (!m.name.starts_with("Llama-") && !m.name.starts_with("GPT-2")) continue;
    if (std::abs(std::log(m.params / params)) < std::abs(std::log(nearest->params / params)))
      nearest = &m;
  }
  ModelShape shape = *nearest;
  shape.params = params;
  shape.name = "shaped as " + nearest->name;
  return shape;
}

Result<double> ParseParams(std::string_view text, std::string_view field) {
  auto bad = [&] {
    return Err(InvalidArgument(std::string(field) + ": \"" + std::string(text.substr(0, 32)) +
                               "\" is not a parameter count (7B, 70b, 1.5T, 125M)"));
  };
  if (text.empty()) return bad();
  double scale = 1;
  std::string_view digits = text;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K':
      scale = 1e3;
      break;
    case 'M':
      scale = 1e6;
      break;
    case 'B':
      scale = 1e9;
      break;
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
  }
  if (scale != 1) digits.remove_suffix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) return bad();
  value *= scale;
  if (!(value >= 1e3 && value <= 1e14)) {
    return Err(InvalidArgument(std::string(field) + ": " + std::string(text.substr(0, 32)) +
                               " parameters is outside 1 thousand to 100 trillion"));
  }
  return value;
}

std::string FormatParams(double p) {
  char buf[32];
  if (p >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2fB", p / 1e9);
  } else {
    std::snprintf(buf, sizeof buf, "%.0fM", p / 1e6);
  }
  return buf;
}

std::string_view ModelTaskName(ModelTask t) { return EnumName(kTaskNames, t); }
std::string_view PrecisionName(Precision p) { return EnumName(kPrecisionNames, p); }
std::string_view OptimizerName(Optimizer o) { return EnumName(kOptimizerNames, o); }
Result<ModelTask> ParseModelTask(std::string_view text, std::string_view field) {
  return ParseEnum<ModelTask>(kTaskNames, field, text, NameCase::kAny);
}
Result<Precision> ParsePrecision(std::string_view text, std::string_view field) {
  return ParseEnum<Precision>(kPrecisionNames, field, text, NameCase::kAny);
}
Result<Optimizer> ParseOptimizer(std::string_view text, std::string_view field) {
  return ParseEnum<Optimizer>(kOptimizerNames, field, text, NameCase::kAny);
}

Status ValidateSizing(const SizingRequest& r) {
  const ModelShape& m = r.model;
  if (!(m.params >= 1e3 && m.params <= 1e14))
    return InvalidArgument("params: must be between 1 thousand and 100 trillion");
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.kv_heads < 1 || m.vocab < 1 ||
      m.layers > 100'000 || m.hidden > 1'000'000 || m.heads > 100'000 || m.kv_heads > m.heads ||
      m.vocab > 100'000'000 || m.head_dim < 0 || m.head_dim > 100'000) {
    return InvalidArgument("model " + m.name +
                           ": layers, hidden, heads, kv_heads (at most heads) and vocab must be "
                           "positive");
  }
  if (r.seq < 1 || r.seq > 10'000'000) return InvalidArgument("seq: must be 1 to 10,000,000");
  if (r.batch < 1 || r.batch > 100'000) return InvalidArgument("batch: must be 1 to 100,000");
  if (r.zero < 0 || r.zero > 3) return InvalidArgument("zero: must be 0, 1, 2 or 3");
  if (r.lora_rank < 1 || r.lora_rank > 4096) return InvalidArgument("lora rank: must be 1 to 4096");
  bool full = r.task == ModelTask::kFinetune || r.task == ModelTask::kPretrain;
  bool high = r.precision == Precision::kFp32 || r.precision == Precision::kBf16 ||
              r.precision == Precision::kFp16;
  if (full && !high) {
    return InvalidArgument("precision " + std::string(PrecisionName(r.precision)) + ": " +
                           std::string(ModelTaskName(r.task)) +
                           " trains in fp32, bf16 or fp16 (qlora trains adapters on a 4-bit "
                           "model; lora on an int8 one)");
  }
  if (r.task == ModelTask::kLora && r.precision == Precision::kInt4)
    return InvalidArgument("precision int4: that is qlora (--task qlora)");
  return Status::Ok();
}

MemoryBreakdown EstimateMemory(const SizingRequest& r, int gpus) {
  const ModelShape& m = r.model;
  const double n = std::max(gpus, 1);
  const double wb = WeightBytes(r.precision);
  const double tokens = static_cast<double>(r.seq) * static_cast<double>(r.batch);
  MemoryBreakdown out;
  auto bytes = [](double v) { return static_cast<int64_t>(std::llround(v)); };
  if (!Trains(r.task)) {
    // Tensor parallel: the weights and the KV cache split over the GPUs.
    const double kv_bytes = r.precision == Precision::kFp32 ? 4 : 2;
    out.weights = bytes(m.params * wb / n);
    out.kv_cache = bytes(2.0 * m.layers * m.kv_heads * HeadDim(m) * tokens * kv_bytes / n);
    // A forward pass's working set: a few hidden-sized tensors per token in 16-bit, and the
    // last position's logits in fp32.
    out.activations = bytes(tokens * 4.0 * m.hidden * 2 + r.batch * 4.0 * m.vocab);
  } else {
    const bool mixed = r.precision != Precision::kFp32;
    const double adapter_bytes = mixed ? 2 : 4;
    double weights = 0, trained = 0, grad_bytes = 0;
    if (r.task == ModelTask::kLora || r.task == ModelTask::kQlora) {
      trained = AdapterParams(m, r.lora_rank);
      const double base = r.task == ModelTask::kQlora ? kNf4Bytes : wb;
      weights = m.params * base + trained * adapter_bytes;
      grad_bytes = adapter_bytes;
    } else {
      trained = m.params;
      weights = m.params * wb;
      grad_bytes = wb;
    }
    out.weights = bytes(weights / (r.zero >= 3 ? n : 1));
    out.gradients = bytes(trained * grad_bytes / (r.zero >= 2 ? n : 1));
    out.optimizer = bytes(trained * OptimizerBytes(r.optimizer, mixed) / (r.zero >= 1 ? n : 1));
    const double act_scale = r.precision == Precision::kFp32 ? 2 : 1;
    // With checkpointing, each layer keeps its 16-bit input, and one layer at a time is
    // recomputed whole (Korthikanti et al. 2022, sec. 5: 2sbh per layer).
    const double per_token = r.checkpointing
                                 ? (2.0 * m.layers + kActivationBytesPerHidden) * m.hidden
                                 : kActivationBytesPerHidden * m.layers * m.hidden;
    out.activations = bytes(per_token * act_scale * tokens + 4.0 * tokens * m.vocab);  // + logits
  }
  out.overhead = kContextBytes + bytes(kFragmentation * static_cast<double>(out.total()));
  return out;
}

std::vector<int> GpuCounts(int gpus_per_node, int max_gpus) {
  std::vector<int> out;
  gpus_per_node = std::max(gpus_per_node, 1);
  for (int g = 1; g < gpus_per_node && g <= max_gpus; g *= 2) out.push_back(g);
  for (int g = gpus_per_node; g <= max_gpus; g += gpus_per_node) out.push_back(g);
  return out;
}

std::optional<int> FewestGpus(const SizingRequest& r, int64_t memory_per_gpu, int gpus_per_node,
                              int max_gpus) {
  for (int g : GpuCounts(gpus_per_node, max_gpus)) {
    if (EstimateMemory(r, g).total() <= memory_per_gpu) return g;
  }
  return std::nullopt;
}

}  // namespace baton
