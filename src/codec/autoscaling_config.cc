// The configuration's `autoscaling:` section (docs/operations.md "Elastic capacity"): the
// provider, its timeouts and rates, and the node templates.
#include <set>

#include "codec/internal/config_reader.h"

namespace baton::codec::internal {

namespace {

// A whole number from lo to hi.
Result<int> WholeNumber(const ConfigReader& r, const YAML::Node& n, const std::string& path, int lo,
                        int hi) {
  ASSIGN_OR_RETURN(double d, r.Number(n, path, lo, hi));
  if (d != std::floor(d)) return Err(r.Error(n, path, "must be a whole number"));
  return static_cast<int>(d);
}

// A duration from lo to hi.
Result<Duration> TimeWithin(const ConfigReader& r, const YAML::Node& n, const std::string& path,
                            Duration lo, Duration hi) {
  ASSIGN_OR_RETURN(Duration d, r.Time(n, path));
  if (d < lo || d > hi)
    return Err(
        r.Error(n, path, "must be from " + FormatDuration(lo) + " to " + FormatDuration(hi)));
  return d;
}

// One of autoscaling.templates: {name, pool, gpus: 8xH100-80GB, cpus, memory, price, spot,
// on_demand_price, min, max}.
Result<NodeTemplate> ReadTemplate(const ConfigReader& r, const YAML::Node& n,
                                  const std::string& path) {
  RETURN_IF_ERROR(r.Keys(n, path,
                         {"name", "pool", "gpus", "cpus", "memory", "price", "spot",
                          "on_demand_price", "min", "max"}));
  NodeTemplate t;
  if (!n["name"]) return Err(r.Error(n, path + ".name", "missing"));
  ASSIGN_OR_RETURN(t.name, r.Text(n["name"], path + ".name", 48));
  if (!IsValidNodeName(t.name))
    return Err(r.Error(n["name"], path + ".name",
                       "1-48 of letters, digits, '.', '_', '-' (its nodes are NAME-1, NAME-2...)"));
  if (n["pool"]) {
    ASSIGN_OR_RETURN(t.pool, r.Text(n["pool"], path + ".pool", 64));
    if (!IsValidNodeName(t.pool))
      return Err(r.Error(n["pool"], path + ".pool", "1-64 of letters, digits, '.', '_', '-'"));
  }
  if (!n["gpus"])
    return Err(r.Error(n, path + ".gpus", "missing: what each node has, such as 8xH100-80GB"));
  {
    ASSIGN_OR_RETURN(t.gpu_spec, r.Text(n["gpus"], path + ".gpus", 256));
    auto spec = ParseGpuSpec(t.gpu_spec);
    if (!spec) return Err(r.Error(n["gpus"], path + ".gpus", spec.error().message()));
    if (!spec->mig.empty())
      return Err(r.Error(n["gpus"], path + ".gpus", "MIG layouts are not for templates"));
    t.gpus = spec->count;
    t.gpu_model = spec->model;
    t.gpu_memory_bytes = spec->memory_bytes;
  }
  if (n["cpus"]) {
    ASSIGN_OR_RETURN(t.cpus, WholeNumber(r, n["cpus"], path + ".cpus", 0, 100'000));
  }
  if (n["memory"]) {
    ASSIGN_OR_RETURN(t.memory_bytes, r.Size(n["memory"], path + ".memory"));
  }
  if (n["price"]) {
    ASSIGN_OR_RETURN(t.price_per_hour, r.Number(n["price"], path + ".price", 0, 1e6));
  }
  if (n["spot"]) {
    ASSIGN_OR_RETURN(t.spot, r.Bool(n["spot"], path + ".spot"));
  }
  if (n["on_demand_price"]) {
    if (!t.spot)
      return Err(r.Error(n["on_demand_price"], path + ".on_demand_price",
                         "only a spot template has one: the same node on demand, an hour"));
    ASSIGN_OR_RETURN(t.on_demand_price,
                     r.Number(n["on_demand_price"], path + ".on_demand_price", 0, 1e6));
  }
  if (!n["max"])
    return Err(r.Error(n, path + ".max", "missing: how many of its nodes autoscaling may keep"));
  ASSIGN_OR_RETURN(t.max, WholeNumber(r, n["max"], path + ".max", 1, 10'000));
  if (n["min"]) {
    ASSIGN_OR_RETURN(t.min, WholeNumber(r, n["min"], path + ".min", 0, t.max));
  }
  return t;
}

}  // namespace

// autoscaling: {provider, provider_timeout, scan_interval, idle_time, resume_timeout,
// resume_rate, suspend_rate, templates: [...]} (docs/operations.md "Elastic capacity").
Status ReadAutoscaling(const ConfigReader& r, const YAML::Node& n, AutoscalingPolicy* a,
                       Duration* boot_delay) {
  if (boot_delay != nullptr) {
    RETURN_IF_ERROR(r.Keys(n, "autoscaling",
                           {"boot_delay", "scan_interval", "idle_time", "resume_timeout",
                            "resume_rate", "suspend_rate", "templates"}));
    if (n["boot_delay"]) {
      ASSIGN_OR_RETURN(*boot_delay, TimeWithin(r, n["boot_delay"], "autoscaling.boot_delay",
                                               Duration(0), std::chrono::hours(24)));
    }
    a->provider = {"(baton sim)"};  // the simulator answers the calls itself
  } else {
    RETURN_IF_ERROR(r.Keys(n, "autoscaling",
                           {"provider", "provider_timeout", "scan_interval", "idle_time",
                            "resume_timeout", "resume_rate", "suspend_rate", "templates"}));
  }
  if (const YAML::Node p = n["provider"]; p && boot_delay == nullptr) {
    // "/path/to/provider --its args" (split at spaces), or a list of them.
    if (p.IsSequence()) {
      if (p.size() == 0 || p.size() > 32)
        return r.Error(p, "autoscaling.provider", "must be 1 to 32 words");
      for (size_t i = 0; i < p.size(); ++i) {
        ASSIGN_OR_RETURN(std::string w,
                         r.Text(p[i], "autoscaling.provider[" + std::to_string(i) + "]"));
        a->provider.push_back(std::move(w));
      }
    } else {
      ASSIGN_OR_RETURN(std::string text, r.Text(p, "autoscaling.provider"));
      std::istringstream words(text);
      for (std::string w; words >> w;) a->provider.push_back(w);
      if (a->provider.empty() || a->provider.size() > 32)
        return r.Error(p, "autoscaling.provider", "must be 1 to 32 words");
    }
    if (a->provider[0].empty() || a->provider[0][0] != '/')
      return r.Error(p, "autoscaling.provider",
                     "must start with an absolute path such as /usr/local/bin/baton-aws-provider");
  }
  const Duration second = std::chrono::seconds(1), day = std::chrono::hours(24);
  if (n["provider_timeout"]) {
    ASSIGN_OR_RETURN(a->provider_timeout,
                     TimeWithin(r, n["provider_timeout"], "autoscaling.provider_timeout", second,
                                std::chrono::hours(1)));
  }
  if (n["scan_interval"]) {
    ASSIGN_OR_RETURN(a->scan_interval,
                     TimeWithin(r, n["scan_interval"], "autoscaling.scan_interval",
                                std::chrono::milliseconds(100), std::chrono::hours(1)));
  }
  if (n["idle_time"]) {
    ASSIGN_OR_RETURN(a->idle_time,
                     TimeWithin(r, n["idle_time"], "autoscaling.idle_time", Duration(0), 30 * day));
  }
  if (n["resume_timeout"]) {
    ASSIGN_OR_RETURN(a->resume_timeout,
                     TimeWithin(r, n["resume_timeout"], "autoscaling.resume_timeout", second, day));
  }
  if (n["resume_rate"]) {
    ASSIGN_OR_RETURN(a->resume_rate,
                     WholeNumber(r, n["resume_rate"], "autoscaling.resume_rate", 1, 10'000));
  }
  if (n["suspend_rate"]) {
    ASSIGN_OR_RETURN(a->suspend_rate,
                     WholeNumber(r, n["suspend_rate"], "autoscaling.suspend_rate", 1, 10'000));
  }
  if (const YAML::Node t = n["templates"]) {
    if (!t.IsSequence() || t.size() > 64)
      return r.Error(t, "autoscaling.templates", "must be a list of at most 64 node templates");
    std::set<std::string> names;
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string path = "autoscaling.templates[" + std::to_string(i) + "]";
      ASSIGN_OR_RETURN(NodeTemplate tmpl, ReadTemplate(r, t[i], path));
      if (!names.insert(tmpl.name).second)
        return r.Error(t[i]["name"], path + ".name", "named twice");
      a->templates.push_back(std::move(tmpl));
    }
  }
  if (boot_delay != nullptr && a->templates.empty())
    return r.Error(n, "autoscaling", "has no templates: what kinds of node may it start?");
  // A boot as long as the resume timeout fails every resume, and the replay would resume
  // for ever.
  if (boot_delay != nullptr && *boot_delay >= a->resume_timeout)
    return r.Error(n["boot_delay"] ? n["boot_delay"] : n, "autoscaling.boot_delay",
                   "must be shorter than resume_timeout (" + FormatDuration(a->resume_timeout) +
                       "), or every resume fails");
  if (a->provider.empty() != a->templates.empty())
    return r.Error(n, "autoscaling",
                   a->provider.empty() ? "has templates but no provider to start them"
                                       : "has a provider but no templates");
  return {};
}

}  // namespace baton::codec::internal
