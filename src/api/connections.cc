#include "api/connections.h"

#include <algorithm>

#include "core/release_memory.h"

namespace baton::api {
namespace {

// A peak of open connections that counts as a flood, whose memory is handed back once drained.
constexpr size_t kFloodPeak = 1024;

}  // namespace

ConnectionCaps CapsFromLimit(uint64_t nofile) {
  uint64_t kept = std::max<uint64_t>(256, nofile / 4);
  uint64_t total = nofile > kept + 64 ? nofile - kept : 64;
  return ConnectionCaps{.total = static_cast<size_t>(total),
                        .per_peer = static_cast<size_t>(std::max<uint64_t>(16, total / 2))};
}

Connections::Connections(ConnectionCaps caps, std::function<void()> drained)
    : caps_{.total = std::max<size_t>(1, caps.total),
            .per_peer = caps.per_peer != 0 ? caps.per_peer : std::max<size_t>(1, caps.total / 2)},
      drained_(drained ? std::move(drained) : std::function<void()>(ReleaseFreeMemory)) {}

uint64_t Connections::Open(const std::string& peer) {
  std::function<void()> close;
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    auto count = per_peer_.find(peer);
    bool peer_full = count != per_peer_.end() && count->second >= caps_.per_peer;
    bool full = peer_full || conns_.size() >= caps_.total;
    if (full) {
      const std::list<uint64_t>* from = &idle_;
      if (peer_full) {
        auto it = idle_by_peer_.find(peer);
        from = it == idle_by_peer_.end() ? nullptr : &it->second;
      }
      if (from == nullptr || from->empty()) {
        ++refused_;
        return 0;
      }
      uint64_t victim = from->front();
      close = std::move(conns_[victim].close);
      Forget(victim);
      ++closed_for_room_;
    }
    id = next_++;
    Conn& c = conns_[id];
    c.peer = peer;
    ++per_peer_[peer];
    MarkIdle(id, c, true);
    peak_ = std::max(peak_, conns_.size());
  }
  if (close) close();
  return id;
}

void Connections::SetCloser(uint64_t id, std::function<void()> close) {
  std::lock_guard lock(mu_);
  if (auto it = conns_.find(id); it != conns_.end()) it->second.close = std::move(close);
}

void Connections::SetIdle(uint64_t id, bool idle) {
  std::lock_guard lock(mu_);
  if (auto it = conns_.find(id); it != conns_.end()) MarkIdle(id, it->second, idle);
}

void Connections::Closed(uint64_t id) {
  std::function<void()> keep;  // destroyed outside the lock
  bool drained = false;
  {
    std::lock_guard lock(mu_);
    if (auto it = conns_.find(id); it != conns_.end()) {
      keep = std::move(it->second.close);
      Forget(id);
    }
    if (peak_ >= kFloodPeak && conns_.size() <= peak_ / 4) {
      drained = true;
      peak_ = conns_.size();
    }
  }
  if (drained) drained_();
}

void Connections::MarkIdle(uint64_t id, Conn& c, bool idle) {
  if (c.idle == idle) return;
  c.idle = idle;
  if (idle) {
    auto& mine = idle_by_peer_[c.peer];
    c.in_all = idle_.insert(idle_.end(), id);
    c.in_peer = mine.insert(mine.end(), id);
    return;
  }
  idle_.erase(c.in_all);
  auto peer = idle_by_peer_.find(c.peer);
  peer->second.erase(c.in_peer);
  if (peer->second.empty()) idle_by_peer_.erase(peer);
}

void Connections::Forget(uint64_t id) {
  auto it = conns_.find(id);
  MarkIdle(id, it->second, false);
  auto count = per_peer_.find(it->second.peer);
  if (--count->second == 0) per_peer_.erase(count);
  conns_.erase(it);
}

Connections::Counts Connections::counts() const {
  std::lock_guard lock(mu_);
  return Counts{.open = conns_.size(),
                .idle = idle_.size(),
                .refused = refused_,
                .closed_for_room = closed_for_room_};
}

}  // namespace baton::api
