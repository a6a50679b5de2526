// The controllers a client may talk to: `--server URL1,URL2,...` (or BATON_SERVER likewise)
// names every controller sharing one store; one of them leads, the others are standbys that
// answer with the leader's address (X-Baton-Leader). A ServerList holds the address in use and
// moves on when it fails or when a standby names the leader. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "net/tls.h"

namespace baton::net {

struct HttpUrl;  // net/http_client.h

class ServerList {
 public:
  // Every address must be an https:// or http:// URL; at least one.
  static Result<std::shared_ptr<ServerList>> Parse(std::string_view comma_separated);

  std::string Current() const;
  size_t size() const { return urls_.size(); }
  // Changes each time Current() does: a client re-targets when it sees a new one.
  uint64_t generation() const;
  // `url` failed: the next address is used. True once every address has failed in a row
  // (time for the caller to back off), counting from the last success.
  bool Failed(const std::string& url);
  void Succeeded(const std::string& url);
  // A standby said that `url` leads: it is used next (whether or not it was listed).
  void Leader(const std::string& url);
  // With several addresses: asks each at once which one leads (GET /healthz, `wait` at most)
  // and uses the first that answers as the leader, else the leader a standby names; with no
  // answer in time, nothing changes. A controller that takes connections and answers nothing
  // (stalled, cut off) so costs `wait` at most, and nothing once another answers. `target`
  // turns an address into what to connect to (default: the address itself).
  void ProbeLeader(const std::string& token, const TlsClientOptions& tls, Duration wait,
                   const std::function<Result<HttpUrl>(const std::string&)>& target = {});
  // The addresses, comma-separated, for messages.
  std::string ToString() const;
  std::vector<std::string> urls() const;

 private:
  explicit ServerList(std::vector<std::string> urls) : urls_(std::move(urls)) {}
  mutable std::mutex mu_;
  std::vector<std::string> urls_;
  size_t current_ = 0;
  size_t failures_ = 0;  // in a row
  uint64_t generation_ = 0;
};

}  // namespace baton::net
