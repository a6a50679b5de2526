#include "sim/sacct.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

#include "core/job.h"
#include "core/node.h"
#include "core/quantity.h"
#include "core/text.h"
#include "core/time.h"

namespace baton::sim {
namespace {

// Real sacct lines are a few hundred bytes (AllocTRES is the longest field); bounding the line
// bounds every field and the number of fields.
constexpr size_t kMaxLineBytes = 64 * 1024;
constexpr int kMaxLines = 2'000'000'000;  // line numbers stay an int
constexpr int64_t kMaxGpus = SpecLimits::kMaxMilliGpus / kMilli;
constexpr int64_t kMaxSeconds =
    std::chrono::duration_cast<std::chrono::seconds>(kMaxDuration).count();

std::string Quote(std::string_view s) {
  return "\"" + std::string(s.substr(0, 48)) + (s.size() > 48 ? "...\"" : "\"");
}

// A whole number up to `max`: no sign, blank, fraction, exponent or "nan"; never overflows.
std::optional<int64_t> Whole(std::string_view s, int64_t max) {
  if (s.empty() || s.size() > 18) return std::nullopt;  // 18 digits stay below 2^63
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n > max) return std::nullopt;
  return n;
}

// sacct's "2024-03-01T12:00:00" in seconds since 1970, the wall time read as UTC (only
// differences count). Checked field by field first: timegm alone would take 2024-13-01.
std::optional<int64_t> SlurmTime(std::string_view s) {
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':') {
    return std::nullopt;
  }
  auto num = [&](size_t at, size_t len) -> int64_t {
    auto n = Whole(s.substr(at, len), 9999);
    return n ? *n : -1;
  };
  int64_t y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
          sec = num(17, 2);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
      sec > 59) {
    return std::nullopt;
  }
  static constexpr std::array<int, 12> kMonthDays = {31, 28, 31, 30, 31, 30,
                                                     31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kMonthDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = static_cast<int>(y - 1900);
  tm.tm_mon = static_cast<int>(mo - 1);
  tm.tm_mday = static_cast<int>(d);
  tm.tm_hour = static_cast<int>(h);
  tm.tm_min = static_cast<int>(mi);
  tm.tm_sec = static_cast<int>(sec);
  return static_cast<int64_t>(timegm(&tm));
}

// Slurm's time grammar in seconds: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS. sacct
// prints [D-]HH:MM:SS; the others are what people write with --time.
std::optional<int64_t> SlurmDuration(std::string_view s) {
  int64_t days = 0;
  size_t dash = s.find('-');
  if (dash != std::string_view::npos) {
    auto d = Whole(s.substr(0, dash), 100'000);
    if (!d) return std::nullopt;
    days = *d;
    s = s.substr(dash + 1);
  }
  std::vector<std::string_view> parts = SplitTrimmed(s, ':');
  if (parts.size() > 3) return std::nullopt;
  std::array<int64_t, 3> v{};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto n = Whole(parts[i], 100'000'000);
    if (!n) return std::nullopt;
    v[i] = *n;
  }
  int64_t h = 0, m = 0, sec = 0;
  if (dash != std::string_view::npos) {
    h = v[0], m = v[1], sec = v[2];
  } else if (parts.size() == 1) {
    m = v[0];
  } else if (parts.size() == 2) {
    m = v[0], sec = v[1];
  } else {
    h = v[0], m = v[1], sec = v[2];
  }
  return days * 86400 + h * 3600 + m * 60 + sec;  // at most ~4e11: no overflow
}

// Slurm's GPU type as a Baton GPU type: a model family Baton's --gpus SPEC knows, with or
// without its memory ("a100" -> "A100", "a100-80gb" -> "A100-80GB"). Site names
// ("nvidia_a100-sxm4-80gb", "a100_3g.20gb", "rtx8000") are dropped rather than kept: a job
// constrained to a type no simulated node has would never start.
std::string BatonGpuType(std::string_view type) {
  static constexpr std::string_view kFamilies[] = {"A10",  "A100", "A30", "A40", "B200",
                                                   "H100", "H200", "L4",  "L40", "L40S",
                                                   "P100", "T4",   "V100"};
  if (type.empty() || type.size() > 32) return "";
  std::string upper(type);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view family = upper;
  if (size_t dash = upper.find('-'); dash != std::string::npos) {
    family = family.substr(0, dash);
    std::string_view memory = std::string_view(upper).substr(dash + 1);
    if (!memory.ends_with("GB") || !Whole(memory.substr(0, memory.size() - 2), 4096)) return "";
  }
  return std::find(std::begin(kFamilies), std::end(kFamilies), family) == std::end(kFamilies)
             ? ""
             : upper;
}

struct GpuRequest {
  int64_t gpus = 0;  // the job's total
  int nodes = 0;     // TRES node=; 0 = not given
  std::string type;  // a Baton GPU type or ""
};

// A job of one GPU type has that type; a job over several has none Baton can express.
std::string OneType(const std::vector<std::string_view>& types) {
  if (types.empty()) return "";
  for (std::string_view t : types) {
    if (!EqualNoCase(t, types[0])) return "";
  }
  return BatonGpuType(types[0]);
}

// "billing=8,cpu=8,gres/gpu=2,gres/gpu:a100=2,mem=64G,node=1". gres/gpu is the job's total;
// typed entries repeat it per type, and stand alone where a site accounts only typed GPUs.
// gres/gpumem and gres/gpuutil (Slurm 23+) are other TRES, not GPUs.
Result<GpuRequest> ParseTres(std::string_view tres) {
  GpuRequest r;
  std::optional<int64_t> untyped;
  int64_t typed = 0;
  std::vector<std::string_view> types;
  for (std::string_view item : SplitTrimmed(tres, ',')) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Err(InvalidArgument(Quote(item) + " is not NAME=COUNT"));
    std::string key(item.substr(0, eq));
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = item.substr(eq + 1);
    if (key == "node") {
      auto n = Whole(value, SpecLimits::kMaxNodes);
      if (!n || *n < 1) return Err(InvalidArgument(Quote(item) + ": nodes must be 1 to 1024"));
      r.nodes = static_cast<int>(*n);
    } else if (key == "gres/gpu" || key.starts_with("gres/gpu:")) {
      auto n = Whole(value, kMaxGpus);
      if (!n)
        return Err(InvalidArgument(Quote(item) + ": not a whole number of GPUs (at most 4096)"));
      if (key == "gres/gpu") {
        untyped = *n;
      } else if (*n > 0) {
        typed += *n;
        if (typed > kMaxGpus) return Err(InvalidArgument("more than 4096 GPUs"));
        types.push_back(item.substr(9, eq - 9));
      }
    }
  }
  r.gpus = untyped ? *untyped : typed;
  r.type = OneType(types);
  return r;
}

// GRES strings from before TRES (AllocGRES): "gpu:2", "gpu:tesla:2", "gpu:a100:2(IDX:0,1)",
// several separated by commas (which also occur inside the parentheses). Read as the job's total,
// like TRES.
Result<GpuRequest> ParseGres(std::string_view gres) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    char c = i < gres.size() ? gres[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      std::string_view item = gres.substr(start, i - start);
      items.push_back(Trim(item.substr(0, item.find('('))));
      start = i + 1;
    }
  }
  GpuRequest r;
  std::vector<std::string_view> types;
  for (std::string_view item : items) {
    std::vector<std::string_view> parts = SplitTrimmed(item, ':');
    if (parts[0] != "gpu") continue;  // other GRES: mps, shard, licences
    // gpu, gpu:COUNT, gpu:TYPE (one), gpu:TYPE:COUNT.
    std::optional<int64_t> count = 1;
    std::string_view type;
    if (parts.size() == 2 && !parts[1].empty() &&
        std::isdigit(static_cast<unsigned char>(parts[1][0]))) {
      count = Whole(parts[1], kMaxGpus);
    } else if (parts.size() == 2) {
      type = parts[1];
    } else if (parts.size() == 3) {
      type = parts[1];
      count = Whole(parts[2], kMaxGpus);
    } else if (parts.size() > 3) {
      count = std::nullopt;
    }
    if (!count) return Err(InvalidArgument(Quote(item) + " is not gpu[:TYPE]:COUNT"));
    r.gpus += *count;
    if (r.gpus > kMaxGpus) return Err(InvalidArgument("more than 4096 GPUs"));
    if (!type.empty() && *count > 0) types.push_back(type);
  }
  r.type = OneType(types);
  return r;
}

// Slurm allows names Baton does not ("jane@corp", "Domain Users"). Fair share only needs them
// distinct and stable, so other characters become '_' rather than failing a year of records.
std::string Label(std::string_view name) {
  std::string out(name.substr(0, SpecLimits::kLabelBytes));
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return out;
}

bool Unset(std::string_view v) { return v.empty() || v == "Unknown" || v == "None"; }

// A field-level error, which ParseSacct prefixes with the file and line.
tl::unexpected<Status> FieldError(std::string_view field, const std::string& why) {
  return Err(InvalidArgument(std::string(field) + ": " + why));
}

constexpr std::string_view kFields[] = {"JobID",     "JobName",   "User",    "Account",   "Submit",
                                        "Start",     "End",       "Elapsed", "AllocTRES", "ReqTRES",
                                        "AllocGRES", "Timelimit", "NNodes"};

struct Header {
  std::map<std::string_view, size_t> column;  // a name of kFields -> its position
  size_t width = 0;                           // fields in the header
  bool trailing_pipe = false;                 // --parsable ends every line with '|'
  bool Has(std::string_view name) const { return column.count(name) != 0; }
};

Result<Header> ReadHeader(std::string_view line) {
  Header h;
  h.trailing_pipe = line.ends_with('|');
  if (h.trailing_pipe) line.remove_suffix(1);
  std::vector<std::string_view> names = SplitTrimmed(line, '|');
  h.width = names.size();
  for (size_t i = 0; i < names.size(); ++i) {
    for (std::string_view known : kFields) {
      if (EqualNoCase(names[i], known) && !h.column.emplace(known, i).second) {
        return FieldError(known, "field named twice");
      }
    }
  }
  for (std::string_view required : {"JobID", "Submit", "End"}) {
    if (!h.Has(required)) {
      return FieldError(
          required,
          "required field missing from the header (sacct --parsable2 output, with its "
          "header, is expected)");
    }
  }
  if (!h.Has("Start") && !h.Has("Elapsed"))
    return FieldError("Start", "required field (or Elapsed) missing");
  if (!h.Has("AllocTRES") && !h.Has("ReqTRES") && !h.Has("AllocGRES")) {
    return FieldError("AllocTRES", "required field (or ReqTRES, AllocGRES) missing");
  }
  return h;
}

// One allocation that ran with GPUs; its submit is still absolute.
struct Allocation {
  TraceJob job;
  int64_t submit = 0;  // seconds
};

// The steps of ReadRow.

// One row's fields by name; "" for a field the file lacks.
struct Row {
  const Header& h;
  const std::vector<std::string_view>& fields;
  std::string_view Get(std::string_view name) const {
    auto it = h.column.find(name);
    return it == h.column.end() ? std::string_view() : fields[it->second];
  }
};

// When a job was submitted and how long it ran, in seconds.
struct RunTimes {
  int64_t submit = 0;
  int64_t seconds = 0;
};

// A row's times; nullopt for a job that never started or is still running (counted in `skip`).
Result<std::optional<RunTimes>> ReadRunTimes(const Row& row, SacctSkipped& skip) {
  auto get = [&](std::string_view name) { return row.Get(name); };
  // Ran at all? A Start of Unknown or None, or (without Start) no Elapsed time, says no.
  std::optional<int64_t> start;
  int64_t elapsed = 0;
  if (row.h.Has("Start")) {
    std::string_view s = get("Start");
    if (Unset(s)) {
      ++skip.never_started;
      return std::nullopt;
    }
    start = SlurmTime(s);
    if (!start) return FieldError("Start", Quote(s) + " is not a time (YYYY-MM-DDTHH:MM:SS)");
  } else {
    std::string_view e = get("Elapsed");
    auto parsed = SlurmDuration(e);
    if (!parsed) return FieldError("Elapsed", Quote(e) + " is not [D-]HH:MM:SS");
    elapsed = *parsed;
    if (elapsed == 0) {
      ++skip.never_started;
      return std::nullopt;
    }
  }
  std::string_view end_text = get("End");
  if (Unset(end_text)) {
    ++skip.running;
    return std::nullopt;
  }
  auto end = SlurmTime(end_text);
  if (!end) return FieldError("End", Quote(end_text) + " is not a time (YYYY-MM-DDTHH:MM:SS)");
  std::string_view submit_text = get("Submit");
  auto submit = SlurmTime(submit_text);
  if (!submit)
    return FieldError("Submit", Quote(submit_text) + " is not a time (YYYY-MM-DDTHH:MM:SS)");
  if (start && *end < *start)
    return FieldError("End", Quote(end_text) + " is before Start " + Quote(get("Start")));
  int64_t seconds = start ? *end - *start : elapsed;
  if (seconds > kMaxSeconds)
    return FieldError(start ? "End" : "Elapsed", "the job ran longer than 366 days");
  return RunTimes{.submit = *submit, .seconds = seconds};
}

// A row's GPUs, with `nodes` the number of nodes they are spread over (at least 1); nullopt
// for a job without GPUs (counted in `skip`).
Result<std::optional<GpuRequest>> ReadGpuRequest(const Row& row, SacctSkipped& skip) {
  // The first GPU field the file has that is not empty in this row.
  std::string_view gpu_field, gpu_text;
  for (std::string_view f : {"AllocTRES", "ReqTRES", "AllocGRES"}) {
    if (!row.h.Has(f)) continue;
    gpu_field = f;
    gpu_text = row.Get(f);
    if (!gpu_text.empty()) break;
  }
  auto request = gpu_field == "AllocGRES" ? ParseGres(gpu_text) : ParseTres(gpu_text);
  if (!request) return FieldError(gpu_field, request.error().message());
  if (request->gpus == 0) {
    ++skip.without_gpus;
    return std::nullopt;
  }
  int nodes = request->nodes > 0 ? request->nodes : 1;
  std::string_view nodes_field = request->nodes > 0 ? gpu_field : "NNodes";
  if (std::string_view n = row.Get("NNodes"); !n.empty()) {
    auto count = Whole(n, SpecLimits::kMaxNodes);
    if (!count || *count < 1)
      return FieldError("NNodes", Quote(n) + " is not a number of nodes from 1 to 1024");
    nodes = static_cast<int>(*count);
    nodes_field = "NNodes";
  }
  if (request->gpus % nodes != 0) {
    return FieldError(nodes_field, std::to_string(request->gpus) + " GPUs (" +
                                       std::string(gpu_field) + ") do not divide evenly over " +
                                       std::to_string(nodes) + " nodes");
  }
  request->nodes = nodes;
  return std::optional<GpuRequest>(std::move(*request));
}

// The allocation on one line, nullopt for one the trace leaves out (counted in `skip`).
Result<std::optional<Allocation>> ReadRow(const Header& h,
                                          const std::vector<std::string_view>& fields,
                                          SacctSkipped& skip) {
  Row row{.h = h, .fields = fields};
  auto get = [&](std::string_view name) { return row.Get(name); };
  std::string_view id = get("JobID");
  if (id.empty()) return FieldError("JobID", "empty");
  if (id.find('.') != std::string_view::npos) {
    ++skip.steps;
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(std::optional<RunTimes> times, ReadRunTimes(row, skip));
  if (!times) return std::nullopt;
  ASSIGN_OR_RETURN(std::optional<GpuRequest> request, ReadGpuRequest(row, skip));
  if (!request) return std::nullopt;

  Allocation a;
  a.submit = times->submit;
  TraceJob& j = a.job;
  j.duration = std::chrono::seconds(times->seconds);
  j.resources.milli_gpus = request->gpus * kMilli;
  j.resources.nodes = request->nodes;
  j.resources.gpu_type = request->type;
  j.name = std::string(get("JobName").substr(0, SpecLimits::kNameBytes));
  if (std::string_view user = get("User"); !user.empty()) {
    j.user = Label(user);
    // Node-name rules: a user name starts with a letter or digit.
    if (!std::isalnum(static_cast<unsigned char>(j.user[0]))) {
      j.user = ("u" + j.user).substr(0, SpecLimits::kLabelBytes);
    }
  }
  if (std::string_view account = get("Account"); !account.empty()) j.project = Label(account);
  std::string_view limit = get("Timelimit");
  if (!limit.empty() && limit != "UNLIMITED" && limit != "Partition_Limit") {
    auto s = SlurmDuration(limit);
    if (!s)
      return FieldError("Timelimit",
                        Quote(limit) + " is not UNLIMITED, MM:SS, HH:MM:SS or D-HH:MM:SS");
    if (*s <= kMaxSeconds) j.time_limit = std::chrono::seconds(*s);  // longer: as good as none
  }
  RETURN_IF_ERROR(ValidateJobSpec(j.Spec()));
  return a;
}

}  // namespace

bool IsSacctHeader(std::string_view header_line) {
  if (header_line.find('|') == std::string_view::npos || header_line.size() > kMaxLineBytes)
    return false;
  for (std::string_view f : SplitTrimmed(header_line, '|')) {
    if (EqualNoCase(f, "JobID")) return true;
  }
  return false;
}

Result<std::vector<TraceJob>> ParseSacct(std::string_view text, std::string_view file,
                                         size_t max_jobs, SacctSkipped* skipped) {
  auto fail = [&](int line, const std::string& why) {
    return Err(InvalidArgument(std::string(file) + ": line " + std::to_string(line) + ": " + why));
  };
  std::optional<Header> header;
  std::vector<Allocation> allocations;
  SacctSkipped skip;
  int line_no = 0;
  size_t pos = 0;
  while (std::optional<std::string_view> next = NextLine(text, &pos)) {
    std::string_view raw = *next;
    if (++line_no >= kMaxLines) return fail(line_no, "too many lines");
    if (raw.size() > kMaxLineBytes)
      return fail(line_no, "longer than " + std::to_string(kMaxLineBytes) + " bytes");
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    if (!header) {
      auto h = ReadHeader(line);
      if (!h) return fail(line_no, h.error().message());
      header = std::move(*h);
      continue;
    }
    if (header->trailing_pipe && line.ends_with('|')) line.remove_suffix(1);
    std::vector<std::string_view> fields = SplitTrimmed(line, '|');
    if (fields.size() != header->width) {
      return fail(line_no, std::to_string(fields.size()) + " fields where the header has " +
                               std::to_string(header->width) + " (a '|' inside a JobName?)");
    }
    auto row = ReadRow(*header, fields, skip);
    if (!row) return fail(line_no, row.error().message());
    if (!*row) continue;
    if (allocations.size() >= max_jobs)
      return fail(line_no, "more than " + std::to_string(max_jobs) + " jobs");
    (*row)->job.line = line_no;
    allocations.push_back(std::move(**row));
  }
  if (skipped != nullptr) *skipped = skip;
  if (!header) {
    return Err(InvalidArgument(std::string(file) +
                               ": empty (sacct's header line is needed: run sacct without "
                               "--noheader)"));
  }
  if (allocations.empty()) {
    return Err(InvalidArgument(
        "no job with GPUs in " + std::string(file) + " (allocations left out: " +
        std::to_string(skip.never_started) + " never started, " + std::to_string(skip.running) +
        " still running, " + std::to_string(skip.without_gpus) + " without GPUs)"));
  }
  // From the first job in the trace, so that a replay does not open with idle time.
  int64_t first =
      std::min_element(allocations.begin(), allocations.end(), [](const auto& a, const auto& b) {
        return a.submit < b.submit;
      })->submit;
  std::vector<TraceJob> jobs;
  jobs.reserve(allocations.size());
  for (Allocation& a : allocations) {
    if (a.submit - first > kMaxSeconds) {
      return fail(
          a.job.line,
          "Submit: more than 366 days after the first submit (a trace spans at most 366 days)");
    }
    a.job.submit = std::chrono::seconds(a.submit - first);
    jobs.push_back(std::move(a.job));
  }
  return jobs;
}

namespace {

// Seconds with up to three decimals: exactly the milliseconds ParseTraceCsv reads back.
std::string Seconds(Duration d) {
  int64_t ms = d.count();
  uint64_t abs = ms < 0 ? 0 - static_cast<uint64_t>(ms) : static_cast<uint64_t>(ms);
  std::string out = (ms < 0 ? "-" : "") + std::to_string(abs / 1000);
  if (abs % 1000 != 0) {
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%03u", static_cast<unsigned>(abs % 1000));
    out += frac;
    while (out.back() == '0') out.pop_back();
  }
  return out;
}

// ParseTraceCsv reads line by line, so a line break cannot be quoted: it becomes a space.
std::string CsvField(std::string_view s) {
  std::string clean(s);
  std::replace(clean.begin(), clean.end(), '\n', ' ');
  std::replace(clean.begin(), clean.end(), '\r', ' ');
  if (clean.find_first_of(",\"") == std::string::npos) return clean;
  std::string out = "\"";
  for (char c : clean) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string TraceCsv(const std::vector<TraceJob>& jobs) {
  bool priority = std::any_of(jobs.begin(), jobs.end(),
                              [](const TraceJob& j) { return j.priority != Priority::kNormal; });
  bool preemptible = std::any_of(jobs.begin(), jobs.end(),
                                 [](const TraceJob& j) { return j.preemptible.has_value(); });
  std::string out = "submit_time,duration,gpus,nodes,name,user,project,gpu_type,time_limit";
  out += std::string(priority ? ",priority" : "") + (preemptible ? ",preemptible" : "") + "\n";
  for (const TraceJob& j : jobs) {
    out += Seconds(j.submit) + "," + Seconds(j.duration) + "," +
           FormatMilli(j.resources.milli_gpus) + "," +
           (j.resources.nodes == 0 ? "" : std::to_string(j.resources.nodes)) + "," +
           CsvField(j.name) + "," + CsvField(j.user) + "," + CsvField(j.project) + "," +
           CsvField(j.resources.gpu_type) + "," +
           (j.time_limit.count() == 0 ? "" : Seconds(j.time_limit));
    if (priority) out += "," + std::string(PriorityName(j.priority));
    if (preemptible) out += !j.preemptible ? "," : *j.preemptible ? ",true" : ",false";
    out += "\n";
  }
  return out;
}

}  // namespace baton::sim
