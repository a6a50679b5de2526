// Autoscaling's provider protocol (docs/operations.md "Elastic capacity"): the request on the
// provider's stdin and the nodes its answer names.
#include "codec/internal/json_util.h"
#include "codec/json_codec.h"

namespace baton::codec {

using namespace internal;

namespace {

constexpr size_t kAnswerNodes = 10'000;  // nodes an answer may name

json::object NodeObject(const ProvidedNode& n) {
  json::object o;
  o["name"] = n.name;
  if (!n.id.empty()) o["id"] = n.id;
  if (!n.template_name.empty()) o["template"] = n.template_name;
  return o;
}

}  // namespace

std::string EncodeProviderRequest(const ProviderRequest& r) {
  json::object o;
  o["verb"] = ProviderVerbName(r.verb);
  if (r.verb == ProviderVerb::kResume) {
    const NodeTemplate& t = r.node_template;
    o["template"] = json::object{{"name", t.name},
                                 {"pool", t.pool},
                                 {"gpus", t.gpu_spec},
                                 {"cpus", t.cpus},
                                 {"memory_bytes", t.memory_bytes},
                                 {"price_per_hour", t.price_per_hour},
                                 {"spot", t.spot}};
    o["count"] = r.nodes.size();
    json::array jobs;
    for (JobId id : r.jobs) jobs.push_back(id.value);
    o["jobs"] = std::move(jobs);
  }
  if (r.verb != ProviderVerb::kList) {
    json::array nodes;
    for (const ProvidedNode& n : r.nodes) nodes.push_back(NodeObject(n));
    o["nodes"] = std::move(nodes);
  }
  if (!r.reason.empty()) o["reason"] = r.reason;
  return json::serialize(o) + "\n";
}

Result<std::vector<ProvidedNode>> DecodeProviderAnswer(std::string_view text, ProviderVerb verb) {
  std::vector<ProvidedNode> out;
  const bool blank = text.find_first_not_of(" \t\r\n") == std::string_view::npos;
  if (blank) {
    if (verb == ProviderVerb::kSuspend) return out;
    return Err(InvalidArgument("answered nothing: a " + std::string(ProviderVerbName(verb)) +
                               " must answer {\"nodes\": [...]} on its stdout"));
  }
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* root, GetObject(v, "answer"));
  const json::value* list = Find(*root, "nodes");
  if (list == nullptr) {
    if (verb == ProviderVerb::kSuspend) return out;
    return Err(InvalidArgument("nodes: missing (the nodes it is starting, or has)"));
  }
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*list, "nodes"));
  if (a->size() > kAnswerNodes)
    return Err(InvalidArgument("nodes: more than " + std::to_string(kAnswerNodes)));
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string field = "nodes[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(const json::object* o, GetObject((*a)[i], field));
    ProvidedNode n;
    if (Find(*o, "name") == nullptr) return Err(InvalidArgument(field + ".name: missing"));
    RETURN_IF_ERROR(Read(*o, "name", &n.name, Str(64)));
    if (!IsValidNodeName(n.name))
      return Err(InvalidArgument(field + ".name: 1-64 of letters, digits, '.', '_', '-'"));
    RETURN_IF_ERROR(Read(*o, "id", &n.id, Str(256)));
    RETURN_IF_ERROR(Read(*o, "template", &n.template_name, Str(64)));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace baton::codec
