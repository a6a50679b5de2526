#include "net/webhook_sender.h"

#include <algorithm>

#include "net/http_client.h"

namespace baton::net {
Result<std::unique_ptr<WebhookSender>> WebhookSender::Create(WebhookOptions options) {
  std::vector<HttpUrl> targets;
  for (const std::string& url : options.urls) {
    // https:// (a chat service's webhook, say) is checked against the system's CAs.
    auto parsed = ParseHttpUrl(url);
    if (!parsed) return Err(InvalidArgument("webhook " + url + ": " + parsed.error().message()));
    targets.push_back(std::move(*parsed));
  }
  return std::unique_ptr<WebhookSender>(new WebhookSender(std::move(options), std::move(targets)));
}

WebhookSender::WebhookSender(WebhookOptions options, std::vector<HttpUrl> targets)
    : options_(std::move(options)), targets_(std::move(targets)) {
  thread_ = std::thread([this] { Run(); });
}

WebhookSender::~WebhookSender() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (!queue_.empty() && options_.log) {
    options_.log("webhooks: " + std::to_string(queue_.size()) +
                 " alert deliveries not made before stopping");
  }
}

void WebhookSender::Send(std::string json) {
  if (options_.urls.empty()) return;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < options_.urls.size(); ++i) {
    if (queue_.size() >= options_.max_queue) {
      if (options_.log)
        options_.log("webhook " + options_.urls[queue_.front().url] +
                     ": queue full, an alert was dropped");
      queue_.pop_front();
    }
    queue_.push_back(Delivery{.url = i, .body = json, .due = std::chrono::steady_clock::now()});
  }
  cv_.notify_all();
}

bool WebhookSender::Flush(Duration limit) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return queue_.empty() && !busy_; });
}

void WebhookSender::Run() {
  // One client per URL, kept between deliveries (keep-alive).
  std::vector<std::unique_ptr<HttpClient>> clients(options_.urls.size());
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      continue;
    }
    auto next =
        std::min_element(queue_.begin(), queue_.end(),
                         [](const Delivery& a, const Delivery& b) { return a.due < b.due; });
    if (next->due > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, next->due);
      continue;
    }
    Delivery d = std::move(*next);
    queue_.erase(next);
    busy_ = true;
    lock.unlock();
    const std::string& url = options_.urls[d.url];
    const HttpUrl& target = targets_[d.url];
    if (!clients[d.url]) clients[d.url] = HttpClient::Create(target, "");
    std::string why;
    auto res = clients[d.url]->Request("POST", target.target, d.body,
                                       {{"Content-Type", "application/json"}}, options_.timeout);
    if (!res || res->status < 200 || res->status >= 300)
      why = res ? "HTTP " + std::to_string(res->status) : res.error().message();
    if (!res) clients[d.url].reset();
    lock.lock();
    busy_ = false;
    if (!why.empty()) {
      d.attempt += 1;
      if (d.attempt >= options_.attempts) {
        if (options_.log) {
          options_.log("webhook " + url + ": gave up after " + std::to_string(d.attempt) +
                       " attempts (" + why + ")");
        }
      } else {
        Duration pause = options_.first_backoff * (1 << std::min(d.attempt - 1, 20));
        d.due = std::chrono::steady_clock::now() + std::min(pause, options_.max_backoff);
        queue_.push_back(std::move(d));
      }
    }
    cv_.notify_all();
  }
}

}  // namespace baton::net
