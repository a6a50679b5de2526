// A PostgreSQL server of a test's own: Debian's postgresql (installed on first use by
// scripts/install-test-server), initdb'd into a temporary directory, listening on a loopback
// port and on a Unix socket in that directory, stopped and removed when the object goes.
// PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user that
// Debian's package creates. Each test takes a database of its own (NewDatabase).
#pragma once

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "free_port.h"

namespace baton::testing {

class PgServer {
 public:
  // Starts the server; ok() says whether it did, error() why not.
  explicit PgServer(const std::string& source_dir) {
    if (std::system((source_dir + "/scripts/install-test-server postgresql").c_str()) != 0) {
      error_ = "scripts/install-test-server postgresql failed";
      return;
    }
    bin_ = BinDir();
    if (bin_.empty()) {
      error_ = "no /usr/lib/postgresql/*/bin/initdb after installing postgresql";
      return;
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / "baton-pg-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    if (geteuid() == 0) {
      passwd* pw = getpwnam("postgres");
      if (pw == nullptr) {
        error_ = "running as root and there is no postgres user to run PostgreSQL as";
        return;
      }
      if (chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        error_ = "chown " + dir_ + " failed";
        return;
      }
      as_ = "runuser -u postgres -- ";
    }
    port_ = FreeLoopbackPort();
    if (!Run(as_ + bin_ + "/initdb -D " + dir_ + "/data -A trust -U baton -E UTF8 --no-sync -N")) {
      error_ = "initdb failed: " + Log();
      return;
    }
    std::string options = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) + " -k " +
                          dir_ + " -c fsync=on -c synchronous_commit=on -c max_connections=200";
    if (!Run(as_ + bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/server.log -w -t 60 -o '" +
             options + "' start")) {
      error_ = "pg_ctl start failed: " + Log();
      return;
    }
    started_ = true;
  }

  ~PgServer() { Stop(); }

  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  bool ok() const { return started_; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }

  // A URL for database `db` over loopback TCP.
  std::string Url(const std::string& db = "postgres") const {
    return "postgres://baton@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }

  // Creates an empty database and returns its URL.
  std::string NewDatabase(const std::string& name) {
    Psql("CREATE DATABASE " + name);
    return Url(name);
  }

  // Runs one SQL statement through psql; true if it succeeded.
  bool Psql(const std::string& sql, const std::string& db = "postgres") const {
    return Run(bin_ + "/psql -q -X -v ON_ERROR_STOP=1 '" + Url(db) + "' -c \"" + sql + "\"");
  }

  void Stop() {
    if (started_) {
      (void)Run(as_ + bin_ + "/pg_ctl -D " + dir_ + "/data -m immediate -w stop");
      started_ = false;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

 private:
  static bool Run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  }

  std::string Log() const {
    std::ifstream in(dir_ + "/server.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  static std::string BinDir() {
    std::string best;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      std::string bin = e.path().string() + "/bin";
      if (std::filesystem::exists(bin + "/initdb") && bin > best) best = bin;
    }
    return best;
  }

  std::string bin_, dir_, as_, error_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace baton::testing
