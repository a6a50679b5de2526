// `baton size`: LLM-aware sizing (core/sizing.h). For a model of the catalog (--model) or a
// parameter count (--params), a task, precision, sequence length and batch, it prints the
// memory each GPU needs (weights, gradients, optimizer state, activations, KV cache,
// overhead) and the fewest GPUs of each model in the cluster that hold it. Without a server
// it sizes for common GPUs.
#pragma once

#include <memory>

#include "cli/client.h"

namespace CLI {
class App;
}

namespace baton::cli {

void AddSizeCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);

}  // namespace baton::cli
