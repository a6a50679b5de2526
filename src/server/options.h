// What `baton up`, `baton server` and `baton agent` run with: their flags and what the
// configuration file gives (server/config.h reads it, at start and on SIGHUP alike).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/policy.h"
#include "server/serve_flags.h"
#include "server/serve_tls.h"

namespace baton::server {

struct ServeOptions {
  std::string data;
  std::string listen = "127.0.0.1:8470";
  bool local_agent = false;
  std::string gpus = "auto";
  std::string pool = "default";
  int http_threads = 1;
  Policy policy;
  HealthFlags health;
  std::string node_timeout = "60s";
  int drain_after_launch_failures = 3;
  std::vector<std::string> webhooks;  // alerts.webhooks of the configuration file
  int webhook_attempts = 5;
  std::string store_path;        // store.path of the configuration file; "" = DATA/baton.db
  std::string store_url;         // store.url: PostgreSQL's, or "" for SQLite
  std::string store_flag;        // --store: a SQLite file or a postgres:// URL; wins over the file
  std::string advertise;         // --advertise: this controller's URL for the others (PostgreSQL)
  std::string lease_ttl = "3s";  // --lease-ttl: how long a leader's lease lasts unrenewed
  std::string shared_dir;        // --shared-dir: logs and code snapshots ("" = in the data dir)
  std::string disk_reserve = "512MiB";  // --disk-reserve: free space job logs leave the store
  TlsFlags tls;                         // --tls-cert, --tls-key, --insecure-http
  std::string code_quota = "10GiB";     // --code-quota: each user's code snapshots
  std::string code_retention = "7d";    // --code-retention: an unused snapshot kept so long
  bool new_store = false;               // --new-store: an empty store where there was one
  bool restore_store = false;           // --restore-store: a store behind its data directory
  // The flags typed on the command line (long names, "--listen"): they win over the file's.
  std::set<std::string> typed;
};

struct AgentFlags {
  std::string server, token, token_file, name, gpus = "auto", data, pool = "default", address,
                                               tls_ca;
  bool spot = false;
  std::string reclaim_notice;       // --reclaim-notice: aws[:URL], gcp[:URL] or file:PATH
  std::string reclaim_poll = "5s";  // --reclaim-poll
  HealthFlags health;
};

}  // namespace baton::server
