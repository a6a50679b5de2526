// The controller's side of a tunnel (`baton run`, `attach`, `forward`): a client's upgraded
// connection and the one its job's agent opens back are paired by the tunnel's id, and the
// bytes between them are copied both ways on a thread of the tunnel's own, never through the
// controller's loop. The relay does not read them: a session's frames (core/session_frame.h)
// are the CLI's and the shim's business.
//
// The pairing: the API asks the controller to send the agent a tunnel order and, before that,
// tells the hub to Expect the id, so that only an expected tunnel's agent end is let in. The
// first end to arrive waits for the other for `wait` at most, then is closed (the client then
// says the node did not answer).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace baton::api {

class RelayHub {
 public:
  explicit RelayHub(std::chrono::milliseconds wait = std::chrono::seconds(20));
  ~RelayHub();  // closes every tunnel and joins its thread
  RelayHub(const RelayHub&) = delete;
  RelayHub& operator=(const RelayHub&) = delete;

  // Tunnel `id` is being opened: its ends are let in until `wait` has passed.
  void Expect(const std::string& id);
  bool Expects(const std::string& id) const;
  // One end of tunnel `id`, a connected socket the hub now owns, with the bytes its side sent
  // before the hand-over. An end of a tunnel not expected is closed at once.
  void Offer(const std::string& id, int fd, std::string early);
  // Tunnels whose ends are both there and still copying.
  int Open() const;
  // Tunnels paired since the start.
  int64_t Paired() const;

 private:
  struct End {
    int fd = -1;
    std::string early;
  };
  struct Waiting {
    std::chrono::steady_clock::time_point deadline;
    std::optional<End> end;
  };
  struct Relay {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void Reap();
  void Start(End a, End b);

  const std::chrono::milliseconds wait_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Waiting> waiting_;
  std::list<std::unique_ptr<Relay>> relays_;
  int64_t paired_ = 0;
  bool stopping_ = false;
  int stop_[2] = {-1, -1};  // a pipe; closing its write end ends every relay
  std::thread reaper_;
};

}  // namespace baton::api
