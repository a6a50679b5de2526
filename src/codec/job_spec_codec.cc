// JSON <-> JobSpec: what users submit (POST /v1/jobs, batches, YAML job files through
// YamlToJson), field by field with the field's path in every error, and back.
#include <algorithm>
#include <charconv>

#include "codec/internal/job_spec.h"
#include "codec/internal/json_util.h"
#include "codec/job_patch.h"
#include "codec/json_codec.h"
#include "core/hostlist.h"

namespace baton::codec {

using namespace internal;

namespace {

Result<int64_t> GetSize(const json::value& v, std::string_view field) {
  if (v.is_string()) {
    return ParseSize(std::string_view(v.get_string().data(), v.get_string().size()), field);
  }
  if (v.is_number()) {
    ASSIGN_OR_RETURN(double bytes, GetNumber(v, field));
    return SizeFromNumber(bytes, field);
  }
  return Err(FieldError(field, "must be bytes (a number) or a string such as 40GiB"));
}

// Node names: a list of them, or one string in Slurm's host-list form ("gpu[01-04],login1").
Result<std::vector<std::string>> GetNodeNames(const json::value& v, const std::string& field) {
  const size_t max = SpecLimits::kMaxNodes;
  std::vector<std::string> names;
  if (v.is_string()) {
    ASSIGN_OR_RETURN(std::string text, GetString(v, field, SpecLimits::kPathBytes));
    auto expanded = ExpandHostList(text, max);
    if (!expanded) return Err(FieldError(field, expanded.error().message()));
    names = std::move(*expanded);
  } else {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(v, field));
    if (a->size() > max) return Err(FieldError(field, "at most 1024 nodes"));
    for (size_t i = 0; i < a->size(); ++i) {
      ASSIGN_OR_RETURN(std::string name, GetString((*a)[i], field + "[" + std::to_string(i) + "]",
                                                   SpecLimits::kLabelBytes));
      names.push_back(std::move(name));
    }
  }
  return names;
}

Status DecodeResources(const json::value& v, std::string_view prefix, Resources* r) {
  auto obj = GetObject(v, prefix);
  if (!obj) return obj.error();
  for (const auto& kv : **obj) {
    std::string_view key(kv.key().data(), kv.key().size());
    std::string field = Join(prefix, key);
    const json::value& val = kv.value();
    if (val.is_null()) continue;
    if (key == "gpus") {
      // A number, or its text as `baton submit --gpus` takes it ("0.25"; a form's field).
      Result<int64_t> m =
          val.is_string()
              ? ParseMilli(std::string_view(val.get_string()), field, SpecLimits::kMaxMilliGpus)
          : val.is_number()
              ? MilliFromNumber(*GetNumber(val, field), field, SpecLimits::kMaxMilliGpus)
              : Err(FieldError(field, "must be a number such as 1, 8 or 0.25"));
      if (!m) return m.error();
      r->milli_gpus = *m;
    } else if (key == "gpu_type") {
      auto s = GetString(val, field, SpecLimits::kLabelBytes);
      if (!s) return s.error();
      r->gpu_type = *s;
    } else if (key == "gpu_memory" || key == "gpu_memory_bytes") {
      auto s = GetSize(val, field);
      if (!s) return s.error();
      r->gpu_memory_bytes = *s;
    } else if (key == "nodes") {
      auto n = GetInt(val, field, 0, SpecLimits::kMaxNodes);
      if (!n) return n.error();
      r->nodes = static_cast<int>(*n);
    } else if (key == "cpus") {
      auto n = GetInt(val, field, 0, SpecLimits::kMaxCpus);
      if (!n) return n.error();
      r->cpus = static_cast<int>(*n);
    } else if (key == "memory" || key == "memory_bytes") {
      auto s = GetSize(val, field);
      if (!s) return s.error();
      r->memory_bytes = *s;
    } else if (key == "exclusive") {
      ASSIGN_OR_RETURN(r->exclusive, GetBool(val, field));
    } else if (key == "nodelist" || key == "exclude") {
      ASSIGN_OR_RETURN(*(key == "nodelist" ? &r->nodelist : &r->exclude), GetNodeNames(val, field));
    } else {
      return FieldError(field,
                        "unknown field (valid: gpus, gpu_type, gpu_memory, nodes, cpus, memory, "
                        "exclusive, nodelist, exclude)");
    }
  }
  return Status::Ok();
}

Status DecodeCommand(const json::value& v, JobSpec* spec) {
  if (v.is_string()) {
    auto s = GetString(v, "command", SpecLimits::kCommandBytes);
    if (!s) return s.error();
    spec->command = {*s};
    spec->shell = true;
    return Status::Ok();
  }
  if (!v.is_array()) return FieldError("command", "must be an array of strings or a string");
  const json::array& a = v.get_array();
  if (a.size() > SpecLimits::kCommandArgs) {
    return FieldError("command",
                      "more than " + std::to_string(SpecLimits::kCommandArgs) + " arguments");
  }
  spec->command.clear();
  for (size_t i = 0; i < a.size(); ++i) {
    auto s = GetString(a[i], "command[" + std::to_string(i) + "]", SpecLimits::kCommandBytes);
    if (!s) return s.error();
    spec->command.push_back(std::move(*s));
  }
  spec->shell = false;
  return Status::Ok();
}

Status DecodeEnv(const json::value& val, const std::string& field, JobSpec* spec) {
  auto o = GetObject(val, field);
  if (!o) return o.error();
  if ((*o)->size() > SpecLimits::kEnvVars) return FieldError(field, "too many variables");
  spec->env.clear();
  for (const auto& e : **o) {
    std::string k(e.key().data(), e.key().size());
    auto s = GetString(e.value(), Join(field, k), SpecLimits::kEnvBytes);
    if (!s) return s.error();
    spec->env.emplace_back(std::move(k), std::move(*s));
  }
  return Status::Ok();
}

// after, after_any, after_notok: one job id, or a list of them.
// Job ids; whether each is one (positive) is ValidateJobSpec's to say, in the words the CLI
// uses ("after: job ids are positive integers").
Status DecodeAfter(const json::value& val, const std::string& field, std::vector<JobId>* ids) {
  ids->clear();
  if (val.is_number()) {
    auto n = GetInt(val, field, INT64_MIN, INT64_MAX);
    if (!n) return n.error();
    ids->push_back(JobId{*n});
    return Status::Ok();
  }
  auto a = GetArray(val, field);
  if (!a) return a.error();
  if ((*a)->size() > SpecLimits::kMaxAfter) return FieldError(field, "more than 256 dependencies");
  for (size_t i = 0; i < (*a)->size(); ++i) {
    auto n = GetInt((**a)[i], field + "[" + std::to_string(i) + "]", INT64_MIN, INT64_MAX);
    if (!n) return n.error();
    ids->push_back(JobId{*n});
  }
  return Status::Ok();
}

// A sweep value as text: strings as they are, numbers and booleans as JSON writes them.
Result<std::string> SweepValue(const json::value& v, const std::string& field) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_double()) {
    char text[64];
    auto [end, ec] = std::to_chars(text, text + sizeof text, v.get_double());  // shortest: 2.5
    if (ec == std::errc()) return std::string(text, end);
  }
  if (v.is_int64() || v.is_uint64() || v.is_bool()) return json::serialize(v);
  return Err(FieldError(field, "must be text, a number or true/false"));
}

// sweep: a list of parameter sets ({NAME: VALUE}), or a grid ({NAME: [VALUE, ...]}) whose every
// combination is a set, the first name varying slowest.
Status DecodeSweep(const json::value& val, const std::string& field, JobSpec* spec) {
  spec->sweep.clear();
  using Set = std::vector<std::pair<std::string, std::string>>;
  if (val.is_array()) {
    const json::array& list = val.get_array();
    if (list.size() > SpecLimits::kMaxArrayTasks)
      return FieldError(field, "more than 10000 parameter sets");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string at = field + "[" + std::to_string(i) + "]";
      if (!list[i].is_object()) return FieldError(at, "must be a map of NAME: VALUE");
      Set set;
      for (const auto& kv : list[i].get_object()) {
        auto v = SweepValue(kv.value(), at + "." + std::string(kv.key()));
        if (!v) return v.error();
        set.emplace_back(std::string(kv.key()), std::move(*v));
      }
      spec->sweep.push_back(std::move(set));
    }
  } else if (val.is_object()) {
    std::vector<Set> sets = {Set{}};
    for (const auto& kv : val.get_object()) {
      std::string at = field + "." + std::string(kv.key());
      if (!kv.value().is_array() || kv.value().get_array().empty())
        return FieldError(at, "must be a non-empty list of values");
      std::vector<Set> next;
      for (const Set& s : sets) {
        for (const auto& item : kv.value().get_array()) {
          auto v = SweepValue(item, at);
          if (!v) return v.error();
          Set grown = s;
          grown.emplace_back(std::string(kv.key()), std::move(*v));
          next.push_back(std::move(grown));
          if (next.size() > SpecLimits::kMaxArrayTasks)
            return FieldError(field, "more than 10000 combinations");
        }
      }
      sets = std::move(next);
    }
    spec->sweep = std::move(sets);
  } else {
    return FieldError(field, "must be a list of parameter sets or a map of NAME: [VALUES]");
  }
  if (spec->sweep.empty()) return FieldError(field, "has no parameter set");
  return Status::Ok();
}

// `model`: a model to size the job from, {name: Llama-3-8B} or {params: 7B}, with its task,
// precision, seq, batch, optimizer, zero and checkpointing; "Llama-3-8B" alone is the name.
Status DecodeModelSizing(const json::value& val, const std::string& field, JobSpec* spec) {
  ModelSizing m;
  if (val.is_string()) {
    auto name = GetString(val, field, SpecLimits::kLabelBytes);
    if (!name) return name.error();
    m.name = *name;
    spec->model = m;
    return Status::Ok();
  }
  auto obj = GetObject(val, field);
  if (!obj) return obj.error();
  for (const auto& kv : **obj) {
    const std::string key(kv.key());
    const std::string at = field + "." + key;
    const json::value& v = kv.value();
    if (v.is_null()) continue;
    auto text = [&]() { return GetString(v, at, 64); };
    if (key == "name") {
      auto t = GetString(v, at, SpecLimits::kLabelBytes);
      if (!t) return t.error();
      m.name = *t;
    } else if (key == "params") {
      auto p = v.is_string() ? ParseParams(v.get_string(), at) : GetNumber(v, at);
      if (!p) return p.error();
      m.params = *p;
    } else if (key == "task" || key == "precision" || key == "optimizer") {
      auto t = text();
      if (!t) return t.error();
      if (key == "task") {
        auto x = ParseModelTask(*t, at);
        if (!x) return x.error();
        m.task = *x;
      } else if (key == "precision") {
        auto x = ParsePrecision(*t, at);
        if (!x) return x.error();
        m.precision = *x;
      } else {
        auto x = ParseOptimizer(*t, at);
        if (!x) return x.error();
        m.optimizer = *x;
      }
    } else if (key == "seq" || key == "batch" || key == "zero") {
      auto n = GetInt(v, at, key == "zero" ? 0 : 1, key == "zero" ? 3 : 10'000'000);
      if (!n) return n.error();
      if (key == "seq") {
        m.seq = *n;
      } else if (key == "batch") {
        m.batch = *n;
      } else {
        m.zero = static_cast<int>(*n);
      }
    } else if (key == "checkpointing") {
      auto b = GetBool(v, at);
      if (!b) return b.error();
      m.checkpointing = *b;
    } else {
      return FieldError(at,
                        "unknown field (valid: name, params, task, precision, seq, batch, "
                        "optimizer, zero, checkpointing)");
    }
  }
  spec->model = m;
  return Status::Ok();
}

// The fields of when and how many times a job runs: dependencies, begin, schedule, array and
// sweep; nullopt when `key` is none of them.
std::optional<Status> DecodeWhenField(std::string_view key, const std::string& field,
                                      const json::value& val, JobSpec* spec) {
  if (key == "after" || key == "after_ok") return DecodeAfter(val, field, &spec->after);
  if (key == "after_any") return DecodeAfter(val, field, &spec->after_any);
  if (key == "after_notok") return DecodeAfter(val, field, &spec->after_notok);
  if (key == "sweep") return DecodeSweep(val, field, spec);
  if (key == "array") {
    auto s = GetString(val, field, 4096);
    if (!s) return s.error();
    spec->array = *s;
    return Status::Ok();
  }
  if (key == "schedule") {
    auto s = GetString(val, field, SpecLimits::kScheduleBytes);
    if (!s) return s.error();
    spec->schedule = *s;
    return Status::Ok();
  }
  if (key == "begin") {
    auto t = GetTime(val, field);
    if (!t) return t.error();
    spec->begin = *t;
    return Status::Ok();
  }
  return std::nullopt;
}

// The fields about the model it runs: `model` (sizing) and `best_metric`; nullopt when `key`
// is neither.
std::optional<Status> DecodeModelField(std::string_view key, const std::string& field,
                                       const json::value& val, JobSpec* spec) {
  if (key == "model") return DecodeModelSizing(val, field, spec);
  if (key != "best_metric") return std::nullopt;
  auto s = GetString(val, field, 80);
  if (!s) return s.error();
  auto tracked = ParseBestMetric(*s, field);
  if (!tracked) return tracked.error();
  spec->best_metric = tracked->first;
  spec->best_max = tracked->second;
  return Status::Ok();
}

// One non-null field of a spec object; `field` is its path for errors.
Status DecodeSpecField(std::string_view key, const std::string& field, const json::value& val,
                       JobSpec* spec) {
  if (key == "name") {
    auto s = GetString(val, field, SpecLimits::kNameBytes);
    if (!s) return s.error();
    spec->name = *s;
  } else if (key == "command") {
    return DecodeCommand(val, spec);
  } else if (key == "shell") {
    // Informational in the public form; the command's type decides.
    auto b = GetBool(val, field);
    if (!b) return b.error();
  } else if (key == "resources") {
    return DecodeResources(val, field, &spec->resources);
  } else if (key == "priority") {
    auto s = GetString(val, field, 32);
    if (!s) return s.error();
    auto p = ParsePriority(*s);
    if (!p) {
      return FieldError(
          field, "must be one of low, normal, high, critical (got \"" + s->substr(0, 32) + "\")");
    }
    spec->priority = *p;
  } else if (key == "interactive") {
    auto i = Named<Interactive>(kInteractiveNames)(val, field);
    if (!i) return i.error();
    spec->interactive = *i;
  } else if (key == "code") {
    auto s = GetString(val, field, 64);
    if (!s) return s.error();
    spec->code = *s;
  } else if (key == "image") {
    auto s = GetString(val, field, 512);
    if (!s) return s.error();
    spec->image = *s;
  } else if (key == "project" || key == "pool" || key == "workdir" || key == "venv" ||
             key == "conda") {
    auto s = GetString(val, field, SpecLimits::kPathBytes);
    if (!s) return s.error();
    (key == "project" ? spec->project
     : key == "pool"  ? spec->pool
     : key == "venv"  ? spec->venv
     : key == "conda" ? spec->conda
                      : spec->workdir) = *s;
  } else if (key == "time_limit" || key == "time_limit_s") {
    auto d = GetDuration(val, field);
    if (!d) return d.error();
    spec->time_limit = *d;
  } else if (key == "grace_period" || key == "grace_period_s") {
    auto d = GetDuration(val, field);
    if (!d) return d.error();
    spec->grace_period = *d;
  } else if (key == "signal") {
    auto s = GetString(val, field, 64);
    if (!s) return s.error();
    if (s->empty()) {
      spec->signal = 0;
      spec->signal_before = Duration(0);
      spec->signal_shell = false;
      return Status::Ok();
    }
    auto notice = ParseNoticeSignal(*s, field);
    if (!notice) return notice.error();
    spec->signal = notice->signal;
    spec->signal_before = notice->before;
    spec->signal_shell = notice->shell;
  } else if (key == "output_limit") {
    auto s = GetSize(val, field);
    if (!s) return s.error();
    if (*s != 0 && *s < (int64_t{64} << 10))
      return FieldError(field, "at least 64KiB (or 0: the pool's or the cluster's)");
    spec->output_limit = *s;
  } else if (key == "retries") {
    auto n = GetInt(val, field, 0, SpecLimits::kMaxRetries);
    if (!n) return n.error();
    spec->retries = static_cast<int>(*n);
  } else if (key == "max_preemptions") {
    if (val.is_null()) return Status::Ok();
    auto n = GetInt(val, field, 0, SpecLimits::kMaxPreemptions);
    if (!n) return n.error();
    spec->max_preemptions = static_cast<int>(*n);
  } else if (key == "env") {
    return DecodeEnv(val, field, spec);
  } else if (std::optional<Status> st = DecodeWhenField(key, field, val, spec)) {
    return *st;
  } else if (std::optional<Status> st = DecodeModelField(key, field, val, spec)) {
    return *st;
  } else if (key == "preemptible") {
    auto b = GetBool(val, field);
    if (!b) return b.error();
    spec->preemptible = *b;
  } else if (key == "hold" || key == "process_per_gpu" || key == "singleton" || key == "batch" ||
             key == "slurm_env" || key == "alloc" || key == "requeue") {
    auto b = GetBool(val, field);
    if (!b) return b.error();
    (key == "hold"        ? spec->hold
     : key == "singleton" ? spec->singleton
     : key == "batch"     ? spec->batch
     : key == "slurm_env" ? spec->slurm_env
     : key == "alloc"     ? spec->alloc
     : key == "requeue"   ? spec->requeue
                          : spec->process_per_gpu) = *b;
  } else if (key == "output_file" || key == "error_file") {
    auto s = GetString(val, field, SpecLimits::kPathBytes);
    if (!s) return s.error();
    (key == "output_file" ? spec->output_file : spec->error_file) = *s;
  } else if (key == "tasks_per_node") {
    auto n = GetInt(val, field, 0, SpecLimits::kMaxTasksPerNode);
    if (!n) return n.error();
    spec->tasks_per_node = static_cast<int>(*n);
  } else {
    return FieldError(
        field,
        "unknown field (valid: name, command, resources, priority, project, pool, "
        "time_limit, grace_period, signal, output_limit, retries, requeue, max_preemptions, env, "
        "workdir, venv, "
        "conda, "
        "image, code, interactive, after, after_any, "
        "after_notok, singleton, begin, schedule, array, sweep, model, best_metric, "
        "preemptible, hold, "
        "process_per_gpu, batch, slurm_env, alloc, output_file, error_file, tasks_per_node)");
  }
  return Status::Ok();
}

}  // namespace

namespace internal {

Status DecodeSpecObject(const json::value& v, std::string_view prefix, JobSpec* spec) {
  auto obj = GetObject(v, prefix);
  if (!obj) return obj.error();
  bool has_command = false;
  for (const auto& kv : **obj) {
    std::string_view key(kv.key().data(), kv.key().size());
    std::string field = Join(prefix, key);
    const json::value& val = kv.value();
    if (val.is_null()) continue;
    if (key == "command") has_command = true;
    RETURN_IF_ERROR(DecodeSpecField(key, field, val, spec));
  }
  if (!has_command) return FieldError(Join(prefix, "command"), "is required");
  Status st = ValidateJobSpec(*spec);
  if (!st.ok() && !prefix.empty()) return InvalidArgument(std::string(prefix) + "." + st.message());
  return st;
}

json::object EncodeModelSizing(const ModelSizing& m) {
  json::object o;
  if (!m.name.empty()) o["name"] = m.name;
  if (m.params > 0) o["params"] = m.params;
  o["task"] = ModelTaskName(m.task);
  o["precision"] = PrecisionName(m.precision);
  o["seq"] = m.seq;
  o["batch"] = m.batch;
  if (m.task != ModelTask::kInference) {
    o["optimizer"] = OptimizerName(m.optimizer);
    o["zero"] = m.zero;
    o["checkpointing"] = m.checkpointing;
  }
  return o;
}

// exclusive, nodelist and exclude, where given.
static void AddPlacement(const Resources& r, json::object& o) {
  if (r.exclusive) o["exclusive"] = true;
  for (const auto* list : {&r.nodelist, &r.exclude}) {
    if (list->empty()) continue;
    json::array names;
    for (const std::string& n : *list) names.emplace_back(n);
    o[list == &r.nodelist ? "nodelist" : "exclude"] = std::move(names);
  }
}

json::object EncodeResources(const Resources& r) {
  json::object o;
  o["gpus"] = r.milli_gpus % 1000 == 0 ? json::value(r.milli_gpus / 1000)
                                       : json::value(static_cast<double>(r.milli_gpus) / 1000.0);
  o["gpu_type"] = r.gpu_type.empty() ? json::value(nullptr) : json::value(r.gpu_type);
  o["gpu_memory_bytes"] = r.gpu_memory_bytes;
  o["nodes"] = r.nodes;
  o["cpus"] = r.cpus;
  o["memory_bytes"] = r.memory_bytes;
  AddPlacement(r, o);
  return o;
}

}  // namespace internal

Result<JobSpec> DecodeJobSpec(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  JobSpec spec = SubmittedSpec();
  RETURN_IF_ERROR(DecodeSpecObject(v, "", &spec));
  return spec;
}

namespace {

bool IsBatchObject(const json::value& v) {
  return v.is_object() && v.get_object().contains("jobs");
}

// {"jobs": [spec, ...]}, or a bare array of specs.
Result<std::vector<JobSpec>> DecodeSpecList(const json::value& v) {
  const json::array* list = nullptr;
  if (IsBatchObject(v)) {
    for (const auto& kv : v.get_object()) {
      if (kv.key() != "jobs")
        return Err(FieldError(std::string(kv.key()), "unknown field (valid: jobs)"));
    }
    ASSIGN_OR_RETURN(list, GetArray(v.get_object().at("jobs"), "jobs"));
  } else {
    list = &v.get_array();
  }
  if (list->empty()) return Err(InvalidArgument("jobs: must hold at least one job"));
  if (list->size() > 10000) return Err(TooLarge("jobs: at most 10000 jobs in one batch"));
  std::vector<JobSpec> specs;
  specs.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    JobSpec spec = SubmittedSpec();
    RETURN_IF_ERROR(DecodeSpecObject((*list)[i], "jobs[" + std::to_string(i) + "]", &spec));
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace

Result<std::vector<JobSpec>> DecodeJobSpecs(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  if (IsBatchObject(v) || v.is_array()) return DecodeSpecList(v);
  JobSpec spec = SubmittedSpec();
  RETURN_IF_ERROR(DecodeSpecObject(v, "", &spec));
  return std::vector<JobSpec>{std::move(spec)};
}

Result<JobPatch> DecodeJobPatch(std::string_view text) {
  static constexpr std::string_view kFields[] = {"time_limit",  "priority", "name",  "project",
                                                 "pool",        "begin",    "after", "after_any",
                                                 "after_notok", "retries"};
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* obj, GetObject(v, "body"));
  JobPatch patch;
  patch.fields = SubmittedSpec();
  for (const auto& kv : *obj) {
    std::string key(kv.key().data(), kv.key().size());
    if (key == "time_limit_s") key = "time_limit";
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      return Err(FieldError(key,
                            "not a field that changes (valid: time_limit, priority, name, "
                            "project, pool, begin, after, after_any, after_notok, retries)"));
    }
    if (kv.value().is_null()) {
      if (key != "begin") return Err(FieldError(key, "must not be null"));
      patch.fields.begin.reset();
    } else {
      RETURN_IF_ERROR(DecodeSpecField(key, key, kv.value(), &patch.fields));
    }
    patch.set.insert(key);
  }
  if (patch.set.empty()) {
    return Err(
        InvalidArgument("body: name a field to change (time_limit, priority, name, "
                        "project, pool, begin, after, after_any, after_notok, retries)"));
  }
  return patch;
}

Result<std::vector<JobSpec>> DecodeJobBatch(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  if (!IsBatchObject(v)) return Err(InvalidArgument("body: must be {\"jobs\": [spec, ...]}"));
  return DecodeSpecList(v);
}

std::string EncodeJobSpec(const JobSpec& s) {
  json::object o;
  if (!s.name.empty()) o["name"] = s.name;
  if (s.shell) {
    o["command"] = s.command.at(0);
  } else {
    json::array cmd;
    for (const auto& a : s.command) cmd.emplace_back(a);
    o["command"] = std::move(cmd);
  }
  json::object r = EncodeResources(s.resources);
  json::object res;
  res["gpus"] = r["gpus"];
  if (!s.resources.gpu_type.empty()) res["gpu_type"] = s.resources.gpu_type;
  if (s.resources.gpu_memory_bytes > 0) res["gpu_memory"] = s.resources.gpu_memory_bytes;
  if (s.resources.nodes != 0) res["nodes"] = s.resources.nodes;
  if (s.resources.cpus > 0) res["cpus"] = s.resources.cpus;
  if (s.resources.memory_bytes > 0) res["memory"] = s.resources.memory_bytes;
  AddPlacement(s.resources, res);
  o["resources"] = std::move(res);
  o["priority"] = PriorityName(s.priority);
  o["project"] = s.project;
  o["pool"] = s.pool;
  if (s.time_limit.count() > 0)
    o["time_limit"] = static_cast<double>(s.time_limit.count()) / 1000.0;
  o["grace_period"] = static_cast<double>(s.grace_period.count()) / 1000.0;
  if (s.signal != 0) o["signal"] = FormatNoticeSignal(s.signal, s.signal_before, s.signal_shell);
  if (s.retries > 0) o["retries"] = s.retries;
  if (!s.requeue) o["requeue"] = false;
  if (s.max_preemptions) o["max_preemptions"] = *s.max_preemptions;
  if (s.output_limit > 0) o["output_limit"] = s.output_limit;
  if (!s.env.empty()) {
    json::object env;
    for (const auto& [k, v] : s.env) env[k] = v;
    o["env"] = std::move(env);
  }
  if (!s.workdir.empty()) o["workdir"] = s.workdir;
  if (!s.venv.empty()) o["venv"] = s.venv;
  if (!s.conda.empty()) o["conda"] = s.conda;
  if (s.interactive != Interactive::kNone) o["interactive"] = InteractiveName(s.interactive);
  if (!s.code.empty()) o["code"] = s.code;
  if (!s.image.empty()) o["image"] = s.image;
  for (const auto& [key, ids] : {std::pair{"after", &s.after}, std::pair{"after_any", &s.after_any},
                                 std::pair{"after_notok", &s.after_notok}}) {
    if (ids->empty()) continue;
    json::array list;
    for (JobId id : *ids) list.emplace_back(id.value);
    o[key] = std::move(list);
  }
  if (s.singleton) o["singleton"] = true;
  if (s.begin) o["begin"] = TimeValue(*s.begin);
  if (!s.array.empty()) o["array"] = s.array;
  if (!s.schedule.empty()) o["schedule"] = s.schedule;
  if (s.model) o["model"] = EncodeModelSizing(*s.model);
  if (!s.best_metric.empty()) o["best_metric"] = s.best_metric + (s.best_max ? ":max" : ":min");
  if (!s.sweep.empty()) {
    json::array sets;
    for (const auto& set : s.sweep) {
      json::object params;
      for (const auto& [k, v] : set) params[k] = v;
      sets.emplace_back(std::move(params));
    }
    o["sweep"] = std::move(sets);
  }
  if (s.preemptible) o["preemptible"] = *s.preemptible;
  if (s.process_per_gpu) o["process_per_gpu"] = true;
  if (s.hold) o["hold"] = true;
  if (s.batch) o["batch"] = true;
  if (s.slurm_env) o["slurm_env"] = true;
  if (s.alloc) o["alloc"] = true;
  if (!s.output_file.empty()) o["output_file"] = s.output_file;
  if (!s.error_file.empty()) o["error_file"] = s.error_file;
  if (s.tasks_per_node > 0) o["tasks_per_node"] = s.tasks_per_node;
  return json::serialize(o);
}

}  // namespace baton::codec
