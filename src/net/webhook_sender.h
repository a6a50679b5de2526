// Alert webhooks: POSTs JSON bodies to the configured URLs from a thread of its own, retrying
// each delivery with a growing pause (1 s, 2 s, 4 s ... up to `max_backoff`) until the
// receiver answers 2xx or `attempts` are spent. Send never blocks, so the controller's loop may
// call it; what cannot be delivered is said in the log (through `log`), never silently.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "net/http_client.h"

namespace baton::net {

struct WebhookOptions {
  std::vector<std::string> urls;  // http://HOST:PORT/PATH
  int attempts = 5;               // per delivery and URL
  Duration first_backoff = std::chrono::seconds(1);
  Duration max_backoff = std::chrono::seconds(60);
  Duration timeout = std::chrono::seconds(10);  // per request
  size_t max_queue = 10000;                     // beyond: the oldest are dropped, and said
  std::function<void(const std::string&)> log;  // one line per failure
};

class WebhookSender {
 public:
  // Checks the URLs (http://HOST:PORT/PATH); the error names the bad one.
  static Result<std::unique_ptr<WebhookSender>> Create(WebhookOptions options);
  ~WebhookSender();

  // Queues `json` for every URL. Thread-safe; never blocks on the network.
  void Send(std::string json);
  // Waits until the queue is empty or `limit` passed (tests, shutdown); whether it emptied.
  bool Flush(Duration limit);

 private:
  WebhookSender(WebhookOptions options, std::vector<HttpUrl> targets);
  void Run();

  struct Delivery {
    size_t url = 0;
    std::string body;
    int attempt = 0;
    std::chrono::steady_clock::time_point due{};
  };

  WebhookOptions options_;
  const std::vector<HttpUrl> targets_;  // options_.urls, parsed once by Create
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delivery> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace baton::net
