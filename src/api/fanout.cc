#include "api/fanout.h"

#include <utility>

namespace baton::api {

Fanout::Subscription::Subscription(Subscription&& other) noexcept
    : fanout_(std::exchange(other.fanout_, nullptr)), topic_(other.topic_), id_(other.id_) {}

Fanout::Subscription& Fanout::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    if (fanout_ != nullptr) fanout_->Unsubscribe(topic_, id_);
    fanout_ = std::exchange(other.fanout_, nullptr);
    topic_ = other.topic_;
    id_ = other.id_;
  }
  return *this;
}

Fanout::Subscription::~Subscription() {
  if (fanout_ != nullptr) fanout_->Unsubscribe(topic_, id_);
}

Fanout::Subscription Fanout::Subscribe(std::function<void()> wake, int64_t topic) {
  std::lock_guard lock(mu_);
  uint64_t id = next_id_++;
  wakes_.emplace(std::make_pair(topic, id), std::move(wake));
  return Subscription(this, topic, id);
}

void Fanout::Unsubscribe(int64_t topic, uint64_t id) {
  std::lock_guard lock(mu_);
  wakes_.erase(std::make_pair(topic, id));
}

void Fanout::Notify(int64_t topic) {
  std::lock_guard lock(mu_);
  if (topic == kEveryTopic) {
    for (auto& [key, wake] : wakes_) wake();
    return;
  }
  // The topic's subscribers, then those of every topic: two ranges of the ordered map.
  for (int64_t t : {topic, kEveryTopic}) {
    for (auto it = wakes_.lower_bound({t, 0}); it != wakes_.end() && it->first.first == t; ++it)
      it->second();
  }
}

size_t Fanout::subscribers() const {
  std::lock_guard lock(mu_);
  return wakes_.size();
}

Waiter::Waiter(Fanout& fanout, int64_t topic)
    : subscription_(fanout.Subscribe([this] { OnNews(); }, topic)) {}

void Waiter::Look() {
  std::lock_guard lock(mu_);
  news_ = false;
  wake_ = nullptr;
}

void Waiter::Arm(std::function<void()> wake) {
  {
    std::lock_guard lock(mu_);
    if (!news_) {
      wake_ = std::move(wake);
      return;
    }
    news_ = false;
  }
  wake();
}

void Waiter::OnNews() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    news_ = true;
    wake = std::move(wake_);
    wake_ = nullptr;
  }
  if (wake) wake();
}

}  // namespace baton::api
