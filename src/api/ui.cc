// The dashboard's files at /ui/ (docs/operations.md, "The dashboard"): the page and its
// assets need no token; the page asks for one and sends it with every API call it makes. The
// API's routes stay the only way to data, so the page can show and do no more than its token.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "api/service.h"
#include "api/service_internal.h"
#include "api/ui_assets.h"
#include "codec/json_codec.h"
#include "core/time.h"

namespace baton::api {

using namespace internal;

namespace {

// No inline script or style anywhere; data only from this origin; never framed.
constexpr std::string_view kPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'";

void Harden(Response& res) {
  res.headers.emplace_back("Content-Security-Policy", std::string(kPolicy));
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("X-Frame-Options", "DENY");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
}

// Whether Accept-Encoding admits gzip (a q=0 refuses it).
bool TakesGzip(std::string_view accept) {
  size_t at = 0;
  while (at < accept.size()) {
    size_t end = accept.find(',', at);
    if (end == std::string_view::npos) end = accept.size();
    std::string_view item = accept.substr(at, end - at);
    at = end + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    std::string_view name = item.substr(0, item.find(';'));
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name != "gzip" && name != "*") continue;
    size_t q = item.find("q=");
    if (q == std::string_view::npos) return true;
    std::string_view value = item.substr(q + 2);
    return !(value.starts_with("0") && value.find_first_of("123456789") == std::string_view::npos);
  }
  return false;
}

bool Matches(std::string_view if_none_match, std::string_view etag) {
  if (if_none_match == "*") return true;
  return if_none_match.find(etag) != std::string_view::npos;
}

}  // namespace

void Service::UiFile(Call c) {
  const std::vector<std::string>& seg = c.request.segments;
  if (seg.empty()) {  // "/": the dashboard
    Response res{.status = 302, .content_type = "text/plain; charset=utf-8"};
    res.headers.emplace_back("Location", "/ui/");
    res.body = "the dashboard is at /ui/\n";
    return c.respond(std::move(res));
  }
  std::string path = seg.size() == 1 ? "index.html" : seg[1];
  if (seg.size() == 3) path = "assets/" + seg[2];
  if (!UiMissing().empty()) {
    Response res{.status = 503, .content_type = "text/plain; charset=utf-8"};
    res.body = "This baton was built without its dashboard: " + std::string(UiMissing()) +
               ".\nInstall Node.js and npm (scripts/install-deps does) and build it again "
               "(make).\n";
    Harden(res);
    return c.respond(std::move(res));
  }
  auto assets = UiAssets();
  auto it =
      std::find_if(assets.begin(), assets.end(), [&](const UiAsset& a) { return a.path == path; });
  if (it == assets.end()) {
    return c.respond(Error(NotFound("no such file of the dashboard: /ui/" + path.substr(0, 128))));
  }
  Response res{.content_type = std::string(it->content_type)};
  Harden(res);
  // The assets' names carry their hash: kept for good. The page is checked each time.
  bool hashed = path.starts_with("assets/");
  res.headers.emplace_back("Cache-Control",
                           hashed ? "public, max-age=31536000, immutable" : "no-cache");
  res.headers.emplace_back("ETag", std::string(it->etag));
  res.headers.emplace_back("Vary", "Accept-Encoding");
  if (Matches(c.request.if_none_match, it->etag)) {
    res.status = 304;
    return c.respond(std::move(res));
  }
  if (TakesGzip(c.request.accept_encoding) && it->gzip.size() < it->data.size()) {
    res.headers.emplace_back("Content-Encoding", "gzip");
    res.body = std::string(it->gzip);
  } else {
    res.body = std::string(it->data);
  }
  c.respond(std::move(res));
}

}  // namespace baton::api

// The reports of `baton sim --report DIR` that were written (or copied) into DATA/reports.
namespace baton::api {
namespace {

namespace fs = std::filesystem;

// A folder or file name under DATA/reports: letters, digits, '.', '_', '-', not starting with '.'.
bool IsReportName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
  });
}

// The type a report's file is served as; "" for a kind of file not served.
std::string_view ReportType(std::string_view name) {
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".json")) return "application/json";
  if (name.ends_with(".csv")) return "text/csv; charset=utf-8";
  return "";
}

TimePoint Modified(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  if (ec) return TimePoint{};
  auto sys = std::chrono::file_clock::to_sys(t);
  return TimePoint{std::chrono::duration_cast<Duration>(sys.time_since_epoch())};
}

}  // namespace

// GET /v1/reports: {"reports": [{"name", "files": [...], "modified"}, ...]}, newest first.
void Service::ListReports(Call c) {
  struct Report {
    TimePoint modified;
    std::string name;
    std::vector<std::string> files;
  };
  std::vector<Report> found;
  std::error_code ec;
  if (!reports_dir_.empty()) {
    for (fs::directory_iterator it(reports_dir_, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (!it->is_directory(ec) || !IsReportName(name)) continue;
      Report r{.modified = Modified(it->path()), .name = name};
      std::error_code inner;
      for (fs::directory_iterator f(it->path(), inner), fend; !inner && f != fend;
           f.increment(inner)) {
        std::string file = f->path().filename().string();
        if (f->is_regular_file(inner) && IsReportName(file) && !ReportType(file).empty())
          r.files.push_back(file);
      }
      std::sort(r.files.begin(), r.files.end());
      if (!r.files.empty()) found.push_back(std::move(r));
    }
  }
  std::sort(found.begin(), found.end(), [](const Report& a, const Report& b) {
    return a.modified != b.modified ? a.modified > b.modified : a.name < b.name;
  });
  std::string body = "{\"reports\":[";
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0) body += ",";
    body += "{\"name\":" + codec::EncodeString(found[i].name) + ",\"files\":[";
    for (size_t j = 0; j < found[i].files.size(); ++j) {
      if (j > 0) body += ",";
      body += codec::EncodeString(found[i].files[j]);
    }
    body += "],\"modified\":" + codec::EncodeString(FormatRfc3339(found[i].modified)) + "}";
  }
  body += "]}";
  c.respond(Json(200, std::move(body)));
}

// GET /v1/reports/{name}/{file}: one file of a report (SVG, JSON or CSV), at most 16 MiB.
void Service::ReportFile(Call c) {
  const std::string& name = c.Param("name");
  const std::string& file = c.Param("file");
  if (!IsReportName(name) || !IsReportName(file)) {
    return c.respond(Error(InvalidArgument("report: \"" + name.substr(0, 64) + "/" +
                                           file.substr(0, 64) + "\" is not a report's file")));
  }
  std::string_view type = ReportType(file);
  const std::string path = reports_dir_ + "/" + name + "/" + file;
  std::error_code ec;
  if (reports_dir_.empty() || type.empty() || !fs::is_regular_file(path, ec)) {
    return c.respond(Error(NotFound("no report file " + name + "/" + file)));
  }
  auto size = fs::file_size(path, ec);
  if (ec || size > (16u << 20)) {
    return c.respond(Error(ec ? Internal("report " + path + ": " + ec.message())
                              : TooLarge("report " + name + "/" + file + ": over 16 MiB")));
  }
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return c.respond(Error(Internal("report " + path + ": cannot read")));
  Response res{.body = std::move(data), .content_type = std::string(type)};
  // A picture of the simulator's is drawn, never run: no script, even opened on its own.
  res.headers.emplace_back("Content-Security-Policy",
                           "default-src 'none'; style-src 'unsafe-inline'; sandbox");
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  c.respond(std::move(res));
}

}  // namespace baton::api
