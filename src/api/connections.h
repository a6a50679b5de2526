// The HTTP server's TCP connections, kept under caps below the process's descriptor limit, so
// that a flood of idle connections can neither exhaust the descriptors (the store, the logs
// and the local socket need theirs) nor keep agents and users out: a connection past a cap
// closes the oldest idle one (no request yet, or only part of a request's head) of its peer,
// when the peer is at its cap, else of all; with none idle it is refused. Connections serving
// a request (long polls, streams) are never closed for room. Once a flood has drained (the
// connections open down to a quarter of a peak of 1024 or more), the memory their buffers held
// is handed back to the system (ReleaseFreeMemory). Thread-safe; no Beast here.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

namespace baton::api {

struct ConnectionCaps {
  size_t total = 0;     // connections at once; 0 = from the descriptor limit (CapsFromLimit)
  size_t per_peer = 0;  // from one address; 0 = half the total
};

// The caps for a process whose descriptor limit is `nofile`: a quarter of it (at least 256)
// kept for everything but TCP connections, and half of the rest for one peer.
ConnectionCaps CapsFromLimit(uint64_t nofile);

class Connections {
 public:
  // `drained` runs (outside the lock) once a flood has drained; by default ReleaseFreeMemory.
  explicit Connections(ConnectionCaps caps, std::function<void()> drained = {});

  // A new connection from `peer` (an address): its id, or 0 when it must be refused. It
  // starts idle. May close an idle one for room (its closer runs outside the lock).
  uint64_t Open(const std::string& peer);
  // How to close `id` when it is chosen for room (posts a close to its own strand).
  void SetCloser(uint64_t id, std::function<void()> close);
  // `id` waits for a request (true), or serves one (false).
  void SetIdle(uint64_t id, bool idle);
  // `id` is gone (a no-op for one closed for room, already forgotten).
  void Closed(uint64_t id);

  struct Counts {
    size_t open = 0, idle = 0;
    uint64_t refused = 0, closed_for_room = 0;
  };
  Counts counts() const;
  const ConnectionCaps& caps() const { return caps_; }

 private:
  struct Conn {
    std::string peer;
    std::function<void()> close;
    bool idle = false;
    std::list<uint64_t>::iterator in_all, in_peer;  // in idle_ and idle_by_peer_, when idle
  };
  void MarkIdle(uint64_t id, Conn& c, bool idle);  // mu_ held
  void Forget(uint64_t id);                        // mu_ held

  const ConnectionCaps caps_;
  const std::function<void()> drained_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Conn> conns_;
  std::unordered_map<std::string, size_t> per_peer_;
  std::list<uint64_t> idle_;  // oldest first
  std::unordered_map<std::string, std::list<uint64_t>> idle_by_peer_;
  uint64_t next_ = 1;
  uint64_t refused_ = 0, closed_for_room_ = 0;
  size_t peak_ = 0;  // the most open at once since memory was last handed back
};

// A connection's hold on its place: released when the session that holds it ends.
class ConnectionTicket {
 public:
  ConnectionTicket() = default;
  ConnectionTicket(Connections* book, uint64_t id) : book_(book), id_(id) {}
  ConnectionTicket(ConnectionTicket&& o) noexcept : book_(o.book_), id_(o.id_) {
    o.book_ = nullptr;
  }
  ConnectionTicket& operator=(ConnectionTicket&&) = delete;
  ~ConnectionTicket() {
    if (book_ != nullptr) book_->Closed(id_);
  }
  void SetIdle(bool idle) {
    if (book_ != nullptr) book_->SetIdle(id_, idle);
  }
  void SetCloser(std::function<void()> close) {
    if (book_ != nullptr) book_->SetCloser(id_, std::move(close));
  }

 private:
  Connections* book_ = nullptr;
  uint64_t id_ = 0;
};

}  // namespace baton::api
