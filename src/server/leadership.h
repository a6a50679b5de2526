// Several controllers sharing one PostgreSQL store (docs/ha.md):
// a controller waits as a standby, answering only health checks and pointing everything else
// at the leader, until it takes the lease; then it leads, renewing the lease on a thread of
// its own, and stops the moment it cannot (another has taken over, or PostgreSQL has been out
// of reach for longer than the lease). Used by server/ and main.cc.
#pragma once

#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "core/time.h"
#include "net/tls.h"
#include "store/postgres_lease.h"
#include "store/postgres_store.h"

namespace baton::server {

struct StandbyOptions {
  std::string host;           // to listen on
  uint16_t port = 0;          // 0 picks one
  std::string advertise_url;  // where this controller serves, as others should reach it
  std::string holder;         // this controller's id in the lease
  Duration ttl = std::chrono::seconds(3);
  std::string data_dir;        // where server.url and server.port are written
  net::TlsServerFiles tls;     // the certificate the standby serves with too ("" = none)
  bool insecure_http = false;  // plain HTTP from other machines too
};

// A controller's id in the lease: host, process and a random part.
std::string LeaseHolderId();

// Serves as a standby on options.host:port until this controller takes the lease: returns its
// epoch, and in *port the port it served on (the leader serves on the same). 0 when one of
// `signals` came first (the controller stops).
Result<int64_t> WaitToLead(store::PostgresLease& lease, const StandbyOptions& options,
                           const sigset_t& signals, uint16_t* port);

// Renews a lease held (every third of its time to live) until destroyed; calls `lost` (from
// its thread) when the lease is lost.
class LeaseKeeper {
 public:
  LeaseKeeper(store::PostgresLease& lease, int64_t epoch, Duration ttl,
              std::function<void(const Status&)> lost);
  ~LeaseKeeper();
  // Stops renewing and ends the lease at once, so that a standby takes over without waiting.
  void Release();

 private:
  void Run();
  // Ends the lease when no renewal has succeeded for the lease's time less a margin, even while
  // Run is stuck in a renewal that PostgreSQL, cut off, never answers.
  void Watch();
  store::PostgresLease& lease_;
  int64_t epoch_;
  Duration ttl_;
  std::function<void(const Status&)> lost_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<int64_t> renewed_ns_{0};  // steady clock, of the last renewal sent that succeeded
  std::thread thread_, watchdog_;
};

// With PostgreSQL: the lease, taken after waiting as a standby (WaitToLead), kept by a thread.
struct Leading {
  std::unique_ptr<store::PostgresLease> lease;
  std::unique_ptr<LeaseKeeper> keeper;
  int64_t epoch = 0;  // 0: a standby told to stop
};

struct LeadOptions {
  std::string store_url;
  std::string advertise;  // --advertise ("" = from the listen address)
  std::string lease_ttl;  // --lease-ttl
  std::string data_dir;
  net::TlsServerFiles tls;  // the controller's certificate
  bool insecure_http = false;
};

// Waits as a standby on `listen` until this controller leads, then fences `store` with the
// epoch and keeps the lease (stopping the process at once when it is lost); `listen`'s port
// becomes the one the standby served on.
Result<Leading> Lead(const LeadOptions& o, store::PostgresStore& store,
                     std::pair<std::string, uint16_t>& listen, const sigset_t& signals);

}  // namespace baton::server
