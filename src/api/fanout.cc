#include "api/fanout.h"

#include <utility>

namespace baton::api {

Fanout::Subscription::Subscription(Subscription&& other) noexcept
    : fanout_(std::exchange(other.fanout_, nullptr)), id_(other.id_) {}

Fanout::Subscription& Fanout::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    if (fanout_ != nullptr) fanout_->Unsubscribe(id_);
    fanout_ = std::exchange(other.fanout_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

Fanout::Subscription::~Subscription() {
  if (fanout_ != nullptr) fanout_->Unsubscribe(id_);
}

Fanout::Subscription Fanout::Subscribe(std::function<void()> wake) {
  std::lock_guard lock(mu_);
  uint64_t id = next_id_++;
  wakes_.emplace(id, std::move(wake));
  return Subscription(this, id);
}

void Fanout::Unsubscribe(uint64_t id) {
  std::lock_guard lock(mu_);
  wakes_.erase(id);
}

void Fanout::Notify() {
  std::lock_guard lock(mu_);
  for (auto& [id, wake] : wakes_) wake();
}

size_t Fanout::subscribers() const {
  std::lock_guard lock(mu_);
  return wakes_.size();
}

Waiter::Waiter(Fanout& fanout) : subscription_(fanout.Subscribe([this] { OnNews(); })) {}

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
