#include "sched/feasibility.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/quantity.h"

namespace baton::sched {
namespace {

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "8xH100-80GB", or "4xA100-40GB+2xL40S-48GB" for a node of mixed GPUs; "no GPU".
std::string GpuShape(const NodeInfo& n) {
  std::vector<std::pair<std::string, int>> models;
  for (const Gpu& g : n.gpus) {
    auto it = std::find_if(models.begin(), models.end(),
                           [&](const auto& m) { return m.first == g.model; });
    if (it == models.end())
      models.emplace_back(g.model, 1);
    else
      ++it->second;
  }
  if (models.empty()) return "no GPU";
  std::string s;
  for (const auto& [model, count] : models)
    s += (s.empty() ? "" : "+") + std::to_string(count) + "x" + model;
  return s;
}

std::string NodeShape(const NodeInfo& n) {
  return GpuShape(n) + " (" + std::to_string(n.cpus) + " CPUs, " + FormatSize(n.memory_bytes) + ")";
}

// The request's GPUs in words: "10 GPUs of type H100 with 80 GiB".
std::string Gpus(const Resources& r, int64_t milli) {
  std::string s = FormatMilli(milli) + (milli == 1000 ? " GPU" : " GPUs");
  if (!r.gpu_type.empty()) s += " of type " + r.gpu_type;
  if (r.gpu_memory_bytes > 0) s += " with " + FormatSize(r.gpu_memory_bytes);
  return s;
}

// One node's part of a request in words: "4 GPUs of type H100, 32 CPUs".
std::string DescribePart(const Resources& r, int64_t per_node) {
  std::string s = per_node == 0 ? "no GPU" : Gpus(r, per_node);
  if (r.cpus > 0) s += ", " + std::to_string(r.cpus) + " CPUs";
  if (r.memory_bytes > 0) s += ", " + FormatSize(r.memory_bytes) + " memory";
  return s;
}

class Check {
 public:
  // `scope`: what the nodes are, when not the whole pool (" that runs root's jobs").
  Check(std::vector<const NodeInfo*> nodes, const Resources& r, std::string_view pool,
        std::string description, std::string scope)
      : nodes_(std::move(nodes)),
        r_(r),
        pool_(pool),
        has_(std::move(description)),
        scope_(std::move(scope)) {}

  Status Fail(std::string_view field, const std::string& what) const {
    return InvalidArgument(std::string(field) + ": " + what + "; pool " + std::string(pool_) +
                           " has " + has_);
  }

  // Whether some GPU of the pool is of the type and memory asked for; the error otherwise.
  Status GpuKind() const {
    bool typed = false, sized = false, mig = false;
    int64_t largest = 0;
    for (const NodeInfo* n : nodes_) {
      for (const Gpu& g : n->gpus) {
        mig |= !g.mig_profile.empty();
        if (!GpuTypeMatches(g, r_.gpu_type)) continue;
        typed = true;
        largest = std::max(largest, g.memory_bytes);
        sized |= g.memory_bytes >= r_.gpu_memory_bytes;
      }
    }
    if (!typed) {
      std::string what = !r_.gpu_type.empty() ? "no GPU of type " + r_.gpu_type
                         : mig ? "no whole GPU (a MIG instance is asked for by its profile, "
                                 "e.g. --gpu-type 1g.10gb)"
                               : "no GPU";
      return Fail("resources.gpu_type", what);
    }
    if (!sized) {
      return Fail("resources.gpu_memory",
                  "no GPU" + (r_.gpu_type.empty() ? "" : " of type " + r_.gpu_type) + " has " +
                      FormatSize(r_.gpu_memory_bytes) + " (the largest has " + FormatSize(largest) +
                      ")");
    }
    return Status::Ok();
  }

  Status Host() const {
    int cpus = 0;
    int64_t memory = 0;
    for (const NodeInfo* n : nodes_) {
      cpus = std::max(cpus, n->cpus);
      memory = std::max(memory, n->memory_bytes);
    }
    if (cpus < r_.cpus) {
      return Fail("resources.cpus", "no node has " + std::to_string(r_.cpus) +
                                        " CPUs (the largest has " + std::to_string(cpus) + ")");
    }
    if (memory < r_.memory_bytes) {
      return Fail("resources.memory", "no node has " + FormatSize(r_.memory_bytes) +
                                          " of memory (the largest has " + FormatSize(memory) +
                                          ")");
    }
    return Status::Ok();
  }

  // How many of the request's GPUs each node can hold, largest first; nodes short of the
  // request's CPUs or memory hold none.
  std::vector<int> Capacities() const {
    std::vector<int> caps;
    for (const NodeInfo* n : nodes_) {
      if (n->cpus < r_.cpus || n->memory_bytes < r_.memory_bytes) continue;
      int cap = 0;
      for (const Gpu& g : n->gpus) {
        cap += GpuTypeMatches(g, r_.gpu_type) && g.memory_bytes >= r_.gpu_memory_bytes;
      }
      caps.push_back(cap);
    }
    std::sort(caps.rbegin(), caps.rend());
    return caps;
  }

  // The fewest nodes that hold `gpus` whole GPUs split evenly; 0 when none do.
  static int FewestNodes(const std::vector<int>& caps, int64_t gpus) {
    for (int64_t n = 1; n <= static_cast<int64_t>(caps.size()) && n <= gpus; ++n) {
      if (gpus % n == 0 && caps[n - 1] >= gpus / n) return static_cast<int>(n);
    }
    return 0;
  }

  Result<int> Nodes() const {
    std::vector<int> caps = Capacities();
    if (r_.milli_gpus == 0) {
      int want = std::max(r_.nodes, 1);
      if (static_cast<int>(caps.size()) >= want) return want;
      return Err(Fail("resources.nodes", Plural(want, "node", "nodes") + " with " + HostWords(r_) +
                                             " asked, " + std::to_string(caps.size()) + " exist"));
    }
    if (r_.milli_gpus < 1000) return 1;  // GpuKind found a GPU it fits on
    const int64_t gpus = r_.milli_gpus / 1000;
    const int fewest = FewestNodes(caps, gpus);
    if (r_.nodes == 0 && fewest > 0) return fewest;
    if (r_.nodes > 0) {
      const int64_t per = gpus / r_.nodes;
      if (static_cast<int>(caps.size()) >= r_.nodes && caps[r_.nodes - 1] >= per) return r_.nodes;
    }
    int64_t total = 0;
    for (int c : caps) total += c;
    std::string asked = Gpus(r_, r_.milli_gpus);
    if (r_.nodes > 1) {
      asked += " on " + std::to_string(r_.nodes) + " nodes (" + std::to_string(gpus / r_.nodes) +
               " on each)";
    } else if (r_.nodes == 1) {
      asked += " on one node";
    }
    std::string why = "no set of nodes can ever hold " + asked;
    if (fewest > 0) {
      why += " (" +
             (fewest == 1 ? "one node"
                          : std::to_string(gpus / fewest) + " on each of " +
                                std::to_string(fewest) + " nodes") +
             " would fit: --nodes " + std::to_string(fewest) + ")";
    } else {
      why += " (the largest node" + scope_ + " holds " +
             std::to_string(caps.empty() ? 0 : caps.front()) + " of them, " +
             (scope_.empty() ? "the pool " + std::to_string(total) + " in all)"
                             : std::to_string(total) + " in all on such nodes)");
    }
    return Err(Fail("resources.gpus", why));
  }

 private:
  static std::string HostWords(const Resources& r) {
    std::string s = std::to_string(r.cpus) + " CPUs";
    if (r.memory_bytes > 0) s += " and " + FormatSize(r.memory_bytes);
    return s;
  }

  std::vector<const NodeInfo*> nodes_;
  const Resources& r_;
  std::string_view pool_;
  std::string has_;
  std::string scope_;
};

std::vector<const NodeInfo*> InPool(const std::vector<KnownNode>& nodes, std::string_view pool) {
  std::vector<const NodeInfo*> out;
  for (const KnownNode& n : nodes) {
    if (n.registered && n.info->pool == pool) out.push_back(n.info);
  }
  return out;
}

// The names of --nodelist and --exclude: each a node there is, and each named to run the job a
// node of its pool that may (root's jobs).
Status CheckNamed(const std::vector<KnownNode>& nodes, const Resources& r, std::string_view pool,
                  const std::vector<const NodeInfo*>& in_pool) {
  auto find = [&](const std::string& name) -> const NodeInfo* {
    for (const KnownNode& n : nodes) {
      if (n.info->name == name) return n.info;
    }
    return nullptr;
  };
  auto names = [&] {
    std::string list;
    size_t shown = 0;
    for (const NodeInfo* n : in_pool) {
      if (++shown > 8) return list + ", ...";
      list += (list.empty() ? "" : ", ") + n->name;
    }
    return list;
  };
  for (const std::string& name : r.nodelist) {
    const NodeInfo* n = find(name);
    if (n == nullptr) {
      return InvalidArgument("resources.nodelist: no node " + name + " (pool " + std::string(pool) +
                             " has " + names() + ")");
    }
    if (n->pool != pool) {
      return InvalidArgument("resources.nodelist: node " + name + " is in pool " + n->pool +
                             ", not " + std::string(pool));
    }
    if (std::find(in_pool.begin(), in_pool.end(), n) == in_pool.end()) {
      return InvalidArgument("resources.nodelist: node " + name +
                             " refuses root's jobs (`baton agent --allow-root-jobs` allows them)");
    }
  }
  for (const std::string& name : r.exclude) {
    if (find(name) == nullptr) {
      return InvalidArgument("resources.exclude: no node " + name + " (pool " + std::string(pool) +
                             " has " + names() + ")");
    }
  }
  return Status::Ok();
}

// The nodes of a request that names some (`r.nodes` as the pool's nodes resolved it): at least
// as many as it names, its GPUs split evenly over them, and each named one able to hold its part.
Result<int> NodesWithNamed(const Resources& r, const std::vector<const NodeInfo*>& in_pool) {
  int nodes = std::max(r.nodes, static_cast<int>(r.nodelist.size()));
  const int64_t gpus = r.milli_gpus / 1000;
  if (r.milli_gpus >= 1000 && gpus % nodes != 0) {
    return Err(InvalidArgument("resources.gpus: " + std::to_string(gpus) +
                               " GPUs do not split evenly over the " + std::to_string(nodes) +
                               " nodes named"));
  }
  const int64_t per_node = r.milli_gpus / nodes;
  for (const std::string& name : r.nodelist) {
    const NodeInfo* n = *std::find_if(in_pool.begin(), in_pool.end(),
                                      [&](const NodeInfo* x) { return x->name == name; });
    int64_t matching = 0;
    for (const Gpu& g : n->gpus) {
      matching += GpuTypeMatches(g, r.gpu_type) && g.memory_bytes >= r.gpu_memory_bytes;
    }
    const bool holds =
        per_node < 1000 ? (per_node == 0 || matching > 0) : matching * 1000 >= per_node;
    if (!holds || n->cpus < r.cpus || n->memory_bytes < r.memory_bytes) {
      return Err(InvalidArgument("resources.nodelist: node " + name + " (" + NodeShape(*n) +
                                 ") cannot hold its part, " + DescribePart(r, per_node)));
    }
  }
  return nodes;
}

}  // namespace

std::string DescribeNodes(const std::vector<const NodeInfo*>& nodes) {
  std::map<std::string, int> shapes;
  for (const NodeInfo* n : nodes) ++shapes[NodeShape(*n)];
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [shape, count] : shapes) order.emplace_back(count, shape);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a > b; });
  std::string s;
  for (const auto& [count, shape] : order)
    s += (s.empty() ? "" : ", ") + Plural(count, "node", "nodes") + " of " + shape;
  return s.empty() ? "no node" : s;
}

Result<Feasibility> CheckFeasible(const std::vector<KnownNode>& nodes, const Resources& request,
                                  std::string_view pool, bool pool_configured,
                                  std::string_view user, bool preemptible) {
  Feasibility out{.resources = request};
  if (out.resources.nodes == 0) out.resources.nodes = 1;  // unless judged below
  bool awaited =
      std::any_of(nodes.begin(), nodes.end(), [](const KnownNode& n) { return !n.registered; });
  std::vector<const NodeInfo*> in_pool = InPool(nodes, pool);
  if (awaited || (in_pool.empty() && (pool_configured || nodes.empty()))) return out;
  if (in_pool.empty()) {
    std::set<std::string> pools;
    for (const KnownNode& n : nodes) pools.insert(n.info->pool);
    std::string names;
    for (const std::string& p : pools) names += (names.empty() ? "" : ", ") + p;
    return Err(InvalidArgument("pool: no node is in pool " + std::string(pool) +
                               " (pools with nodes: " + names + ")"));
  }
  std::string has = DescribeNodes(in_pool), scope;
  if (user == "root") {
    std::string refusing;
    size_t refused = 0;
    for (const NodeInfo* n : in_pool) {
      if (!n->refuses_root_jobs) continue;
      if (++refused <= 3) refusing += (refusing.empty() ? "" : ", ") + n->name;
    }
    if (refused > 3) refusing += ", ...";
    std::erase_if(in_pool, [](const NodeInfo* n) { return n->refuses_root_jobs; });
    if (in_pool.empty()) {
      return Err(InvalidArgument(
          "user root: no node in pool " + std::string(pool) +
          " runs root's jobs (their agents refuse them; `baton agent --allow-root-jobs` "
          "allows them); pool " +
          std::string(pool) + " has " + has));
    }
    if (refused > 0) {
      // Only the nodes that may run the job count; the others are named, with why.
      has = DescribeNodes(in_pool) + " that may run root's jobs; " + std::to_string(refused) +
            (refused == 1 ? " more refuses them (" : " more refuse them (") + refusing +
            ": `baton agent --allow-root-jobs` allows them)";
      scope = " that runs root's jobs";
    }
  }
  if (!preemptible) {
    const size_t spot =
        std::count_if(in_pool.begin(), in_pool.end(), [](const NodeInfo* n) { return n->spot; });
    if (spot == in_pool.size()) {
      return Err(InvalidArgument(
          "preemptible: the job is not preemptible, and every node of pool " + std::string(pool) +
          " is a spot node, where only preemptible jobs run (--preemptible lets it run there); "
          "pool " +
          std::string(pool) + " has " + has));
    }
    if (spot > 0) {
      std::erase_if(in_pool, [](const NodeInfo* n) { return n->spot; });
      has = DescribeNodes(in_pool) + " that are not spot; " + std::to_string(spot) +
            (spot == 1 ? " more is a spot node" : " more are spot nodes") +
            ", where only preemptible jobs run (--preemptible lets it run there)";
      scope += scope.empty() ? " that is not spot" : " and is not spot";
    }
  }
  RETURN_IF_ERROR(CheckNamed(nodes, request, pool, in_pool));
  std::erase_if(in_pool, [&](const NodeInfo* n) {
    return std::find(request.exclude.begin(), request.exclude.end(), n->name) !=
           request.exclude.end();
  });
  if (in_pool.empty()) {
    return Err(InvalidArgument("resources.exclude: no node of pool " + std::string(pool) +
                               " is left; pool " + std::string(pool) + " has " + has));
  }
  Check check(in_pool, request, pool, std::move(has), std::move(scope));
  if (request.milli_gpus > 0) RETURN_IF_ERROR(check.GpuKind());
  RETURN_IF_ERROR(check.Host());
  ASSIGN_OR_RETURN(out.resources.nodes, check.Nodes());
  if (!request.nodelist.empty()) {
    ASSIGN_OR_RETURN(out.resources.nodes, NodesWithNamed(out.resources, in_pool));
  }
  out.judged = true;
  return out;
}

}  // namespace baton::sched
