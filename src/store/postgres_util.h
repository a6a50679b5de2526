// What the PostgreSQL store and lease share over libpq: a connection that answers in Status,
// rows read as text, and a pipeline (several statements, one round trip). Only store/*.cc
// include this (libpq's header stays inside the store module; libpq itself is loaded at run
// time, store/libpq.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/libpq.h"

namespace baton::store {

// The rows of one result, read as text (libpq's text format).
class PgRows {
 public:
  explicit PgRows(PGresult* res) : res_(res, PQclear) {}
  int size() const { return PQntuples(res_.get()); }
  std::string Text(int row, int col) const { return PQgetvalue(res_.get(), row, col); }
  // An integer column's value; an error (never an exception) when the text is not one.
  Result<int64_t> Int(int row, int col) const;
  bool Null(int row, int col) const { return PQgetisnull(res_.get(), row, col) != 0; }
  // Rows a command changed (UPDATE, INSERT, DELETE).
  int64_t Affected() const;

 private:
  std::unique_ptr<PGresult, decltype(PQclear)> res_;
};

class PgConn {
 public:
  PgConn() = default;
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;
  ~PgConn();

  // Connects, waiting at most `timeout_s` (libpq's connect_timeout) unless the URL says, as
  // `application_name` (what pg_stat_activity shows).
  Status Connect(const std::string& url, int timeout_s = 10,
                 const std::string& application_name = "baton");
  Status Exec(const std::string& sql);
  Result<PgRows> Query(const std::string& sql, const std::vector<std::string>& params);
  Status Prepare(const char* name, const char* sql);
  PGconn* get() { return conn_; }

 private:
  PGconn* conn_ = nullptr;
};

// A result's error as a Status: an exception raised as SQLSTATE BT001 (a fenced-out leader) is
// Conflict, a lost connection Unavailable, anything else Internal.
Status PgError(PGconn* conn, const PGresult* res, const std::string& what);

// Statements sent back to back and answered together: Send each, then Finish, which waits for
// every answer and returns the first error (once one fails, PostgreSQL skips the rest up to the
// end of the pipeline, so a transaction in it is rolled back whole).
class PgPipeline {
 public:
  explicit PgPipeline(PgConn& pg);
  ~PgPipeline();
  void Send(const char* sql);
  void SendPrepared(const char* name, const std::vector<std::string>& params);
  Status Finish();

 private:
  PgConn& pg_;
  int sent_ = 0;
  Status error_;
  bool finished_ = false;
};

// A PostgreSQL array literal of text values ({"a","b\"c"}), for unnest($1::text[]).
std::string PgTextArray(const std::vector<std::string>& values);

}  // namespace baton::store
