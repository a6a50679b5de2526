#include <algorithm>

#include "sim/replay.h"

namespace baton::sim::replay {

NodeInfo Replay::TemplateNode(const NodeTemplate& t, const std::string& name) const {
  NodeInfo info;
  info.name = name;
  if (auto spec = ParseGpuSpec(t.gpu_spec)) {
    info.gpus = SimulatedGpus(*spec, name);
    info.topology = spec->topology;
  }
  info.cpus = t.cpus > 0 ? t.cpus : 256;
  info.memory_bytes = t.memory_bytes > 0 ? t.memory_bytes : int64_t{2} << 40;
  info.gpu_backend = GpuBackendKind::kSimulated;
  info.pool = t.pool;
  info.spot = t.spot;
  return info;
}

void Replay::AnswerCalls(const std::vector<control::ProviderCall>& calls) {
  for (const control::ProviderCall& call : calls) {
    control::ProviderAnswer answer{.call = call.id};
    switch (call.request.verb) {
      case ProviderVerb::kList:  // what is booting, and the autoscaled nodes up
        for (const Boot& b : boots_) {
          answer.nodes.push_back(
              {.name = b.name, .id = "sim-" + b.name, .template_name = b.template_name});
        }
        for (const auto& [name, template_name] : booted_) {
          if (agents_[agent_of_.at(name)].up)
            answer.nodes.push_back(
                {.name = name, .id = "sim-" + name, .template_name = template_name});
        }
        break;
      case ProviderVerb::kResume:
        for (const ProvidedNode& n : call.request.nodes) {
          boots_.push_back(Boot{.at = now_ + sim_options_.boot_delay,
                                .name = n.name,
                                .template_name = call.request.node_template.name});
          answer.nodes.push_back(
              {.name = n.name, .id = "sim-" + n.name, .template_name = n.template_name});
          ++resumed_;
          LogNode("resume", n.name);
        }
        break;
      case ProviderVerb::kSuspend:
        for (const ProvidedNode& n : call.request.nodes) {
          std::erase_if(boots_, [&](const Boot& b) { return b.name == n.name; });
          auto it = agent_of_.find(n.name);
          if (it == agent_of_.end() || !agents_[it->second].up) continue;
          Agent& a = agents_[it->second];
          a.up = false;
          a.outbox.clear();
          std::erase_if(parked_, [&](const auto& p) { return p.second.first == it->second; });
          if (const auto t = booted_.find(n.name); t != booted_.end()) {
            if (const NodeTemplate* tmpl = TemplateNamed(t->second))
              total_milli_ -= int64_t{tmpl->gpus} * 1000;
          }
          LogNode("suspend", n.name);
        }
        break;
    }
    Queue(std::move(answer), Pending{.kind = Sent::kProvider, .index = 0});
  }
}

void Replay::BootNodes() {
  std::vector<Boot> due;
  std::erase_if(boots_, [&](const Boot& b) {
    if (b.at > now_) return false;
    due.push_back(b);
    return true;
  });
  for (const Boot& b : due) {
    const NodeTemplate* t = TemplateNamed(b.template_name);
    if (t == nullptr) continue;
    size_t ai;
    if (auto it = agent_of_.find(b.name); it != agent_of_.end()) {
      ai = it->second;
      agents_[ai].up = true;
    } else {
      agents_.push_back(Agent{.name = b.name});
      ai = agents_.size() - 1;
      agent_of_[b.name] = ai;
    }
    booted_[b.name] = b.template_name;
    total_milli_ += int64_t{t->gpus} * 1000;
    LogNode("register", b.name);
    Queue(control::AgentRegister{RegisterRequest{.node = TemplateNode(*t, b.name)}},
          Pending{.kind = Sent::kRegister, .index = ai});
  }
}

}  // namespace baton::sim::replay
