// Autoscaling's provider calls carried out (control/commands.h ProviderCall): the provider
// executable run with its verb as the last argument and the request's JSON on its stdin, its
// stdout read as the answer (at most kMaxAnswer), killed with its whole process group when it
// passes its timeout, and the answer posted back to the controller as a ProviderAnswer. Off the
// controller's thread: a few workers take the calls in turn, so that a hung resume does not
// hold up a suspend. (Written on fork/exec and poll(2) rather than Boost.Process: see
// docs/architecture.md.)
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "control/commands.h"
#include "core/status.h"

namespace baton::server {

// One run of a provider: its stdout when it exited 0, else why not ("exited 3: <the end of its
// stderr>", "did not answer within 1m; killed").
struct ProviderRun {
  std::vector<std::string> argv;  // the provider, its own arguments and the verb
  std::string input;              // on its stdin
  Duration timeout{0};
  std::vector<std::string> env;  // NAME=VALUE, its whole environment
};
inline constexpr size_t kMaxAnswer = 4 << 20;  // bytes of stdout read at most
inline constexpr size_t kStderrKept = 2048;    // the end of its stderr said in an error
// `on_start`/`on_end`: told the child's pid (its process group) when it starts and ends.
Result<std::string> RunProvider(const ProviderRun& run,
                                const std::function<void(int)>& on_start = nullptr,
                                const std::function<void(int)>& on_end = nullptr);

class ProviderRunner {
 public:
  using Post = std::function<void(control::ProviderAnswer)>;
  static constexpr int kWorkers = 4;

  explicit ProviderRunner(Post post) : post_(std::move(post)) {}
  ~ProviderRunner() { Stop(); }
  ProviderRunner(const ProviderRunner&) = delete;
  ProviderRunner& operator=(const ProviderRunner&) = delete;

  // Starts the workers; each provider gets this process's environment with `extra` (NAME=VALUE)
  // added. Calls queued before wait for it.
  void Start(std::vector<std::string> extra);
  // Thread-safe and quick: queues the call.
  void Run(control::ProviderCall call);
  // Running providers are killed (their process groups), queued calls dropped, the workers
  // joined: nothing is posted after it returns.
  void Stop();

 private:
  void Work();

  Post post_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<control::ProviderCall> queue_;
  std::set<int> running_;  // the process groups of the providers running now
  std::vector<std::string> env_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace baton::server
