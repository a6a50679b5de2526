#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/node.h"
#include "core/quantity.h"
#include "core/text.h"
#include "sim/openb_models.h"
#include "sim/sacct.h"

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

std::string Trimmed(std::string_view s) { return std::string(Trim(s)); }

Result<Duration> Seconds(const std::string& text, const std::string& field) {
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return DurationFromSeconds(d, field);
  return ParseDuration(text, field);
}

// The next line of `text` from `pos`, trimmed, counting lines in `line_no`; nullopt at the end.
std::optional<std::string> NextTrimmedLine(std::string_view text, size_t& pos, int& line_no) {
  std::optional<std::string_view> raw = NextLine(text, &pos);
  if (!raw) return std::nullopt;
  ++line_no;
  return Trimmed(*raw);
}

}  // namespace

JobSpec TraceJob::Spec() const {
  JobSpec spec;
  spec.name = name;
  spec.command = {"sim"};
  spec.resources = resources;
  spec.project = project;
  spec.priority = priority;
  spec.time_limit = time_limit;
  spec.preemptible = preemptible;
  return spec;
}

namespace {

// The steps of ParseTraceCsv. A row's problem comes back as InvalidArgument("FIELD: why"), or
// just "why" when no one field is at fault; ParseTraceCsv adds the file and line.

Status RowProblem(const std::string& field, const std::string& why) {
  return InvalidArgument(field.empty() ? why : field + ": " + why);
}

// The header line: each column known and named once, the required ones present.
Status ReadCsvHeader(const std::vector<std::string>& fields,
                     std::map<std::string, size_t>* column) {
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string name = Trimmed(fields[i]);
    static const char* kKnown[] = {"submit_time", "duration", "gpus",       "name",
                                   "user",        "project",  "priority",   "gpu_type",
                                   "time_limit",  "nodes",    "preemptible"};
    bool known = false;
    for (const char* k : kKnown) known |= name == k;
    if (!known) {
      return RowProblem(
          name,
          "unknown column (known: submit_time, duration, gpus, name, user, project, priority, "
          "gpu_type, time_limit, nodes, preemptible)");
    }
    if (!column->emplace(name, i).second) return RowProblem(name, "column named twice");
  }
  for (const char* required : {"submit_time", "duration", "gpus"}) {
    if (!column->count(required))
      return RowProblem(required, "required column missing from the header");
  }
  return Status::Ok();
}

// A column's trimmed field in a row; "" for a column the file lacks.
std::string Field(const std::vector<std::string>& fields,
                  const std::map<std::string, size_t>& column, const char* name) {
  auto it = column.find(name);
  return it == column.end() ? "" : Trimmed(fields[it->second]);
}

// One data row as a job.
Status ReadCsvRow(const std::vector<std::string>& fields,
                  const std::map<std::string, size_t>& column, TraceJob* j) {
  auto get = [&](const char* name) { return Field(fields, column, name); };
  auto submit = Seconds(get("submit_time"), "submit_time");
  if (!submit)
    return RowProblem("submit_time",
                      "\"" + get("submit_time").substr(0, 32) + "\" is not a time in seconds");
  j->submit = *submit;
  auto duration = Seconds(get("duration"), "duration");
  if (!duration)
    return RowProblem("duration",
                      "\"" + get("duration").substr(0, 32) + "\" is not a duration in seconds");
  j->duration = *duration;
  auto gpus = ParseMilli(get("gpus"), "gpus", SpecLimits::kMaxMilliGpus);
  if (!gpus) return RowProblem("gpus", gpus.error().message());
  j->resources.milli_gpus = *gpus;
  j->resources.nodes = 0;  // none named: as `baton submit` without -N
  if (std::string n = get("nodes"); !n.empty()) {
    char* end = nullptr;
    long nodes = std::strtol(n.c_str(), &end, 10);
    if (*end != '\0' || nodes < 1 || nodes > SpecLimits::kMaxNodes)
      return RowProblem("nodes", "must be 1 to 1024");
    j->resources.nodes = static_cast<int>(nodes);
  }
  j->resources.gpu_type = get("gpu_type");
  if (std::string s = get("name"); !s.empty()) j->name = s;
  if (std::string s = get("user"); !s.empty()) j->user = s;
  if (std::string s = get("project"); !s.empty()) j->project = s;
  if (std::string s = get("priority"); !s.empty()) {
    auto p = ParsePriority(s);
    if (!p) return RowProblem("priority", p.error().message());
    j->priority = *p;
  }
  if (std::string s = get("time_limit"); !s.empty()) {
    auto t = Seconds(s, "time_limit");
    if (!t) return RowProblem("time_limit", "\"" + s.substr(0, 32) + "\" is not a duration");
    j->time_limit = *t;
  }
  if (std::string s = get("preemptible"); !s.empty()) {
    if (s == "true" || s == "1" || s == "yes")
      j->preemptible = true;
    else if (s == "false" || s == "0" || s == "no")
      j->preemptible = false;
    else
      return RowProblem("preemptible", "must be true or false");
  }
  // The same rules as a submitted job: a trace row is a job spec.
  if (Status st = ValidateJobSpec(j->Spec()); !st.ok()) return RowProblem("", st.message());
  if (!IsValidNodeName(j->user))
    return RowProblem("user", "1-64 of letters, digits, '.', '_', '-'");
  return Status::Ok();
}

}  // namespace

Result<std::vector<TraceJob>> ParseTraceCsv(std::string_view text, std::string_view file,
                                            size_t max_jobs) {
  std::vector<TraceJob> jobs;
  std::map<std::string, size_t> column;
  size_t pos = 0;
  int line_no = 0;
  auto fail = [&](const std::string& why) {
    return Err(
        InvalidArgument(std::string(file) + ": line " + std::to_string(line_no) + ": " + why));
  };
  while (auto next = NextTrimmedLine(text, pos, line_no)) {
    const std::string& line = *next;
    if (line.empty() || line[0] == '#') continue;
    auto fields = SplitCsv(line);
    if (!fields) return fail(fields.error().message());
    if (column.empty()) {
      if (Status st = ReadCsvHeader(*fields, &column); !st.ok()) return fail(st.message());
      continue;
    }
    if (fields->size() != column.size()) {
      return fail(std::to_string(fields->size()) + " fields where the header has " +
                  std::to_string(column.size()));
    }
    if (jobs.size() >= max_jobs) return fail("more than " + std::to_string(max_jobs) + " jobs");
    TraceJob j;
    j.line = line_no;
    if (Status st = ReadCsvRow(*fields, column, &j); !st.ok()) return fail(st.message());
    jobs.push_back(std::move(j));
  }
  if (column.empty())
    return Err(InvalidArgument(std::string(file) + ": empty (a header line is needed)"));
  return jobs;
}

namespace {

// Each data line of a CSV with a header, as a map from column to field; `each` returns an
// error to stop. Lines are numbered from 1 (the header).
template <class F>
Status ForEachRow(std::string_view text, std::string_view file, F each) {
  std::vector<std::string> header;
  size_t pos = 0;
  int line_no = 0;
  while (auto next = NextTrimmedLine(text, pos, line_no)) {
    const std::string& line = *next;
    if (line.empty()) continue;
    auto fields = SplitCsv(line);
    if (!fields)
      return InvalidArgument(std::string(file) + ": line " + std::to_string(line_no) + ": " +
                             fields.error().message());
    if (header.empty()) {
      header = *fields;
      continue;
    }
    if (fields->size() != header.size()) {
      return InvalidArgument(std::string(file) + ": line " + std::to_string(line_no) + ": " +
                             std::to_string(fields->size()) + " fields where the header has " +
                             std::to_string(header.size()));
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = Trimmed((*fields)[i]);
    if (Status st = each(row, line_no); !st.ok()) return st;
  }
  return Status::Ok();
}

Result<double> Number(const std::string& text) {
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(d))
    return Err(InvalidArgument("not a number"));
  return d;
}

// "2017-10-09 07:01:55" as seconds since 1970 (the trace's own clock; only differences count).
Result<int64_t> PhillyTime(const std::string& text) {
  // Its shape, digit by digit (ParseRfc3339 checks the ranges): a look at 19 characters, where
  // sscanf took a tenth of the whole trace's reading.
  static constexpr std::string_view kShape = "9999-99-99 99:99:99";
  bool shaped = text.size() == kShape.size();
  for (size_t i = 0; shaped && i < kShape.size(); ++i) {
    shaped = kShape[i] == '9' ? text[i] >= '0' && text[i] <= '9' : text[i] == kShape[i];
  }
  if (!shaped) return Err(InvalidArgument("not a time YYYY-MM-DD HH:MM:SS"));
  auto t = ParseRfc3339(text.substr(0, 10) + "T" + text.substr(11) + "Z");
  if (!t) return Err(t.error());
  return ToMillis(*t) / 1000;
}

// The steps of ParseTrace: one function per kind of trace.

Status RowError(std::string_view file, int line, const std::string& field, const std::string& why) {
  return InvalidArgument(std::string(file) + ": line " + std::to_string(line) + ": " + field +
                         ": " + why);
}

// Microsoft's Philly trace: timestamp,duration,num_gpus,... with a virtual cluster per row.
Result<std::vector<TraceJob>> ParsePhilly(std::string_view text, std::string_view file,
                                          size_t max_jobs) {
  std::vector<TraceJob> jobs;
  std::vector<int64_t> at;
  Status st = ForEachRow(text, file, [&](std::map<std::string, std::string>& row, int line) {
    if (jobs.size() >= max_jobs)
      return RowError(file, line, "", "more than " + std::to_string(max_jobs) + " jobs");
    auto t = PhillyTime(row["timestamp"]);
    if (!t) return RowError(file, line, "timestamp", t.error().message());
    auto d = Number(row["duration"]);
    if (!d || *d < 0 || *d > 1e9)
      return RowError(file, line, "duration", "not a number of seconds");
    auto g = Number(row["num_gpus"]);
    if (!g || *g < 0 || *g > 4096 || *g != std::floor(*g))
      return RowError(file, line, "num_gpus", "not a whole number of GPUs");
    TraceJob j;
    j.line = line;
    j.duration = std::chrono::milliseconds(static_cast<int64_t>(*d * 1000));
    int gpus = static_cast<int>(*g);
    // Over 8 GPUs: a gang over nodes of 8, the fewest that divide the count evenly.
    int nodes = std::max(1, (gpus + 7) / 8);
    while (gpus > 0 && gpus % nodes != 0) ++nodes;
    j.resources.milli_gpus = int64_t{gpus} * 1000;
    j.resources.nodes = nodes;
    std::string vc = row["cluster"].empty() ? "unknown" : row["cluster"].substr(0, 48);
    if (!IsValidNodeName(vc))
      return RowError(file, line, "cluster", "not a name of letters and digits");
    j.project = "vc-" + vc;
    j.user = "vc-" + vc;
    at.push_back(*t);
    jobs.push_back(std::move(j));
    return Status::Ok();
  });
  if (!st.ok()) return Err(st);
  int64_t start = at.empty() ? 0 : *std::min_element(at.begin(), at.end());
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].submit = std::chrono::seconds(at[i] - start);
  return jobs;
}

// The trace's model names, as Baton names them (the node list's too). A list of acceptable
// types ("V100M16|V100M32"): Baton takes one type, so their family ("V100") when they share
// one, else the first.
std::string OpenbGpuType(std::string_view list) {
  std::string spec;
  for (size_t pos = 0; pos < list.size();) {
    size_t bar = std::min(list.find('|', pos), list.size());
    std::string one = OpenbGpuModel(list.substr(pos, bar - pos));
    if (spec.empty()) {
      spec = one;
    } else if (spec != one) {
      std::string family = one.substr(0, one.find('-'));
      spec = spec.substr(0, spec.find('-')) == family ? family : spec;
    }
    pos = bar + 1;
  }
  return spec;
}

// Alibaba's openb pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli,... with creation and
// deletion times; pods without them are left out.
Result<std::vector<TraceJob>> ParseOpenbPods(std::string_view text, std::string_view file,
                                             size_t max_jobs) {
  std::vector<TraceJob> jobs;
  Status st = ForEachRow(text, file, [&](std::map<std::string, std::string>& row, int line) {
    if (jobs.size() >= max_jobs)
      return RowError(file, line, "", "more than " + std::to_string(max_jobs) + " jobs");
    if (!row.count("creation_time") || !row.count("deletion_time")) {
      return RowError(file, line, "creation_time",
                      "this pod list has no times (multigpu50 has none): it cannot be replayed");
    }
    if (row["creation_time"].empty() || row["deletion_time"].empty()) return Status::Ok();
    auto created = Number(row["creation_time"]);
    auto deleted = Number(row["deletion_time"]);
    if (!created || *created < 0)
      return RowError(file, line, "creation_time", "not a number of seconds");
    if (!deleted || *deleted < *created)
      return RowError(file, line, "deletion_time", "not a number of seconds after creation_time");
    auto n = Number(row["num_gpu"]);
    auto m = Number(row["gpu_milli"]);
    if (!n || *n < 0 || *n > 64 || *n != std::floor(*n))
      return RowError(file, line, "num_gpu", "not a whole number of GPUs");
    if (!m || *m < 0 || *m > 1000) return RowError(file, line, "gpu_milli", "not 0 to 1000");
    // Within a year each: a time past int64's milliseconds would wrap (found by FuzzMutate).
    auto submit = DurationFromSeconds(*created, "creation_time");
    if (!submit) return RowError(file, line, "creation_time", "more than 366 days in");
    auto duration = DurationFromSeconds(*deleted - *created, "deletion_time");
    if (!duration)
      return RowError(file, line, "deletion_time", "more than 366 days after creation_time");
    TraceJob j;
    j.line = line;
    j.submit = *submit;
    j.duration = *duration;
    j.resources.milli_gpus =
        *n == 1 && *m > 0 && *m < 1000 ? static_cast<int64_t>(*m) : static_cast<int64_t>(*n) * 1000;
    std::string spec = OpenbGpuType(row["gpu_spec"]);
    if (!spec.empty() && j.resources.milli_gpus > 0) j.resources.gpu_type = spec.substr(0, 64);
    const std::string& qos = row["qos"];
    j.priority = qos == "Guaranteed" ? Priority::kHigh
                 : qos == "BE"       ? Priority::kLow
                                     : Priority::kNormal;
    j.project = qos.empty() ? "default" : "qos-" + qos.substr(0, 32);
    j.user = j.project;
    j.name = row["name"].substr(0, SpecLimits::kNameBytes);
    jobs.push_back(std::move(j));
    return Status::Ok();
  });
  if (!st.ok()) return Err(st);
  return jobs;
}

}  // namespace

Result<std::vector<TraceJob>> ParseTrace(std::string_view text, std::string_view file,
                                         size_t max_jobs) {
  size_t first = text.find_first_not_of(" \t\r\n");
  std::string_view header =
      first == std::string_view::npos ? "" : text.substr(first, text.find('\n', first) - first);
  if (IsSacctHeader(header)) return ParseSacct(text, file, max_jobs);
  if (header.starts_with("timestamp,duration,num_gpus")) return ParsePhilly(text, file, max_jobs);
  if (header.starts_with("name,cpu_milli,memory_mib,num_gpu,gpu_milli"))
    return ParseOpenbPods(text, file, max_jobs);
  return ParseTraceCsv(text, file, max_jobs);
}

}  // namespace baton::sim
