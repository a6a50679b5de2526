// Starts the real `baton` binary (`baton up` on 127.0.0.1:0 in a temporary data directory) and
// talks to it over HTTP and through its command line, as users do.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "net/http_client.h"

namespace baton::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class BatonProcess {
 public:
  // Starts `baton COMMAND --data DIR --listen 127.0.0.1:0 EXTRA...` and waits until it serves.
  // COMMAND is "up" (controller and local agent) or "server" (controller alone).
  explicit BatonProcess(std::string data_dir, std::vector<std::string> extra = {},
                        std::string command = "up");
  ~BatonProcess();

  void Start();
  void Stop();   // SIGTERM, then wait
  void Kill9();  // SIGKILL, then wait; the job processes it started are left running
  bool Alive();
  void Signal(int sig);  // e.g. SIGHUP: reload the configuration file

  const std::string& url() const { return url_; }
  const std::string& token() const { return token_; }
  const std::string& data_dir() const { return data_dir_; }
  // The CA that signed its certificate (made by the server in DATA/tls on first start).
  std::string ca_file() const { return data_dir_ + "/tls/ca.crt"; }

  // A new client with the admin token (or `token`).
  std::unique_ptr<net::HttpClient> Client() const;
  std::unique_ptr<net::HttpClient> Client(const std::string& token) const;

 private:
  void SignalAndWait(int sig);

  std::string data_dir_;
  std::vector<std::string> extra_;
  std::string command_;
  pid_t pid_ = 0;
  std::string url_, token_;
};

// `baton agent` joining a server with its agent token, in its own data directory, reachable at
// 127.0.0.1 (MASTER_ADDR; `extra` may give another --address) and, unless `allow_root` is false,
// allowed to run root's jobs (the tests run as root and submit with the admin token of root).
class AgentProcess {
 public:
  AgentProcess(const BatonProcess& server, std::string name, std::string data_dir, std::string gpus,
               std::vector<std::string> extra = {}, bool allow_root = true);
  ~AgentProcess();

  void Start();
  void Stop();   // SIGTERM, then wait
  void Kill9();  // SIGKILL, then wait; its jobs keep running
  pid_t pid() const { return pid_; }

 private:
  std::vector<std::string> args_;
  std::string log_;
  pid_t pid_ = 0;
};

// An unprivileged Unix user made for tests (`useradd --system`, no home, no login shell) if
// there is none of that name: its uid, or -1 when it cannot be made (not root). Tests that
// need two users on a node run their jobs as such users, as a shared cluster would.
int TestUser(const std::string& name);

// A TCP proxy on a loopback port to `target_port`, which a test can cut: while cut it passes
// no byte either way and answers nothing, holding every connection open (and accepting new
// ones) as a network partition does, until it is healed. Connections it forwarded before the
// cut stay stalled after the heal, as after a real partition; new ones pass.
class TcpProxy {
 public:
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  int port() const { return port_; }
  void Cut() { cut_ = true; }
  void Heal() { cut_ = false; }

 private:
  void Accept();
  void Pump(int client);
  int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> cut_{false};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// Runs `baton ARGS...` with BATON_HOME set to the server's data dir.
CliResult RunCli(const BatonProcess& server, const std::vector<std::string>& args);
// The same, run in `cwd` (where a user submits from), with `env` ("K=V") added.
CliResult RunCliIn(const BatonProcess& server, const std::string& cwd,
                   const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// Runs `baton ARGS...` with the server's BATON_HOME but another user's token (BATON_TOKEN):
// what a user given that token types.
CliResult RunCliWithToken(const BatonProcess& server, const std::string& token,
                          const std::vector<std::string>& args);

// Runs `command` under sh (stderr with stdout): what a user types, environment and all.
CliResult RunShell(const std::string& command);

// Sends raw bytes on a new connection and returns everything the server answers until it
// closes (or `timeout_ms` passes). For requests an HTTP client library would refuse to make.
std::string RawExchange(const std::string& url, const std::string& bytes, int timeout_ms = 10000);

// The status code of a raw HTTP response, or 0.
int RawStatus(const std::string& response);

// A loopback port no one listens on now (bound, read and closed).
int FreePort();

// A job's MASTER_PORT of its own (tests run side by side, and each one's job 1 would meet at
// the same default port): it and the step port after it are free on every address, below
// the ephemeral ports that servers and connections of tests beside it take.
int MasterPort();

// POST /v1/jobs with `body`: the new job's id, or 0 (and a test failure) when it was refused.
int64_t Submit(net::HttpClient& client, const std::string& body);

// Looks at `pred` every 20 ms until it holds or `limit` passes; whether it held.
template <class Pred>
bool Within(std::chrono::milliseconds limit, Pred pred) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// The job's log (from its first node) once it holds `marker`, or what it holds after ~10 s:
// logs reach the controller shortly after the job ends.
std::string LogsUntil(net::HttpClient& client, int64_t id, const std::string& marker);

// GET /v1/jobs/{id} until its state is terminal; returns the job's JSON, or "" on timeout.
std::string WaitForJob(net::HttpClient& client, int64_t id, int timeout_ms = 30000);
// Waits until GET /v1/nodes lists at least `count` nodes; false at the timeout. `baton up`
// writes server.url before its local agent has joined: a test about nodes, or about what no
// node can hold, waits for it as a user typing a command a moment later does not have to.
bool WaitForNodes(net::HttpClient& client, size_t count = 1, int timeout_ms = 30000);
// Job `id`'s JSON now ("" when the request failed).
std::string GetJob(net::HttpClient& client, int64_t id);
// The whole file ("" when it cannot be read).
std::string ReadFile(const std::string& path);
// Waits until the scheduler has looked at job `id` and left it waiting for `reason`
// ("resources", "priority", ...); returns the job's JSON then, "" on timeout. A test that a job
// stays pending waits for this instead of sleeping: the reason is only set by a pass.
std::string WaitUntilWaiting(net::HttpClient& client, int64_t id, const std::string& reason,
                             int timeout_ms = 10000);

// Installs Debian's python3-torch (the first test that needs it, on a fresh machine) and says
// whether /usr/bin/python3 imports it with gloo. Every test that runs PyTorch asks first.
bool TorchThere();

// Waits (up to 20 s) until `n` nodes are ready; whether they are.
bool NodesReady(net::HttpClient& client, size_t n);
// The text up to its first newline: the id `baton submit` prints.
std::string FirstLine(const std::string& text);
// How many times `what` occurs in `text`.
size_t CountOf(const std::string& text, const std::string& what);

// A top-level field of a JSON object, as text: "\"running\"", "3", "null"...
std::string JsonField(const std::string& json, const std::string& field);
std::string JsonString(const std::string& json, const std::string& field);

}  // namespace baton::testing
