#include "store/postgres_util.h"

#include <charconv>
#include <cstdlib>

namespace baton::store {

Result<int64_t> PgRows::Int(int row, int col) const {
  std::string text = Text(row, col);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Err(Internal("row " + std::to_string(row) + " column " + std::to_string(col) +
                        " is not an integer: \"" + text.substr(0, 64) + "\""));
  }
  return n;
}

int64_t PgRows::Affected() const {
  const char* n = PQcmdTuples(res_.get());
  return n != nullptr && *n != '\0' ? std::strtoll(n, nullptr, 10) : 0;
}

PgConn::~PgConn() {
  if (conn_ != nullptr) PQfinish(conn_);
}

Status PgError(PGconn* conn, const PGresult* res, const std::string& what) {
  std::string message = res != nullptr ? PQresultErrorMessage(res) : "";
  if (message.empty()) message = PQerrorMessage(conn);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string text = what + ": " + message;
  if (state != nullptr && std::string_view(state) == "BT001") return Conflict(text);
  if (PQstatus(conn) != CONNECTION_OK || state == nullptr) return Unavailable(text);
  return Internal(text);
}

Status PgConn::Connect(const std::string& url, int timeout_s, const std::string& application_name) {
  // With expand_dbname, the URL's settings win over the keywords before it and lose to those
  // after it: connect_timeout is a default the URL may change; application_name is ours.
  RETURN_IF_ERROR(LoadLibpq());
  const char* keys[] = {"connect_timeout", "dbname", "application_name", nullptr};
  std::string timeout = std::to_string(timeout_s);
  const char* values[] = {timeout.c_str(), url.c_str(), application_name.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) return Unavailable("out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) return PgError(conn_, nullptr, "connect");
  return Exec("SET client_min_messages = warning");
}

Status PgConn::Exec(const std::string& sql) {
  PGresult* res = PQexec(conn_, sql.c_str());
  ExecStatusType status = PQresultStatus(res);
  Status st = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
                  ? Status::Ok()
                  : PgError(conn_, res, sql.substr(0, sql.find_first_of("\n(")));
  PQclear(res);
  return st;
}

namespace {
std::vector<const char*> Pointers(const std::vector<std::string>& params) {
  std::vector<const char*> out;
  out.reserve(params.size());
  for (const std::string& p : params) out.push_back(p.c_str());
  return out;
}
}  // namespace

Result<PgRows> PgConn::Query(const std::string& sql, const std::vector<std::string>& params) {
  if (PQstatus(conn_) == CONNECTION_BAD) PQreset(conn_);  // the server restarted, or the network
  std::vector<const char*> values = Pointers(params);
  PGresult* res = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                               values.data(), nullptr, nullptr, 0);
  PgRows rows(res);
  ExecStatusType status = PQresultStatus(res);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return Err(PgError(conn_, res, sql.substr(0, sql.find_first_of("\n("))));
  }
  return rows;
}

Status PgConn::Prepare(const char* name, const char* sql) {
  PGresult* res = PQprepare(conn_, name, sql, 0, nullptr);
  Status st = PQresultStatus(res) == PGRES_COMMAND_OK
                  ? Status::Ok()
                  : PgError(conn_, res, std::string("prepare ") + name);
  PQclear(res);
  return st;
}

PgPipeline::PgPipeline(PgConn& pg) : pg_(pg) {
  if (PQenterPipelineMode(pg_.get()) != 1) error_ = PgError(pg_.get(), nullptr, "pipeline");
}

PgPipeline::~PgPipeline() {
  if (!finished_) (void)Finish();
}

void PgPipeline::Send(const char* sql) {
  if (!error_.ok()) return;
  if (PQsendQueryParams(pg_.get(), sql, 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) {
    error_ = PgError(pg_.get(), nullptr, sql);
    return;
  }
  ++sent_;
}

void PgPipeline::SendPrepared(const char* name, const std::vector<std::string>& params) {
  if (!error_.ok()) return;
  std::vector<const char*> values = Pointers(params);
  if (PQsendQueryPrepared(pg_.get(), name, static_cast<int>(values.size()), values.data(), nullptr,
                          nullptr, 0) != 1) {
    error_ = PgError(pg_.get(), nullptr, name);
    return;
  }
  ++sent_;
}

Status PgPipeline::Finish() {
  finished_ = true;
  PGconn* conn = pg_.get();
  if (PQpipelineStatus(conn) == PQ_PIPELINE_OFF) return error_;
  if (PQpipelineSync(conn) != 1 && error_.ok()) error_ = PgError(conn, nullptr, "sync");
  // Each statement's result (then a null), and last the sync's; a broken connection ends it.
  for (int answered = 0; answered < sent_ && PQstatus(conn) == CONNECTION_OK; ++answered) {
    while (PGresult* res = PQgetResult(conn)) {
      ExecStatusType status = PQresultStatus(res);
      if (status == PGRES_FATAL_ERROR && error_.ok()) error_ = PgError(conn, res, "commit");
      PQclear(res);
    }
  }
  for (int nulls = 0; nulls < 2 && PQstatus(conn) == CONNECTION_OK;) {
    PGresult* res = PQgetResult(conn);
    if (res == nullptr) {
      ++nulls;
      continue;
    }
    bool synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
    PQclear(res);
    if (synced) break;
  }
  if (PQstatus(conn) != CONNECTION_OK && error_.ok()) {
    error_ = PgError(conn, nullptr, "commit (the outcome is unknown)");
  }
  PQexitPipelineMode(conn);
  // A failed statement leaves an explicit transaction aborted but open: end it.
  PGTransactionStatusType tx = PQtransactionStatus(conn);
  if (tx == PQTRANS_INERROR || tx == PQTRANS_INTRANS) PQclear(PQexec(conn, "ROLLBACK"));
  return error_;
}

std::string PgTextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace baton::store
