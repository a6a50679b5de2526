// The server's configuration file (DecodeServerConfig) and the simulator's cluster file
// (DecodeClusterFile): YAML read key by key, each error naming the file, the line and the key's
// path.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "codec/internal/config_reader.h"
#include "codec/internal/json_util.h"
#include "codec/internal/yaml_load.h"
#include "codec/json_codec.h"
#include "core/node.h"
#include "core/quantity.h"

namespace baton::codec {

using namespace internal;

namespace {

// budget: 5000 (a month, no hard stop), none, or {amount: 5000, period: day|week|month|total,
// hard_stop: true} A project's budget replaces the default project's whole; `budget: none` has
// none.
Status ReadBudget(const ConfigReader& r, const YAML::Node& n, const std::string& path, Budget* b) {
  *b = Budget{};
  if (n.IsNull() || (n.IsScalar() && n.Scalar() == "none")) return {};
  if (n.IsScalar()) {
    ASSIGN_OR_RETURN(b->amount, r.Number(n, path, 0, 1e12));
    return {};
  }
  RETURN_IF_ERROR(r.Keys(n, path, {"amount", "period", "hard_stop"}));
  if (!n["amount"])
    return r.Error(n, path + ".amount", "missing: how much the project may spend per period");
  ASSIGN_OR_RETURN(b->amount, r.Number(n["amount"], path + ".amount", 0, 1e12));
  if (n["period"]) {
    ASSIGN_OR_RETURN(std::string period, r.Text(n["period"], path + ".period", 16));
    if (period == "day")
      b->period = BudgetPeriod::kDay;
    else if (period == "week")
      b->period = BudgetPeriod::kWeek;
    else if (period == "month")
      b->period = BudgetPeriod::kMonth;
    else if (period == "total")
      b->period = BudgetPeriod::kTotal;
    else
      return r.Error(n["period"], path + ".period", "must be day, week, month or total");
  }
  if (n["hard_stop"]) {
    ASSIGN_OR_RETURN(b->hard_stop, r.Bool(n["hard_stop"], path + ".hard_stop"));
  }
  return {};
}

// gpu_catalog: {currency: USD, prices: {H100-80GB: {on_demand: 2.49, spot: 1.2}, A100: 1.1}}
Status ReadCatalog(const ConfigReader& r, const YAML::Node& n, Policy* policy) {
  RETURN_IF_ERROR(r.Keys(n, "gpu_catalog", {"currency", "prices"}));
  if (n["currency"]) {
    ASSIGN_OR_RETURN(policy->currency, r.Text(n["currency"], "gpu_catalog.currency", 8));
    if (policy->currency.empty())
      return r.Error(n["currency"], "gpu_catalog.currency", "must not be empty");
  }
  const YAML::Node prices = n["prices"];
  if (!prices) return {};
  if (!prices.IsMap())
    return r.Error(prices, "gpu_catalog.prices", "must map GPU models to prices per GPU-hour");
  for (const auto& kv : prices) {
    const std::string& model = kv.first.Scalar();
    std::string path = "gpu_catalog.prices." + model.substr(0, 64);
    if (model.empty() || model.size() > 64 || !r.IsName(model)) {
      return r.Error(kv.first, path, "a GPU model is 1-64 of letters, digits, '.', '_', '-'");
    }
    GpuPrice price;
    if (kv.second.IsScalar()) {
      ASSIGN_OR_RETURN(price.on_demand, r.Number(kv.second, path, 0, 1e6));
    } else {
      RETURN_IF_ERROR(r.Keys(kv.second, path, {"on_demand", "spot"}));
      if (!kv.second["on_demand"])
        return r.Error(kv.second, path + ".on_demand", "missing: the price per GPU-hour");
      ASSIGN_OR_RETURN(price.on_demand,
                       r.Number(kv.second["on_demand"], path + ".on_demand", 0, 1e6));
      if (kv.second["spot"]) {
        ASSIGN_OR_RETURN(price.spot, r.Number(kv.second["spot"], path + ".spot", 0, 1e6));
      }
    }
    policy->prices[model] = price;
  }
  return {};
}

Status ReadProject(const ConfigReader& r, const YAML::Node& n, const std::string& path,
                   ProjectPolicy* p) {
  RETURN_IF_ERROR(
      r.Keys(n, path, {"share", "guaranteed_gpus", "limit_gpus", "budget", "checkpoint_group"}));
  if (n["budget"]) RETURN_IF_ERROR(ReadBudget(r, n["budget"], path + ".budget", &p->budget));
  if (const YAML::Node g = n["checkpoint_group"]) {
    // A Unix group name, as groupadd takes them (and at most 32 bytes, as it does).
    const std::string key = path + ".checkpoint_group";
    if (path == "defaults.project")
      return r.Error(g, key, "name it for a project of its own, not for every project");
    ASSIGN_OR_RETURN(p->checkpoint_group, r.Text(g, key, 32));
    const std::string& name = p->checkpoint_group;
    bool valid =
        !name.empty() && name[0] != '-' && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    if (!valid)
      return r.Error(g, key, "must be a Unix group name (letters, digits, '_', '-', '.')");
  }
  if (n["share"]) {
    ASSIGN_OR_RETURN(p->share, r.Number(n["share"], path + ".share", 0.001, 1e6));
  }
  if (n["guaranteed_gpus"]) {
    ASSIGN_OR_RETURN(p->guaranteed_milli, r.Gpus(n["guaranteed_gpus"], path + ".guaranteed_gpus"));
  }
  if (n["limit_gpus"]) {
    ASSIGN_OR_RETURN(p->limit_milli, r.Gpus(n["limit_gpus"], path + ".limit_gpus"));
  }
  if (p->limit_milli != kNoLimit && p->limit_milli < p->guaranteed_milli) {
    return r.Error(n, path, "limit_gpus is below guaranteed_gpus");
  }
  return {};
}

Status ReadUser(const ConfigReader& r, const YAML::Node& n, const std::string& path,
                UserPolicy* u) {
  RETURN_IF_ERROR(r.Keys(n, path, {"share", "max_gpus", "max_jobs"}));
  if (n["share"]) {
    ASSIGN_OR_RETURN(u->share, r.Number(n["share"], path + ".share", 0.001, 1e6));
  }
  if (n["max_gpus"]) {
    ASSIGN_OR_RETURN(u->max_milli, r.Gpus(n["max_gpus"], path + ".max_gpus"));
  }
  if (n["max_jobs"]) {
    ASSIGN_OR_RETURN(double jobs, r.Number(n["max_jobs"], path + ".max_jobs", 0, 1e9));
    if (jobs != std::floor(jobs))
      return r.Error(n["max_jobs"], path + ".max_jobs", "must be a whole number");
    u->max_jobs = static_cast<int>(jobs);
  }
  return {};
}

Status ReadNamed(const ConfigReader& r, const YAML::Node& n, const std::string& path,
                 const std::function<Status(const std::string&, const YAML::Node&)>& each) {
  if (!n.IsMap()) return r.Error(n, path, "must be a mapping from names to settings");
  for (const auto& kv : n) {
    const std::string& name = kv.first.Scalar();
    if (!r.IsName(name))
      return r.Error(kv.first, path + "." + name.substr(0, 64),
                     "names are 1-64 of letters, digits, '.', '_', '-'");
    RETURN_IF_ERROR(each(name, kv.second));
  }
  return {};
}

// scheduling.weights: {priority, fairshare, age, size, las}
Status ReadWeights(const ConfigReader& r, const YAML::Node& w, Weights* x) {
  RETURN_IF_ERROR(r.Keys(w, "scheduling.weights", {"priority", "fairshare", "age", "size", "las"}));
  for (auto [key, field] :
       {std::pair{"priority", &x->priority}, std::pair{"fairshare", &x->fairshare},
        std::pair{"age", &x->age}, std::pair{"size", &x->size}, std::pair{"las", &x->las}}) {
    if (w[key]) {
      ASSIGN_OR_RETURN(*field, r.Number(w[key], std::string("scheduling.weights.") + key, 0, 1e9));
    }
  }
  return {};
}

// scheduling.las_thresholds: GPU-time, written as durations: 1h is one GPU for an hour (or four
// for 15 minutes).
Status ReadLasThresholds(const ConfigReader& r, const YAML::Node& t, Policy* policy) {
  if (!t.IsSequence() || t.size() > 16) {
    return r.Error(t, "scheduling.las_thresholds",
                   "must be a list of at most 16 GPU-times such as [1h, 10h]");
  }
  policy->las_thresholds.clear();
  for (size_t i = 0; i < t.size(); ++i) {
    std::string path = "scheduling.las_thresholds[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(Duration d, r.Time(t[i], path));
    double gpu_s = static_cast<double>(d.count()) / 1000.0;
    if (gpu_s <= 0 || (!policy->las_thresholds.empty() && gpu_s <= policy->las_thresholds.back())) {
      return r.Error(t[i], path, "thresholds must be above 0 and ascending");
    }
    policy->las_thresholds.push_back(gpu_s);
  }
  return {};
}

// The durations of scheduling: fairshare_half_life and max_age (both above 0).
Status ReadSchedulingTimes(const ConfigReader& r, const YAML::Node& s, Policy* policy) {
  if (s["fairshare_half_life"]) {
    ASSIGN_OR_RETURN(policy->fairshare_half_life,
                     r.Time(s["fairshare_half_life"], "scheduling.fairshare_half_life"));
    if (policy->fairshare_half_life.count() == 0) {
      return r.Error(s["fairshare_half_life"], "scheduling.fairshare_half_life",
                     "must be longer than 0");
    }
  }
  if (s["max_age"]) {
    ASSIGN_OR_RETURN(policy->max_age, r.Time(s["max_age"], "scheduling.max_age"));
    if (policy->max_age.count() == 0)
      return r.Error(s["max_age"], "scheduling.max_age", "must be longer than 0");
  }
  return {};
}

Status ReadScheduling(const ConfigReader& r, const YAML::Node& s, Policy* policy) {
  RETURN_IF_ERROR(
      r.Keys(s, "scheduling",
             {"weights", "fairshare_half_life", "max_age", "backfill", "reservations", "preemption",
              "preempt_grace", "las_thresholds", "las_preemption", "untimed_reservation",
              "max_preemptions", "reclaim_cooloff", "las_preemption_budget", "mig_window"}));
  if (const YAML::Node w = s["weights"]) RETURN_IF_ERROR(ReadWeights(r, w, &policy->weights));
  RETURN_IF_ERROR(ReadSchedulingTimes(r, s, policy));
  if (s["backfill"]) {
    ASSIGN_OR_RETURN(policy->backfill, r.Bool(s["backfill"], "scheduling.backfill"));
  }
  if (s["preemption"]) {
    ASSIGN_OR_RETURN(policy->preemption, r.Bool(s["preemption"], "scheduling.preemption"));
  }
  if (s["untimed_reservation"]) {
    ASSIGN_OR_RETURN(policy->untimed_reservation,
                     r.Bool(s["untimed_reservation"], "scheduling.untimed_reservation"));
  }
  if (s["reservations"]) {
    ASSIGN_OR_RETURN(double n, r.Number(s["reservations"], "scheduling.reservations", 0, 1000));
    policy->reservations = static_cast<int>(n);
  }
  if (s["preempt_grace"]) {
    ASSIGN_OR_RETURN(policy->preempt_grace, r.Time(s["preempt_grace"], "scheduling.preempt_grace"));
  }
  if (s["max_preemptions"]) {
    ASSIGN_OR_RETURN(double n, r.Number(s["max_preemptions"], "scheduling.max_preemptions", 0,
                                        SpecLimits::kMaxPreemptions));
    if (n != std::floor(n))
      return r.Error(s["max_preemptions"], "scheduling.max_preemptions", "must be a whole number");
    policy->max_preemptions = static_cast<int>(n);
  }
  if (s["reclaim_cooloff"]) {
    ASSIGN_OR_RETURN(policy->reclaim_cooloff,
                     r.Time(s["reclaim_cooloff"], "scheduling.reclaim_cooloff"));
  }
  if (s["mig_window"]) {
    ASSIGN_OR_RETURN(policy->mig_window, r.Time(s["mig_window"], "scheduling.mig_window"));
    if (policy->mig_window < std::chrono::seconds(1) || policy->mig_window > std::chrono::hours(24))
      return r.Error(s["mig_window"], "scheduling.mig_window", "must be 1s to 24h");
  }
  if (const YAML::Node t = s["las_thresholds"]) RETURN_IF_ERROR(ReadLasThresholds(r, t, policy));
  if (s["las_preemption"]) {
    ASSIGN_OR_RETURN(policy->las_preemption,
                     r.Bool(s["las_preemption"], "scheduling.las_preemption"));
  }
  if (const YAML::Node b = s["las_preemption_budget"]) {
    if (b.IsScalar() && b.Scalar() == "none") {
      policy->las_preemption_budget.reset();
    } else {
      ASSIGN_OR_RETURN(double n, r.Number(b, "scheduling.las_preemption_budget", 1,
                                          SpecLimits::kMaxPreemptions));
      if (n != std::floor(n))
        return r.Error(b, "scheduling.las_preemption_budget", "must be a whole number or none");
      policy->las_preemption_budget = static_cast<int>(n);
    }
  }
  return {};
}

// An interactive pool's settings for its sessions (core/policy.h, PoolPolicy).
Status ReadInteractivePool(const ConfigReader& r, const YAML::Node& n, const std::string& path,
                           PoolPolicy* pp) {
  if (n["interactive"]) {
    ASSIGN_OR_RETURN(pp->interactive, r.Bool(n["interactive"], path + ".interactive"));
  }
  for (const char* key : {"session_time_limit", "max_sessions_per_user", "idle_timeout",
                          "idle_utilization", "idle_warning"}) {
    if (n[key] && !pp->interactive)
      return r.Error(n[key], path + "." + key, "needs interactive: true in the pool");
  }
  if (n["session_time_limit"]) {
    ASSIGN_OR_RETURN(pp->session_time_limit,
                     r.Time(n["session_time_limit"], path + ".session_time_limit"));
  }
  if (n["idle_timeout"]) {
    ASSIGN_OR_RETURN(pp->idle_timeout, r.Time(n["idle_timeout"], path + ".idle_timeout"));
  }
  if (n["idle_warning"]) {
    ASSIGN_OR_RETURN(pp->idle_warning, r.Time(n["idle_warning"], path + ".idle_warning"));
  }
  if (n["max_sessions_per_user"]) {
    ASSIGN_OR_RETURN(
        double v, r.Number(n["max_sessions_per_user"], path + ".max_sessions_per_user", 0, 100000));
    if (v != std::floor(v)) {
      return r.Error(n["max_sessions_per_user"], path + ".max_sessions_per_user",
                     "must be a whole number");
    }
    pp->max_sessions_per_user = static_cast<int>(v);
  }
  if (n["idle_utilization"]) {
    ASSIGN_OR_RETURN(double v, r.Number(n["idle_utilization"], path + ".idle_utilization", 0, 100));
    pp->idle_utilization_pct = static_cast<int>(v);
  }
  if (pp->session_time_limit.count() == 0)
    return r.Error(n, path, "session_time_limit must be longer than 0");
  return {};
}

// One pool of pools: its time limits and GPU caps.
Result<PoolPolicy> ReadPool(const ConfigReader& r, const YAML::Node& n, const std::string& path) {
  RETURN_IF_ERROR(
      r.Keys(n, path,
             {"default_time_limit", "max_time_limit", "max_gpus_per_job", "max_gpus_per_user",
              "interactive", "session_time_limit", "max_sessions_per_user", "idle_timeout",
              "idle_utilization", "idle_warning", "output_limit", "slurm"}));
  PoolPolicy pp;
  if (n["slurm"]) {
    ASSIGN_OR_RETURN(pp.slurm, r.Bool(n["slurm"], path + ".slurm"));
  }
  RETURN_IF_ERROR(ReadInteractivePool(r, n, path, &pp));
  if (n["default_time_limit"]) {
    ASSIGN_OR_RETURN(pp.default_time_limit,
                     r.Time(n["default_time_limit"], path + ".default_time_limit"));
  }
  if (n["max_time_limit"]) {
    ASSIGN_OR_RETURN(pp.max_time_limit, r.Time(n["max_time_limit"], path + ".max_time_limit"));
  }
  if (n["max_gpus_per_job"]) {
    ASSIGN_OR_RETURN(pp.max_milli_per_job,
                     r.Gpus(n["max_gpus_per_job"], path + ".max_gpus_per_job"));
  }
  if (n["max_gpus_per_user"]) {
    ASSIGN_OR_RETURN(pp.max_milli_per_user,
                     r.Gpus(n["max_gpus_per_user"], path + ".max_gpus_per_user"));
  }
  if (n["output_limit"]) {
    ASSIGN_OR_RETURN(pp.output_limit, r.Size(n["output_limit"], path + ".output_limit"));
  }
  if (pp.max_time_limit.count() > 0 && pp.default_time_limit > pp.max_time_limit) {
    return Err(r.Error(n, path, "default_time_limit is longer than max_time_limit"));
  }
  return pp;
}

// models: {house-13b: {params: 13B, layers: 40, hidden: 5120, heads: 40, kv_heads: 8,
//          vocab: 50000}}: models of one's own for LLM-aware sizing (core/sizing.h).
Status ReadModels(const ConfigReader& r, const YAML::Node& n, Policy* policy) {
  if (!n.IsMap() || n.size() > 1000)
    return r.Error(n, "models", "must map at most 1000 model names to their shapes");
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    const std::string path = "models." + name.substr(0, 64);
    if (name.empty() || name.size() > 64)
      return r.Error(kv.first, path, "a model name is 1-64 characters");
    const YAML::Node& m = kv.second;
    RETURN_IF_ERROR(
        r.Keys(m, path, {"params", "layers", "hidden", "heads", "kv_heads", "head_dim", "vocab"}));
    ModelShape shape{.name = name};
    if (!m["params"]) return r.Error(m, path + ".params", "is required (e.g. 13B)");
    ASSIGN_OR_RETURN(std::string params, r.Text(m["params"], path + ".params", 32));
    auto p = ParseParams(params, path + ".params");
    if (!p) {
      return r.Error(m["params"], path + ".params",
                     "must be a parameter count from 1K to 100T, such as 13B");
    }
    shape.params = *p;
    for (auto [key, at, lo, hi] : {std::tuple{"layers", &shape.layers, 1, 100'000},
                                   std::tuple{"hidden", &shape.hidden, 1, 1'000'000},
                                   std::tuple{"heads", &shape.heads, 1, 100'000},
                                   std::tuple{"kv_heads", &shape.kv_heads, 0, 100'000},
                                   std::tuple{"head_dim", &shape.head_dim, 0, 100'000}}) {
      if (!m[key]) {
        if (std::string_view(key) == "kv_heads" || std::string_view(key) == "head_dim") continue;
        return r.Error(m, path + "." + key, "is required");
      }
      ASSIGN_OR_RETURN(double v, r.Number(m[key], path + "." + key, lo, hi));
      *at = static_cast<int>(v);
    }
    if (shape.kv_heads == 0) shape.kv_heads = shape.heads;
    if (!m["vocab"]) return r.Error(m, path + ".vocab", "is required");
    ASSIGN_OR_RETURN(double vocab, r.Number(m["vocab"], path + ".vocab", 1, 100'000'000));
    shape.vocab = static_cast<int64_t>(vocab);
    SizingRequest check{.model = shape};
    if (Status st = ValidateSizing(check); !st.ok()) return r.Error(m, path, st.message());
    policy->models.push_back(std::move(shape));
  }
  return {};
}

Status ReadPolicy(const ConfigReader& r, const YAML::Node& root, Policy* policy) {
  if (const YAML::Node s = root["scheduling"]) RETURN_IF_ERROR(ReadScheduling(r, s, policy));
  if (const YAML::Node a = root["autoscaling"])
    RETURN_IF_ERROR(ReadAutoscaling(r, a, &policy->autoscaling));
  if (const YAML::Node c = root["gpu_catalog"]) RETURN_IF_ERROR(ReadCatalog(r, c, policy));
  if (const YAML::Node m = root["models"]) RETURN_IF_ERROR(ReadModels(r, m, policy));
  if (const YAML::Node c = root["checkpoint_root"]) {
    ASSIGN_OR_RETURN(policy->checkpoint_root, r.Text(c, "checkpoint_root"));
    std::string& root_dir = policy->checkpoint_root;
    if (root_dir.empty() || root_dir[0] != '/')
      return r.Error(c, "checkpoint_root", "must be an absolute path such as /shared/ckpt");
    while (root_dir.size() > 1 && root_dir.back() == '/') root_dir.pop_back();
  }
  if (const YAML::Node o = root["output_limit"]) {
    ASSIGN_OR_RETURN(policy->output_limit, r.Size(o, "output_limit"));
  }
  if (const YAML::Node o = root["max_output_limit"]) {
    ASSIGN_OR_RETURN(policy->max_output_limit, r.Size(o, "max_output_limit"));
  }
  if (const YAML::Node o = root["stop_at_output_limit"]) {
    ASSIGN_OR_RETURN(policy->stop_at_output_limit, r.Bool(o, "stop_at_output_limit"));
  }
  if (policy->output_limit > policy->max_output_limit) {
    const char* key = root["output_limit"] ? "output_limit" : "max_output_limit";
    return r.Error(root[key], key, "output_limit is over max_output_limit");
  }
  if (const YAML::Node d = root["defaults"]) {
    RETURN_IF_ERROR(r.Keys(d, "defaults", {"project", "user"}));
    if (d["project"])
      RETURN_IF_ERROR(ReadProject(r, d["project"], "defaults.project", &policy->default_project));
    if (d["user"]) RETURN_IF_ERROR(ReadUser(r, d["user"], "defaults.user", &policy->default_user));
  }
  if (const YAML::Node p = root["projects"]) {
    RETURN_IF_ERROR(
        ReadNamed(r, p, "projects", [&](const std::string& name, const YAML::Node& n) -> Status {
          ProjectPolicy pp = policy->default_project;
          RETURN_IF_ERROR(ReadProject(r, n, "projects." + name, &pp));
          policy->projects[name] = pp;
          return {};
        }));
  }
  if (const YAML::Node u = root["users"]) {
    RETURN_IF_ERROR(
        ReadNamed(r, u, "users", [&](const std::string& name, const YAML::Node& n) -> Status {
          UserPolicy up = policy->default_user;
          RETURN_IF_ERROR(ReadUser(r, n, "users." + name, &up));
          policy->users[name] = up;
          return {};
        }));
  }
  if (const YAML::Node p = root["pools"]) {
    RETURN_IF_ERROR(
        ReadNamed(r, p, "pools", [&](const std::string& name, const YAML::Node& n) -> Status {
          ASSIGN_OR_RETURN(PoolPolicy pp, ReadPool(r, n, "pools." + name));
          policy->pools[name] = pp;
          return {};
        }));
  }
  return {};
}

}  // namespace

Result<ServerConfig> DecodeServerConfig(std::string_view yaml, std::string_view file) {
  ServerConfig cfg;
  ConfigReader r(file);
  try {
    // The same checks and bound on expanded aliases as job files.
    ASSIGN_OR_RETURN(YAML::Node root, LoadChecked(yaml, file));
    if (root.IsNull()) return cfg;
    RETURN_IF_ERROR(
        r.Keys(root, "",
               {"listen", "data", "shared_dir", "store", "tls", "scheduling", "defaults",
                "projects", "users", "pools", "alerts", "gpu_catalog", "models", "checkpoint_root",
                "output_limit", "max_output_limit", "stop_at_output_limit", "autoscaling"}));
    if (root["listen"]) {
      ASSIGN_OR_RETURN(cfg.listen, r.Text(root["listen"], "listen"));
    }
    if (const YAML::Node t = root["tls"]) {
      // The server's certificate (else its own CA's, made in DATA/tls) and plain HTTP's reach.
      RETURN_IF_ERROR(r.Keys(t, "tls", {"cert", "key", "insecure_http"}));
      for (const char* key : {"cert", "key"}) {
        if (!t[key]) continue;
        std::string path = std::string("tls.") + key;
        ASSIGN_OR_RETURN(std::string file, r.Text(t[key], path));
        if (file.empty() || file[0] != '/') {
          return Err(r.Error(t[key], path,
                             "must be an absolute path such as /etc/baton/server." +
                                 std::string(key == std::string("cert") ? "crt" : "key")));
        }
        (key == std::string("cert") ? cfg.tls_cert : cfg.tls_key) = std::move(file);
      }
      if (t["cert"].IsDefined() != t["key"].IsDefined()) {
        return Err(r.Error(t, "tls", "needs both cert and key, or neither"));
      }
      if (t["insecure_http"]) {
        ASSIGN_OR_RETURN(cfg.insecure_http, r.Bool(t["insecure_http"], "tls.insecure_http"));
      }
    }
    if (const YAML::Node a = root["alerts"]) {
      RETURN_IF_ERROR(r.Keys(a, "alerts", {"webhooks", "attempts"}));
      if (const YAML::Node w = a["webhooks"]) {
        if (!w.IsSequence() || w.size() > 16) {
          return Err(r.Error(w, "alerts.webhooks",
                             "must be a list of at most 16 https:// or http:// URLs"));
        }
        for (size_t i = 0; i < w.size(); ++i) {
          std::string path = "alerts.webhooks[" + std::to_string(i) + "]";
          ASSIGN_OR_RETURN(std::string url, r.Text(w[i], path));
          if ((url.rfind("http://", 0) != 0 || url.size() <= 7) &&
              (url.rfind("https://", 0) != 0 || url.size() <= 8)) {
            return Err(r.Error(w[i], path,
                               "must be an https:// or http:// URL such as "
                               "https://hooks.example/baton"));
          }
          cfg.webhooks.push_back(std::move(url));
        }
      }
      if (a["attempts"]) {
        ASSIGN_OR_RETURN(double n, r.Number(a["attempts"], "alerts.attempts", 1, 100));
        cfg.webhook_attempts = static_cast<int>(n);
      }
    }
    if (root["data"]) {
      ASSIGN_OR_RETURN(cfg.data, r.Text(root["data"], "data"));
    }
    if (root["shared_dir"]) {
      ASSIGN_OR_RETURN(cfg.shared_dir, r.Text(root["shared_dir"], "shared_dir"));
      if (cfg.shared_dir.empty() || cfg.shared_dir[0] != '/') {
        return Err(r.Error(root["shared_dir"], "shared_dir",
                           "must be an absolute path such as /mnt/baton-shared"));
      }
    }
    if (const YAML::Node s = root["store"]) {
      // Where the jobs are kept: SQLite (a file) or PostgreSQL (a URL).
      RETURN_IF_ERROR(r.Keys(s, "store", {"type", "path", "url"}));
      std::string type = "sqlite";
      if (s["type"]) {
        ASSIGN_OR_RETURN(type, r.Text(s["type"], "store.type", 32));
        if (type == "postgresql") type = "postgres";
        if (type != "sqlite" && type != "postgres") {
          return Err(r.Error(s["type"], "store.type", "must be sqlite or postgres"));
        }
      }
      if (s["path"]) {
        if (type != "sqlite") return Err(r.Error(s["path"], "store.path", "is for type sqlite"));
        ASSIGN_OR_RETURN(cfg.store_path, r.Text(s["path"], "store.path"));
        if (cfg.store_path.empty() || cfg.store_path[0] != '/') {
          return Err(r.Error(s["path"], "store.path",
                             "must be an absolute path such as /var/lib/baton/baton.db"));
        }
      }
      if (s["url"]) {
        if (type != "postgres") {
          return Err(r.Error(s["url"], "store.url", "is for type postgres"));
        }
        ASSIGN_OR_RETURN(cfg.store_url, r.Text(s["url"], "store.url"));
        if (!cfg.store_url.starts_with("postgres://") &&
            !cfg.store_url.starts_with("postgresql://")) {
          return Err(r.Error(s["url"], "store.url",
                             "must be a postgres:// URL such as postgres://baton@db/baton"));
        }
      } else if (type == "postgres") {
        return Err(r.Error(s, "store.url", "is required with type postgres (postgres://...)"));
      }
    }
    RETURN_IF_ERROR(ReadPolicy(r, root, &cfg.policy));
  } catch (const YAML::Exception& e) {
    return Err(YamlError(file, yaml, e));
  }
  return cfg;
}

Result<ClusterFile> DecodeClusterFile(std::string_view yaml, std::string_view file) {
  ClusterFile cluster;
  ConfigReader r(file);
  try {
    ASSIGN_OR_RETURN(YAML::Node root, LoadChecked(yaml, file));
    if (root.IsNull())
      return Err(InvalidArgument(std::string(file) + ": empty (it needs nodes: [...])"));
    RETURN_IF_ERROR(r.Keys(root, "",
                           {"nodes", "autoscaling", "scheduling", "defaults", "projects", "users",
                            "pools", "gpu_catalog"}));
    if (const YAML::Node a = root["autoscaling"]) {
      RETURN_IF_ERROR(ReadAutoscaling(r, a, &cluster.policy.autoscaling, &cluster.boot_delay));
      root.remove("autoscaling");  // read here, as the simulator's; not again as a server's
    }
    const YAML::Node nodes = root["nodes"];
    const bool scaled = cluster.policy.autoscaling.on();
    if (!nodes && !scaled)
      return Err(r.Error(root, "nodes", "missing: a list of node groups (or autoscaling:)"));
    if (nodes && (!nodes.IsSequence() || (nodes.size() == 0 && !scaled)))
      return Err(r.Error(nodes, "nodes", "must be a non-empty list"));
    int total = 0;
    std::set<std::string> names;
    for (size_t i = 0; nodes && i < nodes.size(); ++i) {
      const YAML::Node g = nodes[i];
      std::string path = "nodes[" + std::to_string(i) + "]";
      RETURN_IF_ERROR(r.Keys(
          g, path, {"name", "count", "gpus", "pool", "mps", "mig_reconfigure", "mig_delay"}));
      ClusterFile::Group group;
      if (!g["name"]) return Err(r.Error(g, path + ".name", "missing"));
      ASSIGN_OR_RETURN(group.name, r.Text(g["name"], path + ".name", 48));
      if (!IsValidNodeName(group.name))
        return Err(r.Error(g["name"], path + ".name", "1-48 of letters, digits, '.', '_', '-'"));
      if (!names.insert(group.name).second)
        return Err(r.Error(g["name"], path + ".name", "named twice"));
      if (g["count"]) {
        ASSIGN_OR_RETURN(double count, r.Number(g["count"], path + ".count", 1, 100'000));
        if (count != std::floor(count))
          return Err(r.Error(g["count"], path + ".count", "must be a whole number"));
        group.count = static_cast<int>(count);
      }
      total += group.count;
      if (total > 100'000)
        return Err(r.Error(g, path + ".count", "more than 100,000 nodes in all"));
      if (!g["gpus"])
        return Err(r.Error(g, path + ".gpus", "missing (a SPEC such as 8xH100-80GB)"));
      ASSIGN_OR_RETURN(group.gpus, r.Text(g["gpus"], path + ".gpus", 256));
      if (auto spec = ParseGpuSpec(group.gpus); !spec)
        return Err(r.Error(g["gpus"], path + ".gpus", spec.error().message()));
      if (g["pool"]) {
        ASSIGN_OR_RETURN(group.pool, r.Text(g["pool"], path + ".pool", 64));
        if (!IsValidNodeName(group.pool))
          return Err(r.Error(g["pool"], path + ".pool", "1-64 of letters, digits, '.', '_', '-'"));
      }
      if (g["mps"]) {
        ASSIGN_OR_RETURN(group.mps, r.Bool(g["mps"], path + ".mps"));
      }
      if (g["mig_reconfigure"]) {
        ASSIGN_OR_RETURN(group.mig_reconfigure,
                         r.Bool(g["mig_reconfigure"], path + ".mig_reconfigure"));
        if (group.mig_reconfigure && ParseGpuSpec(group.gpus)->mig.empty())
          return Err(r.Error(g["mig_reconfigure"], path + ".mig_reconfigure",
                             "its GPUs are not in MIG mode (gpus: ...:mig=7g.80gb, say)"));
      }
      if (g["mig_delay"]) {
        if (!group.mig_reconfigure)
          return Err(r.Error(g["mig_delay"], path + ".mig_delay", "is for mig_reconfigure: true"));
        ASSIGN_OR_RETURN(group.mig_delay, r.Time(g["mig_delay"], path + ".mig_delay"));
        if (group.mig_delay > std::chrono::hours(1))
          return Err(r.Error(g["mig_delay"], path + ".mig_delay", "at most 1h"));
      }
      cluster.groups.push_back(std::move(group));
    }
    RETURN_IF_ERROR(ReadPolicy(r, root, &cluster.policy));
  } catch (const YAML::Exception& e) {
    return Err(YamlError(file, yaml, e));
  }
  return cluster;
}

}  // namespace baton::codec
