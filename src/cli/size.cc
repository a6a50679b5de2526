#include "cli/size.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/submit.h"
#include "cli/table.h"
#include "codec/json_codec.h"
#include "core/quantity.h"
#include "core/sizing.h"

namespace baton::cli {
namespace {

struct SizeFlags {
  std::string model, params, task = "inference", precision = "bf16", optimizer = "adamw",
                             gpu_memory;
  int64_t seq = 2048, batch = 1;
  int zero = 3, lora_rank = 16;
  bool checkpointing = false, list = false, json = false;
};

// A GPU model the job could run on: its memory, the most of them one node has, how many.
struct GpuKind {
  std::string model;
  int64_t memory = 0;
  int per_node = 0;
  int nodes = 0;
  int total = 0;
};

// When no server answers: GPUs as their makers sell them.
const std::vector<GpuKind> kCommonGpus = {
    {"L4-24GB", 24LL << 30, 8, 0, 0},   {"A100-40GB", 40LL << 30, 8, 0, 0},
    {"L40S-48GB", 48LL << 30, 8, 0, 0}, {"A100-80GB", 80LL << 30, 8, 0, 0},
    {"H100-80GB", 80LL << 30, 8, 0, 0}, {"H200-141GB", 141LL << 30, 8, 0, 0},
};

// The server's catalog (its configuration's models, then the built-in ones); the built-in
// catalog alone when no server is set up.
std::vector<ModelShape> Catalog(const Connection& conn) {
  auto api = ApiClient::Connect(conn);
  if (!api) return KnownModels();
  auto body = (*api)->Call("GET", "/v1/models");
  if (!body) return KnownModels();
  auto models = codec::DecodeModelList(*body);
  return models ? *models : KnownModels();
}

Result<SizingRequest> RequestOf(const SizeFlags& f, const std::vector<ModelShape>& catalog) {
  SizingRequest r;
  if (f.model.empty() == f.params.empty())
    return Err(InvalidArgument("size: name a --model (baton size --list) or --params (7B)"));
  if (!f.model.empty()) {
    const ModelShape* m = FindModel(f.model, catalog);
    if (m == nullptr) {
      return Err(InvalidArgument("--model: no model \"" + f.model.substr(0, 64) +
                                 "\" in the catalog (baton size --list); --params 7B sizes "
                                 "any model by its parameter count"));
    }
    r.model = *m;
  } else {
    ASSIGN_OR_RETURN(double params, ParseParams(f.params, "--params"));
    r.model = ShapeFor(params);
  }
  ASSIGN_OR_RETURN(r.task, ParseModelTask(f.task, "--task"));
  ASSIGN_OR_RETURN(r.precision, ParsePrecision(f.precision, "--precision"));
  ASSIGN_OR_RETURN(r.optimizer, ParseOptimizer(f.optimizer, "--optimizer"));
  r.seq = f.seq;
  r.batch = f.batch;
  r.zero = f.zero;
  r.lora_rank = f.lora_rank;
  r.checkpointing = f.checkpointing;
  RETURN_IF_ERROR(ValidateSizing(r));
  return r;
}

// The GPU models of the cluster's nodes; kCommonGpus when no server is set up.
Result<std::vector<GpuKind>> ClusterGpus(const Connection& conn, bool* common) {
  *common = false;
  auto api = ApiClient::Connect(conn);
  if (!api) {
    *common = true;
    return kCommonGpus;
  }
  ASSIGN_OR_RETURN(std::string body, (*api)->Call("GET", "/v1/nodes"));
  ASSIGN_OR_RETURN(std::vector<NodeStatus> nodes, codec::DecodeNodeList(body));
  std::vector<const NodeInfo*> infos;
  for (const NodeStatus& n : nodes) infos.push_back(&n.info);
  std::vector<GpuKind> out;
  for (const auto& [model, k] : CountGpuModels(infos)) {
    out.push_back({model, k.memory, k.per_node, k.nodes, k.total});
  }
  std::sort(out.begin(), out.end(), [](const GpuKind& a, const GpuKind& b) {
    return a.memory != b.memory ? a.memory < b.memory : a.model < b.model;
  });
  return out;
}

void PrintRequest(const SizingRequest& r) {
  const ModelShape& m = r.model;
  std::cout << m.name << ": " << FormatParams(m.params) << " parameters, " << m.layers
            << " layers, hidden " << m.hidden << ", " << m.heads << " heads (" << m.kv_heads
            << " KV), vocabulary " << m.vocab << "\n";
  std::cout << ModelTaskName(r.task) << " in " << PrecisionName(r.precision);
  if (r.task != ModelTask::kInference) {
    std::cout << ", " << OptimizerName(r.optimizer) << ", ZeRO-" << r.zero
              << (r.checkpointing ? ", activation checkpointing" : "");
    if (r.task == ModelTask::kLora || r.task == ModelTask::kQlora)
      std::cout << ", adapters of rank " << r.lora_rank;
  }
  std::cout << "; " << r.seq << " tokens x " << r.batch << " sequence" << (r.batch == 1 ? "" : "s")
            << " per GPU\n\n";
}

void PrintBreakdown(const MemoryBreakdown& b, int gpus) {
  std::cout << "memory per GPU on " << gpus << " GPU" << (gpus == 1 ? "" : "s") << ":\n";
  Table t({"  PART", "BYTES"});
  for (const auto& [name, v] :
       {std::pair{"  weights", b.weights}, std::pair{"  gradients", b.gradients},
        std::pair{"  optimizer state", b.optimizer}, std::pair{"  activations", b.activations},
        std::pair{"  KV cache", b.kv_cache}, std::pair{"  overhead", b.overhead},
        std::pair{"  total", b.total()}}) {
    t.Add({name, FormatSize(v)});
  }
  t.Print(std::cout);
}

std::string BreakdownJson(const MemoryBreakdown& b) {
  return "{\"weights\":" + std::to_string(b.weights) +
         ",\"gradients\":" + std::to_string(b.gradients) +
         ",\"optimizer\":" + std::to_string(b.optimizer) +
         ",\"activations\":" + std::to_string(b.activations) +
         ",\"kv_cache\":" + std::to_string(b.kv_cache) +
         ",\"overhead\":" + std::to_string(b.overhead) + ",\"total\":" + std::to_string(b.total()) +
         "}";
}

int List(const std::vector<ModelShape>& catalog) {
  Table t({"MODEL", "PARAMS", "LAYERS", "HIDDEN", "HEADS", "KV HEADS", "VOCAB"});
  for (const ModelShape& m : catalog) {
    t.Add({m.name, FormatParams(m.params), std::to_string(m.layers), std::to_string(m.hidden),
           std::to_string(m.heads), std::to_string(m.kv_heads), std::to_string(m.vocab)});
  }
  t.Print(std::cout);
  return 0;
}

int Size(const Connection& conn, const SizeFlags& f) {
  const bool builtin = !f.list && (f.model.empty() || FindModel(f.model) != nullptr);
  const std::vector<ModelShape> catalog = builtin ? KnownModels() : Catalog(conn);
  if (f.list) return List(catalog);
  auto r = RequestOf(f, catalog);
  if (!r) return Usage(r.error());
  std::vector<GpuKind> kinds;
  bool common = false;
  if (!f.gpu_memory.empty()) {
    auto mem = ParseSize(f.gpu_memory, "--gpu-memory");
    if (!mem) return Usage(mem.error());
    kinds.push_back({f.gpu_memory, *mem, 8, 0, 0});
  } else {
    auto found = ClusterGpus(conn, &common);
    if (!found) return Fail(found.error());
    kinds = std::move(*found);
  }
  std::vector<std::pair<const GpuKind*, std::optional<int>>> fits;
  for (const GpuKind& k : kinds) fits.emplace_back(&k, FewestGpus(*r, k.memory, k.per_node));
  if (f.json) {
    std::string out = "{\"model\":" + codec::EncodeString(r->model.name) +
                      ",\"params\":" + std::to_string(static_cast<int64_t>(r->model.params)) +
                      ",\"per_gpu_on_one\":" + BreakdownJson(EstimateMemory(*r, 1)) + ",\"gpus\":[";
    for (size_t i = 0; i < fits.size(); ++i) {
      const auto& [k, n] = fits[i];
      out += std::string(i ? "," : "") + "{\"model\":" + codec::EncodeString(k->model) +
             ",\"memory_bytes\":" + std::to_string(k->memory) +
             ",\"fewest_gpus\":" + (n ? std::to_string(*n) : "null") +
             ",\"nodes\":" + (n ? std::to_string((*n + k->per_node - 1) / k->per_node) : "null") +
             ",\"per_gpu\":" + (n ? BreakdownJson(EstimateMemory(*r, *n)) : "null") + "}";
    }
    std::cout << out << "]}\n";
    return 0;
  }
  PrintRequest(*r);
  PrintBreakdown(EstimateMemory(*r, 1), 1);
  std::cout << "\n";
  if (kinds.empty()) {
    std::cout << "the cluster has no GPUs (--gpu-memory 80GiB sizes for a GPU of that size)\n";
    return 0;
  }
  if (common) std::cout << "no server here: sizes for common GPUs\n";
  Table t({"GPU", "MEMORY", "FEWEST GPUS", "NODES", "PER GPU", "IN CLUSTER"});
  for (const auto& [k, n] : fits) {
    std::string have = "-";
    if (!common && f.gpu_memory.empty()) {
      have = std::to_string(k->total) + " on " + std::to_string(k->nodes) +
             (k->nodes == 1 ? " node" : " nodes");
    }
    std::string fewest = n ? std::to_string(*n) : "does not fit";
    if (n && !have.starts_with("-") && *n > k->total)
      fewest += " (more than the " + std::to_string(k->total) + " here)";
    t.Add({k->model, FormatSize(k->memory), fewest,
           n ? std::to_string((*n + k->per_node - 1) / k->per_node) : "-",
           n ? FormatSize(EstimateMemory(*r, *n).total()) : "-", have});
  }
  t.Print(std::cout);
  return 0;
}

}  // namespace

void AddSizeCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  auto f = std::make_shared<SizeFlags>();
  CLI::App* sub = app.add_subcommand(
      "size", "GPU memory a model needs to serve or train, and the fewest GPUs that hold it");
  AddConnectionFlags(sub, *conn);
  sub->add_option("--model", f->model, "a model of the catalog, e.g. Llama-3-8B (see --list)");
  sub->add_option("--params", f->params, "or its parameter count: 7B, 70b, 1.5T, 125M");
  sub->add_option("--task", f->task, "inference (default), finetune, lora, qlora or pretrain");
  sub->add_option("--precision", f->precision, "fp32, bf16 (default), fp16, fp8, int8 or int4");
  sub->add_option("--seq", f->seq, "tokens per sequence (default 2048)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  sub->add_option("--batch", f->batch, "sequences per GPU at once (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{100'000}));
  sub->add_option("--optimizer", f->optimizer, "training: adamw (default), sgd or adafactor");
  sub->add_option("--zero", f->zero,
                  "training: states sharded over GPUs: 0 none (DDP), 1 optimizer, 2 + "
                  "gradients, 3 + weights (FSDP; default)")
      ->check(CLI::Range(0, 3));
  sub->add_option("--lora-rank", f->lora_rank, "lora, qlora: adapter rank (default 16)")
      ->check(CLI::Range(1, 4096));
  sub->add_flag("--checkpointing", f->checkpointing,
                "training: activation checkpointing (recompute each layer in the backward pass)");
  sub->add_option("--gpu-memory", f->gpu_memory,
                  "size for GPUs of this memory (e.g. 80GiB) instead of the cluster's");
  sub->add_flag("--list", f->list, "the catalog of models");
  sub->add_flag("--json", f->json, "print JSON");
  sub->callback([=] { *exit_code = Size(*conn, *f); });
}

}  // namespace baton::cli
