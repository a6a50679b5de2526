#include "sim/trace.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include "core/node.h"
#include "core/quantity.h"

namespace baton::sim {
namespace {

// Splits one CSV line; double quotes may wrap a field ("a,b"), "" inside them is a quote.
Result<std::vector<std::string>> SplitCsv(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty()) {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
    } else {
      field += c;
    }
  }
  if (quoted) return Err(InvalidArgument("a quoted field is not closed"));
  out.push_back(std::move(field));
  return out;
}

std::string Trim(std::string s) {
  size_t a = s.find_first_not_of(" \t\r");
  size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

Result<Duration> Seconds(const std::string& text, const std::string& field) {
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return DurationFromSeconds(d, field);
  return ParseDuration(text, field);
}

}  // namespace

Result<std::vector<TraceJob>> ParseTraceCsv(std::string_view text, std::string_view file, size_t max_jobs) {
  std::vector<TraceJob> jobs;
  std::map<std::string, size_t> column;
  size_t pos = 0;
  int line_no = 0;
  auto fail = [&](const std::string& field, const std::string& why) {
    return Err(InvalidArgument(std::string(file) + ": line " + std::to_string(line_no) +
                               (field.empty() ? "" : ": " + field) + ": " + why));
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    std::string line = Trim(std::string(raw));
    if (line.empty() || line[0] == '#') continue;
    auto fields = SplitCsv(line);
    if (!fields) return fail("", fields.error().message());
    if (column.empty()) {
      for (size_t i = 0; i < fields->size(); ++i) {
        std::string name = Trim((*fields)[i]);
        static const char* kKnown[] = {"submit_time", "duration", "gpus", "name", "user", "project",
                                       "priority", "gpu_type", "time_limit", "nodes", "preemptible"};
        bool known = false;
        for (const char* k : kKnown) known |= name == k;
        if (!known) {
          return fail(name, "unknown column (known: submit_time, duration, gpus, name, user, project, priority, "
                            "gpu_type, time_limit, nodes, preemptible)");
        }
        if (!column.emplace(name, i).second) return fail(name, "column named twice");
      }
      for (const char* required : {"submit_time", "duration", "gpus"}) {
        if (!column.count(required)) return fail(required, "required column missing from the header");
      }
      continue;
    }
    if (fields->size() != column.size()) {
      return fail("", std::to_string(fields->size()) + " fields where the header has " +
                          std::to_string(column.size()));
    }
    if (jobs.size() >= max_jobs) return fail("", "more than " + std::to_string(max_jobs) + " jobs");
    auto get = [&](const char* name) -> std::string {
      auto it = column.find(name);
      return it == column.end() ? "" : Trim((*fields)[it->second]);
    };
    TraceJob j;
    j.line = line_no;
    auto submit = Seconds(get("submit_time"), "submit_time");
    if (!submit) return fail("submit_time", "\"" + get("submit_time").substr(0, 32) + "\" is not a time in seconds");
    j.submit = *submit;
    auto duration = Seconds(get("duration"), "duration");
    if (!duration) return fail("duration", "\"" + get("duration").substr(0, 32) + "\" is not a duration in seconds");
    j.duration = *duration;
    auto gpus = ParseMilli(get("gpus"), "gpus", SpecLimits::kMaxMilliGpus);
    if (!gpus) return fail("gpus", gpus.error().message());
    j.resources.milli_gpus = *gpus;
    if (std::string n = get("nodes"); !n.empty()) {
      char* end = nullptr;
      long nodes = std::strtol(n.c_str(), &end, 10);
      if (*end != '\0' || nodes < 1 || nodes > SpecLimits::kMaxNodes) return fail("nodes", "must be 1 to 1024");
      j.resources.nodes = static_cast<int>(nodes);
    }
    j.resources.gpu_type = get("gpu_type");
    if (std::string s = get("name"); !s.empty()) j.name = s;
    if (std::string s = get("user"); !s.empty()) j.user = s;
    if (std::string s = get("project"); !s.empty()) j.project = s;
    if (std::string s = get("priority"); !s.empty()) {
      auto p = ParsePriority(s);
      if (!p) return fail("priority", p.error().message());
      j.priority = *p;
    }
    if (std::string s = get("time_limit"); !s.empty()) {
      auto t = Seconds(s, "time_limit");
      if (!t) return fail("time_limit", "\"" + s.substr(0, 32) + "\" is not a duration");
      j.time_limit = *t;
    }
    if (std::string s = get("preemptible"); !s.empty()) {
      if (s == "true" || s == "1" || s == "yes") j.preemptible = true;
      else if (s == "false" || s == "0" || s == "no") j.preemptible = false;
      else return fail("preemptible", "must be true or false");
    }
    // The same rules as a submitted job: a trace row is a job spec.
    JobSpec spec;
    spec.name = j.name;
    spec.command = {"sim"};
    spec.resources = j.resources;
    spec.project = j.project;
    spec.priority = j.priority;
    spec.time_limit = j.time_limit;
    if (Status st = ValidateJobSpec(spec); !st.ok()) return fail("", st.message());
    if (!IsValidNodeName(j.user)) return fail("user", "1-64 of letters, digits, '.', '_', '-'");
    jobs.push_back(std::move(j));
  }
  if (column.empty()) return Err(InvalidArgument(std::string(file) + ": empty (a header line is needed)"));
  return jobs;
}

}  // namespace baton::sim
