// What the web dashboard (issue 19) needs of the real binary: /ui served with its security and
// caching headers and gzip (or, in a baton built without npm, a clear word at /ui); the lines a
// job writes to $BATON_METRICS_FILE readable while it runs and after it ends, its owner's only;
// resubmit; a YAML job file POSTed as the submit form sends it; the reports of `baton sim
// --report` under DATA/reports listed and served. The browser itself is tests/browser.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

// curl as a user would run it against the server, trusting its CA: headers and body.
std::string Curl(const BatonProcess& baton, const std::string& args) {
  return RunShell("curl -s -D - --cacert " + baton.ca_file() + " " + args).out;
}

// The value of a response header (case-insensitive name), "" when absent.
std::string Header(const std::string& response, const std::string& name) {
  std::string lower = response, key = "\r\n" + name + ":";
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  size_t head_end = lower.find("\r\n\r\n");
  size_t at = lower.find(key);
  if (at == std::string::npos || at > head_end) return "";
  size_t from = at + key.size();
  while (from < response.size() && response[from] == ' ') ++from;
  return response.substr(from, response.find("\r\n", from) - from);
}

// The attributes of each <script ...> tag of a page.
std::vector<std::string> ScriptTags(const std::string& page) {
  std::vector<std::string> out;
  for (size_t at = page.find("<script"); at != std::string::npos;
       at = page.find("<script", at + 1)) {
    size_t end = page.find('>', at);
    out.push_back(page.substr(at + 7, end - at - 7));
  }
  return out;
}

TEST(Dashboard, ServesThePageWithStrictHeadersCachingAndGzip) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/s");
  // `baton up` says where the dashboard is, on this machine, with no certificate to trust.
  std::string port = baton.url().substr(baton.url().rfind(':') + 1);
  // The line follows server.url (what the harness waits for): read until it is there.
  const std::string line = "dashboard: http://127.0.0.1:" + port +
                           "/ui/; log in with the token in " + baton.data_dir() + "/admin.token";
  std::string said;
  Within(std::chrono::seconds(10), [&] {
    said = ReadFile(baton.data_dir() + "/baton.out");
    return said.find(line) != std::string::npos;
  });
  EXPECT_NE(said.find(line), std::string::npos) << said;
  // "/" sends a browser to the dashboard.
  std::string root = Curl(baton, baton.url() + "/");
  EXPECT_EQ(RawStatus(root), 302) << root;
  EXPECT_EQ(Header(root, "Location"), "/ui/");
  if (!BATON_UI_BUILT) {
    std::string page = Curl(baton, baton.url() + "/ui/");
    EXPECT_EQ(RawStatus(page), 503) << page;
    EXPECT_NE(page.find("built without its dashboard"), std::string::npos) << page;
    return;
  }
  std::string page = Curl(baton, baton.url() + "/ui/");
  ASSERT_EQ(RawStatus(page), 200) << page;
  EXPECT_EQ(Header(page, "Content-Type"), "text/html; charset=utf-8");
  std::string csp = Header(page, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(Header(page, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(Header(page, "Cache-Control"), "no-cache");
  // No inline script: every <script> has a src, under /ui/assets/.
  std::string body = page.substr(page.find("\r\n\r\n") + 4);
  int scripts = 0;
  std::string js;
  for (const std::string& attrs : ScriptTags(body)) {
    ++scripts;
    size_t src = attrs.find("src=\"/ui/assets/");
    ASSERT_NE(src, std::string::npos) << "an inline script: <script" << attrs << ">";
    js = attrs.substr(src + 5, attrs.find('"', src + 5) - src - 5);
    EXPECT_TRUE(js.ends_with(".js")) << js;
  }
  ASSERT_GE(scripts, 1) << body;
  EXPECT_EQ(body.find("style="), std::string::npos) << body;

  // /ui and /ui/index.html are the same page.
  EXPECT_EQ(RawStatus(Curl(baton, baton.url() + "/ui")), 200);
  EXPECT_EQ(RawStatus(Curl(baton, baton.url() + "/ui/index.html")), 200);

  // The script: gzipped for a browser that takes it, kept for a year (its name has its hash).
  std::string plain = Curl(baton, baton.url() + js);
  ASSERT_EQ(RawStatus(plain), 200) << plain.substr(0, 300);
  EXPECT_EQ(Header(plain, "Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(Header(plain, "Content-Encoding"), "");
  EXPECT_EQ(Header(plain, "Cache-Control"), "public, max-age=31536000, immutable");
  std::string gz = Curl(baton, "-H 'Accept-Encoding: gzip, deflate, br' " + baton.url() + js);
  EXPECT_EQ(Header(gz, "Content-Encoding"), "gzip");
  EXPECT_EQ(Header(gz, "Vary"), "Accept-Encoding");
  size_t plain_size = std::stoul(Header(plain, "Content-Length"));
  size_t gz_size = std::stoul(Header(gz, "Content-Length"));
  EXPECT_LT(gz_size * 2, plain_size) << "gzip should at least halve the script";
  // What curl unpacks is the script itself.
  std::string unpacked = RunShell("curl -s --compressed --cacert " + baton.ca_file() + " " +
                                  baton.url() + js + " | md5sum")
                             .out;
  std::string direct =
      RunShell("curl -s --cacert " + baton.ca_file() + " " + baton.url() + js + " | md5sum").out;
  EXPECT_EQ(unpacked, direct);
  // Asked again with its ETag: 304, no body.
  std::string etag = Header(page, "ETag");
  ASSERT_FALSE(etag.empty());
  std::string again = Curl(baton, "-H 'If-None-Match: " + etag + "' " + baton.url() + "/ui/");
  EXPECT_EQ(RawStatus(again), 304) << again;
  EXPECT_EQ(again.substr(again.find("\r\n\r\n") + 4), "");

  // A file it does not have is a 404, with no token needed to learn so.
  std::string missing = Curl(baton, baton.url() + "/ui/assets/nope.js");
  EXPECT_EQ(RawStatus(missing), 404) << missing;
  EXPECT_NE(missing.find("no such file of the dashboard"), std::string::npos) << missing;
  // The page is public, the data is not: the API still wants a token.
  EXPECT_EQ(RawStatus(Curl(baton, baton.url() + "/v1/jobs")), 401);
}

// A token of another (user-role) user, made by the admin.
std::string UserToken(net::HttpClient& admin, const std::string& user) {
  auto made = admin.Request("POST", "/v1/tokens", "{\"user\": \"" + user + "\"}");
  if (!made || made->status != 201) return "";
  return JsonString(made->body, "token");
}

json::array LinesOf(const std::string& body) {
  json::value v = json::parse(body);
  return v.as_object().at("lines").as_array();
}

TEST(Dashboard, MetricsLinesAreReadWhileTheJobRunsAndAfterItEnds) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/s");
  auto c = baton.Client();
  // Three lines, one that is not JSON, then a wait; then a last line with no newline.
  int64_t id = Submit(
      *c,
      R"({"command": "m=$BATON_METRICS_FILE; for i in 1 2 3; do echo \"{\\\"step\\\": $i, \\\"loss\\\": 0.$((9-i))}\" >> $m; done; echo 'not json' >> $m; while [ ! -f go ]; do sleep 0.1; done; printf '{\"step\": 4, \"loss\": 0.1, \"checkpoint\": \"/ck/4\"}' >> $m", "resources": {"gpus": 1}, "workdir": ")" +
          dir.path() + R"("})");
  ASSERT_GT(id, 0);
  std::string route = "/v1/jobs/" + std::to_string(id) + "/metrics/lines";
  std::string body;
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] {
    auto r = c->Request("GET", route);
    if (!r || r->status != 200) return false;
    body = r->body;
    return LinesOf(body).size() == 3;
  })) << body;
  json::object o = json::parse(body).as_object();
  EXPECT_EQ(o.at("ended").as_bool(), false);
  EXPECT_EQ(o.at("lines").as_array()[2].as_object().at("step").as_int64(), 3);
  EXPECT_DOUBLE_EQ(o.at("lines").as_array()[0].as_object().at("loss").as_double(), 0.8);
  // Asked from `next` on, nothing new yet.
  int64_t next = o.at("next").as_int64();
  auto from_next = c->Request("GET", route + "?offset=" + std::to_string(next));
  ASSERT_TRUE(from_next);
  EXPECT_EQ(LinesOf(from_next->body).size(), 0u) << from_next->body;

  std::ofstream(dir.path() + "/go") << "";
  EXPECT_EQ(JsonString(WaitForJob(*c, id), "state"), "succeeded");
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    auto r = c->Request("GET", route);
    body = r ? r->body : "";
    return r && LinesOf(body).size() == 4;
  })) << body;
  o = json::parse(body).as_object();
  EXPECT_EQ(o.at("ended").as_bool(), true);
  EXPECT_EQ(o.at("next").as_int64(), o.at("size").as_int64());
  EXPECT_EQ(o.at("lines").as_array()[3].as_object().at("checkpoint").as_string(), "/ck/4");

  // Another user reads the job but not what it wrote.
  std::string bob = UserToken(*c, "bob");
  ASSERT_FALSE(bob.empty());
  auto denied = baton.Client(bob)->Request("GET", route);
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403) << denied->body;
  EXPECT_NE(denied->body.find("or an admin reads its logs"), std::string::npos) << denied->body;
  auto bad = c->Request("GET", route + "?node=../x");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
}

TEST(Dashboard, ResubmitMakesANewJobOfTheSameSpecForItsOwnerOnly) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/s");
  auto c = baton.Client();
  int64_t id = Submit(
      *c,
      R"({"name": "again", "command": "echo run-$BATON_JOB_ID", "resources": {"gpus": 1}, "env": {"LR": "0.1"}, "time_limit": "1h"})");
  ASSERT_GT(id, 0);
  EXPECT_EQ(JsonString(WaitForJob(*c, id), "state"), "succeeded");
  auto r = c->Request("POST", "/v1/jobs/" + std::to_string(id) + "/resubmit");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  int64_t copy = std::stoll(JsonField(r->body, "id"));
  EXPECT_GT(copy, id);
  EXPECT_EQ(JsonString(r->body, "name"), "again");
  EXPECT_NE(r->body.find("\"LR\":\"0.1\""), std::string::npos) << r->body;
  EXPECT_EQ(JsonString(WaitForJob(*c, copy), "state"), "succeeded");
  EXPECT_NE(LogsUntil(*c, copy, "run-" + std::to_string(copy)).find("run-"), std::string::npos);

  std::string bob = UserToken(*c, "bob");
  auto denied = baton.Client(bob)->Request("POST", "/v1/jobs/" + std::to_string(id) + "/resubmit");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403) << denied->body;
  auto unknown = c->Request("POST", "/v1/jobs/999/resubmit");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404) << unknown->body;
}

TEST(Dashboard, TakesAYamlJobFileAsTheSubmitFormSendsIt) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/s");
  auto c = baton.Client();
  net::Headers yaml = {{"Content-Type", "application/yaml"}};
  auto r = c->Request("POST", "/v1/jobs",
                      "name: from-yaml\ncommand: echo yaml-ok\nresources:\n  gpus: 1\n"
                      "time_limit: 10m\n",
                      yaml);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(JsonString(r->body, "name"), "from-yaml");
  int64_t id = std::stoll(JsonField(r->body, "id"));
  EXPECT_EQ(JsonString(WaitForJob(*c, id), "state"), "succeeded");
  // The same messages as the JSON body's, naming the field.
  auto bad = c->Request("POST", "/v1/jobs", "command: echo\nresources:\n  gpus: 1.5\n", yaml);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_NE(bad->body.find("resources.gpus"), std::string::npos) << bad->body;
  auto broken = c->Request("POST", "/v1/jobs", "command: [echo\n", yaml);
  ASSERT_TRUE(broken);
  EXPECT_EQ(broken->status, 400) << broken->body;
  auto two =
      c->Request("POST", "/v1/jobs", "jobs:\n  - command: echo a\n  - command: echo b\n", yaml);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->status, 400) << two->body;
}

TEST(Dashboard, ListsAndServesTheReportsOfTheSimulator) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/s");
  auto c = baton.Client();
  auto none = c->Request("GET", "/v1/reports");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->body, "{\"reports\":[]}");
  std::ofstream(dir.path() + "/cluster.yaml")
      << "nodes:\n  - {name: dgx, count: 2, gpus: 8xH100-80GB}\n";
  std::ofstream(dir.path() + "/trace.csv")
      << "submit_time,duration,gpus,user\n0,600,8,ana\n0,600,8,bo\n10,60,8,ana\n";
  CliResult sim = RunCli(
      baton, {"sim", "--cluster", dir.path() + "/cluster.yaml", "--trace",
              dir.path() + "/trace.csv", "--report", baton.data_dir() + "/reports/fifo-demo"});
  ASSERT_EQ(sim.exit_code, 0) << sim.out;
  auto list = c->Request("GET", "/v1/reports");
  ASSERT_TRUE(list);
  json::array reports = json::parse(list->body).as_object().at("reports").as_array();
  ASSERT_EQ(reports.size(), 1u) << list->body;
  EXPECT_EQ(reports[0].as_object().at("name").as_string(), "fifo-demo");
  EXPECT_NE(list->body.find("\"utilisation.svg\""), std::string::npos) << list->body;
  EXPECT_NE(list->body.find("\"summary.json\""), std::string::npos) << list->body;

  std::string svg = Curl(baton, "-H 'Authorization: Bearer " + baton.token() + "' " + baton.url() +
                                    "/v1/reports/fifo-demo/utilisation.svg");
  EXPECT_EQ(RawStatus(svg), 200) << svg.substr(0, 300);
  EXPECT_EQ(Header(svg, "Content-Type"), "image/svg+xml");
  EXPECT_NE(Header(svg, "Content-Security-Policy").find("sandbox"), std::string::npos);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  for (const char* path : {"/v1/reports/fifo-demo/nope.svg", "/v1/reports/nope/queue.svg",
                           "/v1/reports/fifo-demo/notes.txt"}) {
    auto r = c->Request("GET", path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path << ": " << r->body;
  }
  auto dots = c->Request("GET", "/v1/reports/..%2F..%2Ftls/ca.key");
  ASSERT_TRUE(dots);
  EXPECT_EQ(dots->status, 400) << dots->body;
  // A token is needed.
  EXPECT_EQ(RawStatus(Curl(baton, baton.url() + "/v1/reports")), 401);
}

}  // namespace
}  // namespace baton::testing
