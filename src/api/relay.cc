#include "api/relay.h"

#include <fcntl.h>
#include <unistd.h>

#include "core/splice.h"

namespace baton::api {

RelayHub::RelayHub(std::chrono::milliseconds wait) : wait_(wait) {
  if (pipe2(stop_, O_CLOEXEC) != 0) stop_[0] = stop_[1] = -1;
  reaper_ = std::thread([this] { Reap(); });
}

RelayHub::~RelayHub() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, w] : waiting_) {
      if (w.end) ::close(w.end->fd);
    }
    waiting_.clear();
  }
  cv_.notify_all();
  if (stop_[1] >= 0) ::close(stop_[1]);  // every Splice sees its stop pipe readable
  reaper_.join();
  for (auto& r : relays_) r->thread.join();
  if (stop_[0] >= 0) ::close(stop_[0]);
}

void RelayHub::Expect(const std::string& id) {
  std::lock_guard lock(mu_);
  waiting_[id].deadline = std::chrono::steady_clock::now() + wait_;
  cv_.notify_all();
}

bool RelayHub::Expects(const std::string& id) const {
  std::lock_guard lock(mu_);
  return waiting_.count(id) > 0;
}

int RelayHub::Open() const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& r : relays_) n += r->done ? 0 : 1;
  return n;
}

int64_t RelayHub::Paired() const {
  std::lock_guard lock(mu_);
  return paired_;
}

void RelayHub::Offer(const std::string& id, int fd, std::string early) {
  std::unique_lock lock(mu_);
  auto it = waiting_.find(id);
  if (stopping_ || it == waiting_.end()) {
    lock.unlock();
    ::close(fd);
    return;
  }
  if (!it->second.end) {
    it->second.end = End{fd, std::move(early)};
    return;
  }
  End first = std::move(*it->second.end);
  waiting_.erase(it);
  ++paired_;
  Start(std::move(first), End{fd, std::move(early)});
}

// Under mu_.
void RelayHub::Start(End a, End b) {
  auto relay = std::make_unique<Relay>();
  Relay* r = relay.get();
  int stop = stop_[0];
  r->thread = std::thread([r, stop, a = std::move(a), b = std::move(b)] {
    if (b.early.empty() || WriteAllTo(a.fd, b.early)) Splice(a.fd, b.fd, stop, a.early);
    ::close(a.fd);
    ::close(b.fd);
    r->done = true;
  });
  relays_.push_back(std::move(relay));
}

// Closes ends whose other end did not come in time, and joins the relays that have ended.
void RelayHub::Reap() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::seconds(1);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second.deadline <= now) {
        if (it->second.end) ::close(it->second.end->fd);
        it = waiting_.erase(it);
      } else {
        next = std::min(next, it->second.deadline);
        ++it;
      }
    }
    for (auto it = relays_.begin(); it != relays_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        it = relays_.erase(it);
      } else {
        ++it;
      }
    }
    cv_.wait_until(lock, next);
  }
}

}  // namespace baton::api
