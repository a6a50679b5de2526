#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "../support/free_port.h"

namespace baton::testing {
namespace fs = std::filesystem;
namespace json = boost::json;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "baton-it-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  // BATON_KEEP_TEST_DIRS=1 keeps what a test left (the servers' and agents' logs, .out) to
  // look at after a failure.
  if (const char* keep = std::getenv("BATON_KEEP_TEST_DIRS"); keep != nullptr && *keep == '1') {
    std::fprintf(stderr, "kept %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

BatonProcess::BatonProcess(std::string data_dir, std::vector<std::string> extra,
                           std::string command)
    : data_dir_(std::move(data_dir)), extra_(std::move(extra)), command_(std::move(command)) {
  Start();
}

BatonProcess::~BatonProcess() {
  if (pid_ <= 0) return;
  // Jobs outlive the server by design (a restarted agent adopts them): cancel what still runs
  // so that a test leaves no processes behind.
  try {
    auto c = Client();
    auto r = c->Request("GET", "/v1/jobs?state=pending,held,running&limit=1000");
    std::vector<int64_t> running;
    if (r && r->status == 200) {
      std::string jobs = JsonField(r->body, "jobs");
      for (size_t pos = 0; (pos = jobs.find("\"id\":", pos)) != std::string::npos;) {
        pos += 5;
        running.push_back(std::stoll(jobs.substr(pos)));
      }
    }
    for (int64_t id : running)
      (void)c->Request("POST", "/v1/jobs/" + std::to_string(id) + "/cancel");
    for (int64_t id : running) WaitForJob(*c, id, 10000);
  } catch (const std::exception&) {
  }
  Stop();
}

namespace {

// Starts `args` (the baton binary first) with stdout and stderr appended to `log`.
pid_t SpawnBaton(std::vector<std::string> args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    // Simulated GPUs even on a machine with NVIDIA's: tests count on them (a test that wants
    // NVML's path points this at the NVML double).
    setenv("BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 0);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

void BatonProcess::Start() {
  fs::remove(data_dir_ + "/server.url");
  std::vector<std::string> args = {BATON_BINARY, command_,   "--data",
                                   data_dir_,    "--listen", "127.0.0.1:0"};
  args.insert(args.end(), extra_.begin(), extra_.end());
  std::string log = data_dir_ + "/baton.out";
  fs::create_directories(data_dir_);  // for the log, before baton makes it
  pid_ = SpawnBaton(args, log);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(data_dir_ + "/server.url");
    std::string url;
    if (in >> url && !url.empty()) {
      url_ = url;
      std::ifstream t(data_dir_ + "/admin.token");
      t >> token_;
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      std::ifstream out(log);
      std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
      throw std::runtime_error("baton up exited at start: " + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("baton up did not write server.url within 30 s");
}

void BatonProcess::Stop() { SignalAndWait(SIGTERM); }

void BatonProcess::Kill9() { SignalAndWait(SIGKILL); }

void BatonProcess::SignalAndWait(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = 0;
}

AgentProcess::AgentProcess(const BatonProcess& server, std::string name, std::string data_dir,
                           std::string gpus, std::vector<std::string> extra, bool allow_root)
    : log_(data_dir + ".out") {
  std::ifstream t(server.data_dir() + "/agent.token");
  std::string token;
  t >> token;
  args_ = {BATON_BINARY,    "agent",  "--token",           token,    "--name",
           std::move(name), "--data", std::move(data_dir), "--gpus", std::move(gpus)};
  // `extra` may name another address (a second loopback address, 127.0.0.2).
  if (std::find(extra.begin(), extra.end(), "--address") == extra.end()) {
    args_.insert(args_.end(), {"--address", "127.0.0.1"});
  }
  // `extra` may name the servers itself (--server URL1,URL2,...).
  if (std::find(extra.begin(), extra.end(), "--server") == extra.end()) {
    args_.insert(args_.end(), {"--server", server.url()});
  }
  // The server's own CA (DATA/tls/ca.crt), as an operator gives it to each agent.
  if (std::find(extra.begin(), extra.end(), "--tls-ca") == extra.end()) {
    args_.insert(args_.end(), {"--tls-ca", server.ca_file()});
  }
  if (allow_root) args_.push_back("--allow-root-jobs");
  args_.insert(args_.end(), extra.begin(), extra.end());
  Start();
}

AgentProcess::~AgentProcess() { Stop(); }

void AgentProcess::Start() { pid_ = SpawnBaton(args_, log_); }

void AgentProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = 0;
}

void AgentProcess::Kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = 0;
}

void BatonProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

bool BatonProcess::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  return waitpid(pid_, &status, WNOHANG) == 0;
}

std::unique_ptr<net::HttpClient> BatonProcess::Client() const { return Client(token_); }

std::unique_ptr<net::HttpClient> BatonProcess::Client(const std::string& token) const {
  auto c = net::HttpClient::Create(url_, token, {.ca_file = ca_file()});
  if (!c) throw std::runtime_error(c.error().message());
  return std::move(*c);
}

CliResult RunShell(const std::string& command) {
  CliResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(listen_fd_, 64) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error("TcpProxy: cannot listen");
  }
  port_ = ntohs(a.sin_port);
  threads_.emplace_back([this] { Accept(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  close(listen_fd_);
}

void TcpProxy::Accept() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::lock_guard lock(mu_);
    threads_.emplace_back([this, client] { Pump(client); });
  }
}

void TcpProxy::Pump(int client) {
  // A connection made during a cut is held, unanswered, until the heal: then it is forwarded.
  while (cut_ && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(target_port_));
  if (stop_ || server < 0 || connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(client);
    if (server >= 0) close(server);
    return;
  }
  bool stalled = false;  // cut once: this connection never passes a byte again
  char buf[16384];
  while (!stop_) {
    stalled |= cut_.load();
    if (stalled) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (poll(p, 2, 50) <= 0) continue;
    bool closed = false;
    for (int i = 0; i < 2 && !closed; ++i) {
      if (p[i].revents == 0) continue;
      ssize_t n = read(p[i].fd, buf, sizeof buf);
      if (n <= 0) {
        closed = true;
        break;
      }
      int to = i == 0 ? server : client;
      for (ssize_t done = 0; done < n;) {
        ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
        if (w <= 0) {
          closed = true;
          break;
        }
        done += w;
      }
    }
    if (closed) break;
  }
  close(client);
  close(server);
}

int TestUser(const std::string& name) {
  if (const struct passwd* pw = getpwnam(name.c_str())) return static_cast<int>(pw->pw_uid);
  if (geteuid() != 0) return -1;
  // /usr/sbin may be missing from a CI job's PATH.
  std::string cmd =
      "PATH=\"$PATH:/usr/sbin:/sbin\" useradd --system --no-create-home "
      "--home-dir /nonexistent --shell /usr/sbin/nologin " +
      name + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return -1;
  const struct passwd* pw = getpwnam(name.c_str());
  return pw != nullptr ? static_cast<int>(pw->pw_uid) : -1;
}

CliResult RunCliWithToken(const BatonProcess& server, const std::string& token,
                          const std::vector<std::string>& args) {
  std::string cmd =
      "BATON_HOME='" + server.data_dir() + "' BATON_TOKEN='" + token + "' " + BATON_BINARY;
  for (const std::string& a : args) {
    std::string quoted;
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " '" + quoted + "'";
  }
  return RunShell("unset BATON_SERVER; " + cmd);
}

CliResult RunCli(const BatonProcess& server, const std::vector<std::string>& args) {
  return RunCliIn(server, "", args);
}

CliResult RunCliIn(const BatonProcess& server, const std::string& cwd,
                   const std::vector<std::string>& args, const std::vector<std::string>& env) {
  // Close-on-exec: a test's other thread may fork a command of its own before this one's
  // parent end is closed, and a long-lived command (`baton alloc` waiting for the test) that
  // kept this pipe's write end would keep this read from ever ending. The child's own copies
  // (dup2 onto 1 and 2) are not close-on-exec.
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    close(pipefd[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    setenv("BATON_HOME", server.data_dir().c_str(), 1);
    unsetenv("BATON_SERVER");
    unsetenv("BATON_TOKEN");
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<std::string> all = {BATON_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  CliResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string RawExchange(const std::string& url, const std::string& bytes, int timeout_ms) {
  auto hp = net::ParseBaseUrl(url);
  if (!hp) throw std::runtime_error("bad url " + url);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(hp->second)));
  inet_pton(AF_INET, hp->first.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string in;
  size_t sent = 0;
  bool write_open = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, static_cast<short>(POLLIN | (write_open && sent < bytes.size() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 50) < 0) break;
    if (p.revents & POLLOUT) {
      ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) write_open = false;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        in.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        break;
      }
    }
  }
  close(fd);
  return in;
}

int RawStatus(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

std::string JsonField(const std::string& text, const std::string& field) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return "";
  const json::value* f = v.get_object().if_contains(field);
  return f == nullptr ? "" : json::serialize(*f);
}

std::string JsonString(const std::string& text, const std::string& field) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return "";
  const json::value* f = v.get_object().if_contains(field);
  return f != nullptr && f->is_string() ? std::string(f->get_string()) : "";
}

int FreePort() { return FreeLoopbackPort(); }

int MasterPort() { return FreeRendezvousPort(); }

std::string LogsUntil(net::HttpClient& client, int64_t id, const std::string& marker) {
  std::string body;
  for (int i = 0; i < 500; ++i) {
    auto r = client.Request("GET", "/v1/jobs/" + std::to_string(id) + "/logs");
    if (r && r->status == 200) {
      body = r->body;
      if (body.find(marker) != std::string::npos) return body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return body;
}

int64_t Submit(net::HttpClient& client, const std::string& body) {
  auto r = client.Request("POST", "/v1/jobs", body);
  EXPECT_TRUE(r.has_value());
  if (!r) return 0;
  EXPECT_EQ(r->status, 201) << r->body;
  std::string id = JsonField(r->body, "id");
  return id.empty() || id == "null" ? 0 : std::stoll(id);
}

std::string WaitForJob(net::HttpClient& client, int64_t id, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = client.Request("GET", "/v1/jobs/" + std::to_string(id));
    if (r && r->status == 200) {
      std::string state = JsonString(r->body, "state");
      if (state == "succeeded" || state == "failed" || state == "cancelled" ||
          state == "timed_out") {
        return r->body;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

bool WaitForNodes(net::HttpClient& client, size_t count, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = client.Request("GET", "/v1/nodes");
    boost::system::error_code ec;
    boost::json::value v = r && r->status == 200 ? boost::json::parse(r->body, ec) : nullptr;
    const boost::json::array* nodes = nullptr;
    if (!ec && v.is_object() && v.as_object().contains("nodes"))
      nodes = v.as_object().at("nodes").if_array();
    if (nodes != nullptr && nodes->size() >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string WaitUntilWaiting(net::HttpClient& client, int64_t id, const std::string& reason,
                             int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = client.Request("GET", "/v1/jobs/" + std::to_string(id));
    if (r && r->status == 200 && JsonString(r->body, "state") == "pending" &&
        JsonString(r->body, "reason") == reason) {
      return r->body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

std::string GetJob(net::HttpClient& client, int64_t id) {
  auto r = client.Request("GET", "/v1/jobs/" + std::to_string(id));
  return r ? r->body : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool TorchThere() {
  std::string cmd = std::string(BATON_SOURCE_DIR) +
                    "/scripts/install-test-server python3-torch >/dev/null 2>&1 && "
                    "/usr/bin/python3 -c 'import torch.distributed as d; "
                    "assert d.is_gloo_available()'";
  return system(cmd.c_str()) == 0;
}

bool NodesReady(net::HttpClient& client, size_t n) {
  return Within(std::chrono::seconds(20), [&] {
    auto r = client.Request("GET", "/v1/nodes");
    if (!r || r->status != 200) return false;
    boost::system::error_code ec;
    json::value v = json::parse(r->body, ec);
    if (ec || !v.is_object()) return false;
    size_t ready = 0;
    for (const auto& node : v.at("nodes").as_array()) ready += node.at("state") == "ready";
    return ready == n;
  });
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace baton::testing
