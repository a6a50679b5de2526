// Wakes streams when there is news, instead of having them poll. A Fanout is fed by whoever
// makes news (the controller loop's hooks after a durable batch, the agent reports that land
// log bytes) and wakes its subscribers: all of them, or those of one topic (a job's id), so
// that a follower of one job does not wake for every other. A Waiter is one stream's link to
// a fanout: news seen since the stream last looked, and the wake-up of the wait the stream is
// in. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

namespace baton::api {

class Fanout {
 public:
  // Keeps its wake-up registered until destroyed. Must not outlive the fanout.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    ~Subscription();

   private:
    friend class Fanout;
    Subscription(Fanout* fanout, int64_t topic, uint64_t id)
        : fanout_(fanout), topic_(topic), id_(id) {}
    Fanout* fanout_ = nullptr;
    int64_t topic_ = 0;
    uint64_t id_ = 0;
  };

  static constexpr int64_t kEveryTopic = 0;

  Fanout() = default;
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;

  // `wake` is called on each Notify of `topic` or of kEveryTopic (a kEveryTopic subscriber:
  // on every Notify), on the notifying thread and under the fanout's lock (so that no call is
  // in flight once the subscription is gone): it must be quick, and must not subscribe,
  // unsubscribe or notify.
  [[nodiscard]] Subscription Subscribe(std::function<void()> wake, int64_t topic = kEveryTopic);
  void Notify(int64_t topic = kEveryTopic);
  size_t subscribers() const;

 private:
  void Unsubscribe(int64_t topic, uint64_t id);

  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<std::pair<int64_t, uint64_t>, std::function<void()>> wakes_;  // by topic, then id
};

// One stream's view of a fanout. The stream calls Look() before it looks for news and, when it
// found none, Arm() with the wake-up of its wait: news that came in between wakes it at once,
// so none is missed. Subscribed for the waiter's life; `fanout` must outlive it.
class Waiter {
 public:
  explicit Waiter(Fanout& fanout, int64_t topic = Fanout::kEveryTopic);
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  void Look();
  // `wake` runs once: at once when news came since Look(), else at the next Notify.
  void Arm(std::function<void()> wake);

 private:
  void OnNews();

  std::mutex mu_;
  bool news_ = false;
  std::function<void()> wake_;
  Fanout::Subscription subscription_;  // last: gone before the members OnNews uses
};

}  // namespace baton::api
