#include "store/sqlite_store.h"

#include <sqlite3.h>

#include <limits>
#include <variant>

#include "codec/json_codec.h"

namespace baton::store {
namespace {

// Each entry migrates the schema from version i to i+1; PRAGMA user_version records where a
// database stands. Append only.
constexpr const char* kMigrations[] = {
    R"sql(
      CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, record TEXT NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE idempotency (user TEXT NOT NULL, key TEXT NOT NULL, first_job INTEGER NOT NULL,
                                count INTEGER NOT NULL, PRIMARY KEY (user, key));
    )sql",
    R"sql(
      CREATE TABLE drains (node TEXT NOT NULL, gpu INTEGER NOT NULL, reason TEXT NOT NULL,
                           PRIMARY KEY (node, gpu));
    )sql",
    R"sql(
      CREATE TABLE tokens (id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, user TEXT NOT NULL,
                           role TEXT NOT NULL, name TEXT NOT NULL, created_at_ms INTEGER NOT NULL,
                           revoked INTEGER NOT NULL);
    )sql",
    // Cluster events, the newest kKeptEvents (their JSON, as GET /v1/events gives them).
    R"sql(
      CREATE TABLE events (seq INTEGER PRIMARY KEY, record TEXT NOT NULL);
    )sql",
    // A job's record keeps `preemptible` only where it was chosen (JobSpec::preemptible); until
    // then every record said false where nothing was, which now means "chosen not to be".
    R"sql(
      UPDATE jobs SET record = json_remove(record, '$.preemptible')
        WHERE json_extract(record, '$.preemptible') = 0;
    )sql",
    // Autoscaled nodes' stretches of use, charged at their templates' prices (end_ms -1: open).
    R"sql(
      CREATE TABLE node_charges (id INTEGER PRIMARY KEY, node TEXT NOT NULL,
                                 template TEXT NOT NULL, use TEXT NOT NULL,
                                 project TEXT NOT NULL, user TEXT NOT NULL,
                                 spot INTEGER NOT NULL, price_micros INTEGER NOT NULL,
                                 on_demand_micros INTEGER NOT NULL, start_ms INTEGER NOT NULL,
                                 end_ms INTEGER NOT NULL);
    )sql",
};

Status SqlError(sqlite3* db, const std::string& what) {
  return Unavailable("sqlite: " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

class Statement {
 public:
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }
  Status Prepare(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
      return SqlError(db, std::string("prepare ") + sql);
    }
    return Status::Ok();
  }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

struct SqliteStore::Impl {
  sqlite3* db = nullptr;
  std::string path;
  Identity identity;  // meta's store_id and commits
  Statement put_job, put_meta, put_key, put_drain, del_drain, put_token, put_event, trim_events,
      put_charge, del_charge, begin, commit, rollback;

  ~Impl() {
    // Statements finalize in their destructors, which run after this body: close_v2 defers.
    sqlite3_close_v2(db);
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return Unavailable("sqlite: " + msg);
    }
    return Status::Ok();
  }

  // Binds `values` to the statement's parameters (1, 2, ...), runs it and resets it. A value
  // that cannot be bound (too long, out of memory) fails it, naming `what`: nothing half-bound
  // is ever run.
  using Value = std::variant<int64_t, std::string_view>;
  Status Step(sqlite3_stmt* s, const char* what, std::initializer_list<Value> values = {}) {
    int param = 0, rc = SQLITE_OK;
    for (const Value& v : values) {
      ++param;
      if (const int64_t* n = std::get_if<int64_t>(&v)) {
        rc = sqlite3_bind_int64(s, param, *n);
      } else {
        std::string_view text = std::get<std::string_view>(v);
        rc = text.size() > static_cast<size_t>(std::numeric_limits<int>::max())
                 ? SQLITE_TOOBIG
                 : sqlite3_bind_text(s, param, text.data(), static_cast<int>(text.size()),
                                     SQLITE_STATIC);
      }
      if (rc != SQLITE_OK) break;
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);  // no pointer into the caller's strings is kept
    if (rc == SQLITE_DONE) return Status::Ok();
    return Unavailable(
        "sqlite: " + std::string(what) + ": " +
        (rc == SQLITE_OK || rc == SQLITE_ROW ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
};

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteStore::~SqliteStore() = default;

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  auto store = OpenUnlabelled(path);
  if (!store && store.error().message().find(path) == std::string::npos) {
    return Err(Status(store.error().code(), "store " + path + ": " + store.error().message()));
  }
  return store;
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::OpenUnlabelled(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (sqlite3_open_v2(path.c_str(), &impl->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    return Err(SqlError(impl->db, "open " + path));
  }
  RETURN_IF_ERROR(impl->Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(impl->Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(impl->Exec("PRAGMA busy_timeout=5000"));
  // Checkpoints happen on commit past this many WAL pages; default 1000 is fine.

  sqlite3_stmt* v = nullptr;
  sqlite3_prepare_v2(impl->db, "PRAGMA user_version", -1, &v, nullptr);
  int version = 0;
  if (v != nullptr && sqlite3_step(v) == SQLITE_ROW) version = sqlite3_column_int(v, 0);
  sqlite3_finalize(v);
  constexpr int kLatest = static_cast<int>(std::size(kMigrations));
  if (version > kLatest) {
    return Err(Conflict("store " + path + " has schema version " + std::to_string(version) +
                        ", newer than this baton understands (" + std::to_string(kLatest) + ")"));
  }
  for (int i = version; i < kLatest; ++i) {
    RETURN_IF_ERROR(impl->Exec("BEGIN IMMEDIATE"));
    Status st = impl->Exec(kMigrations[i]);
    if (st.ok()) st = impl->Exec(("PRAGMA user_version=" + std::to_string(i + 1)).c_str());
    if (!st.ok()) {
      (void)impl->Exec("ROLLBACK");
      return Err(st);
    }
    RETURN_IF_ERROR(impl->Exec("COMMIT"));
  }

  RETURN_IF_ERROR(impl->put_job.Prepare(
      impl->db, "INSERT OR REPLACE INTO jobs (id, state, record) VALUES (?, ?, ?)"));
  RETURN_IF_ERROR(
      impl->put_meta.Prepare(impl->db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"));
  RETURN_IF_ERROR(impl->put_key.Prepare(
      impl->db,
      "INSERT OR REPLACE INTO idempotency (user, key, first_job, count) VALUES (?, ?, ?, ?)"));
  RETURN_IF_ERROR(impl->put_drain.Prepare(
      impl->db, "INSERT OR REPLACE INTO drains (node, gpu, reason) VALUES (?, ?, ?)"));
  RETURN_IF_ERROR(
      impl->del_drain.Prepare(impl->db, "DELETE FROM drains WHERE node = ? AND gpu = ?"));
  RETURN_IF_ERROR(
      impl->put_token.Prepare(impl->db,
                              "INSERT OR REPLACE INTO tokens (id, hash, user, role, name, "
                              "created_at_ms, revoked) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  RETURN_IF_ERROR(impl->put_event.Prepare(
      impl->db, "INSERT OR REPLACE INTO events (seq, record) VALUES (?, ?)"));
  RETURN_IF_ERROR(impl->trim_events.Prepare(
      impl->db, "DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - ?"));
  RETURN_IF_ERROR(impl->put_charge.Prepare(
      impl->db,
      "INSERT OR REPLACE INTO node_charges (id, node, template, use, project, user, spot, "
      "price_micros, on_demand_micros, start_ms, end_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "?)"));
  RETURN_IF_ERROR(impl->del_charge.Prepare(impl->db, "DELETE FROM node_charges WHERE id = ?"));
  RETURN_IF_ERROR(impl->begin.Prepare(impl->db, "BEGIN IMMEDIATE"));
  RETURN_IF_ERROR(impl->commit.Prepare(impl->db, "COMMIT"));
  RETURN_IF_ERROR(impl->rollback.Prepare(impl->db, "ROLLBACK"));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(impl)));
}

Result<Snapshot> SqliteStore::Load() {
  auto snap = LoadUnlabelled();
  if (!snap && snap.error().message().find(impl_->path) == std::string::npos) {
    return Err(Status(snap.error().code(), "store " + impl_->path + ": " + snap.error().message()));
  }
  return snap;
}

Result<Snapshot> SqliteStore::LoadUnlabelled() {
  Snapshot snap;
  sqlite3* db = impl_->db;
  {
    Statement s;
    RETURN_IF_ERROR(s.Prepare(db, "SELECT id, record FROM jobs ORDER BY id"));
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(s.get(), 0);
      const char* text = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
      int len = sqlite3_column_bytes(s.get(), 1);
      auto job = codec::DecodeJob(std::string_view(text ? text : "", static_cast<size_t>(len)));
      if (!job) {
        return Err(Internal("store " + impl_->path + ": job " + std::to_string(id) +
                            " cannot be read: " + job.error().message()));
      }
      snap.jobs.push_back(std::move(*job));
      snap.next_job_id = std::max(snap.next_job_id, id + 1);
    }
    if (rc != SQLITE_DONE) return Err(SqlError(db, "load jobs"));
  }
  {
    Statement s;
    RETURN_IF_ERROR(s.Prepare(db, "SELECT value FROM meta WHERE key = 'next_job_id'"));
    if (sqlite3_step(s.get()) == SQLITE_ROW) {
      snap.next_job_id = std::max<int64_t>(snap.next_job_id, sqlite3_column_int64(s.get(), 0));
    }
  }
  {
    Statement s;
    RETURN_IF_ERROR(
        s.Prepare(db, "SELECT key, value FROM meta WHERE key IN ('store_id', 'commits')"));
    impl_->identity = Identity{};
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      std::string_view key = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      int64_t value = sqlite3_column_int64(s.get(), 1);
      (key == "store_id" ? impl_->identity.id : impl_->identity.commits) = value;
    }
  }
  {
    Statement s;
    RETURN_IF_ERROR(s.Prepare(db, "SELECT user, key, first_job, count FROM idempotency"));
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      IdempotencyEntry e;
      e.user = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      e.key = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
      e.first = JobId{sqlite3_column_int64(s.get(), 2)};
      e.count = sqlite3_column_int(s.get(), 3);
      snap.idempotency.push_back(std::move(e));
    }
  }
  {
    Statement s;
    RETURN_IF_ERROR(s.Prepare(db, "SELECT node, gpu, reason FROM drains ORDER BY node, gpu"));
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      Drain d;
      d.node = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      d.gpu = sqlite3_column_int(s.get(), 1);
      d.reason = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 2));
      snap.drains.push_back(std::move(d));
    }
  }
  {
    Statement s;
    RETURN_IF_ERROR(s.Prepare(
        db, "SELECT id, hash, user, role, name, created_at_ms, revoked FROM tokens ORDER BY id"));
    auto text = [&](int col) {
      const char* t = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), col));
      return std::string(t != nullptr ? t : "");
    };
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      Token t;
      t.id = sqlite3_column_int64(s.get(), 0);
      t.hash = text(1);
      t.user = text(2);
      auto role = ParseRole(text(3));
      if (!role) {
        return Err(Internal("tokens: token " + std::to_string(t.id) + " has an unknown role \"" +
                            text(3) + "\""));
      }
      t.role = *role;
      t.name = text(4);
      t.created_at = FromMillis(sqlite3_column_int64(s.get(), 5));
      t.revoked = sqlite3_column_int(s.get(), 6) != 0;
      snap.tokens.push_back(std::move(t));
    }
  }
  {
    Statement s;
    static_assert(kKeptEvents == 10000, "the LIMIT below");
    RETURN_IF_ERROR(s.Prepare(db,
                              "SELECT seq, record FROM (SELECT seq, record FROM events ORDER "
                              "BY seq DESC LIMIT 10000) ORDER BY seq"));
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      const char* text = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
      int len = sqlite3_column_bytes(s.get(), 1);
      auto event = codec::DecodeEvent(std::string_view(text ? text : "", static_cast<size_t>(len)));
      if (!event) {
        return Err(Internal("store " + impl_->path + ": event " +
                            std::to_string(sqlite3_column_int64(s.get(), 0)) +
                            " cannot be read: " + event.error().message()));
      }
      snap.events.push_back(std::move(*event));
    }
  }
  {
    Statement s;
    RETURN_IF_ERROR(s.Prepare(db,
                              "SELECT id, node, template, use, project, user, spot, price_micros, "
                              "on_demand_micros, start_ms, end_ms FROM node_charges ORDER BY id"));
    auto text = [&](int col) {
      const char* t = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), col));
      return std::string(t != nullptr ? t : "");
    };
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      NodeCharge c{.id = sqlite3_column_int64(s.get(), 0),
                   .node = text(1),
                   .template_name = text(2),
                   .use = text(3),
                   .project = text(4),
                   .user = text(5),
                   .spot = sqlite3_column_int(s.get(), 6) != 0,
                   .price_micros = sqlite3_column_int64(s.get(), 7),
                   .on_demand_micros = sqlite3_column_int64(s.get(), 8),
                   .start = FromMillis(sqlite3_column_int64(s.get(), 9))};
      if (int64_t end = sqlite3_column_int64(s.get(), 10); end >= 0) c.end = FromMillis(end);
      snap.node_charges.push_back(std::move(c));
    }
  }
  return snap;
}

Status SqliteStore::Commit(const Batch& batch) {
  if (batch.empty()) return Status::Ok();
  Impl& im = *impl_;
  RETURN_IF_ERROR(im.Step(im.begin.get(), "begin"));
  auto fail = [&](Status st) {
    im.Step(im.rollback.get(), "rollback").ok();
    return st;
  };
  for (const Job& job : batch.jobs) {
    std::string record = codec::EncodeJob(job, codec::JobForm::kRecord);
    Status st =
        im.Step(im.put_job.get(), "write job", {job.id.value, JobStateName(job.state), record});
    if (!st.ok()) return fail(st);
  }
  if (batch.next_job_id) {
    Status st =
        im.Step(im.put_meta.get(), "write next_job_id", {"next_job_id", *batch.next_job_id});
    if (!st.ok()) return fail(st);
  }
  for (const IdempotencyEntry& e : batch.idempotency) {
    Status st = im.Step(im.put_key.get(), "write idempotency key",
                        {e.user, e.key, e.first.value, int64_t{e.count}});
    if (!st.ok()) return fail(st);
  }
  for (const Drain& d : batch.drains) {
    Status st = d.active
                    ? im.Step(im.put_drain.get(), "write drain", {d.node, int64_t{d.gpu}, d.reason})
                    : im.Step(im.del_drain.get(), "write drain", {d.node, int64_t{d.gpu}});
    if (!st.ok()) return fail(st);
  }
  for (const Token& t : batch.tokens) {
    Status st = im.Step(im.put_token.get(), "write token",
                        {t.id, t.hash, t.user, RoleName(t.role), t.name, ToMillis(t.created_at),
                         int64_t{t.revoked ? 1 : 0}});
    if (!st.ok()) return fail(st);
  }
  for (const ClusterEvent& e : batch.events) {
    std::string record = codec::EncodeEvent(e);
    Status st = im.Step(im.put_event.get(), "write event", {e.seq, record});
    if (!st.ok()) return fail(st);
  }
  if (!batch.events.empty()) {
    Status st = im.Step(im.trim_events.get(), "trim events", {static_cast<int64_t>(kKeptEvents)});
    if (!st.ok()) return fail(st);
  }
  for (const NodeCharge& c : batch.node_charges) {
    Status st = im.Step(im.put_charge.get(), "write node charge",
                        {c.id, c.node, c.template_name, c.use, c.project, c.user,
                         int64_t{c.spot ? 1 : 0}, c.price_micros, c.on_demand_micros,
                         ToMillis(c.start), c.end ? ToMillis(*c.end) : int64_t{-1}});
    if (!st.ok()) return fail(st);
  }
  for (int64_t id : batch.node_charges_removed) {
    Status st = im.Step(im.del_charge.get(), "delete node charge", {id});
    if (!st.ok()) return fail(st);
  }
  {
    Status st = im.Step(im.put_meta.get(), "write commits", {"commits", im.identity.commits + 1});
    if (!st.ok()) return fail(st);
  }
  Status st = im.Step(im.commit.get(), "commit");
  if (!st.ok()) return fail(st);
  ++im.identity.commits;
  return Status::Ok();
}

Identity SqliteStore::identity() const { return impl_->identity; }

Status SqliteStore::SetIdentity(int64_t id) {
  Impl& im = *impl_;
  RETURN_IF_ERROR(im.Step(im.begin.get(), "begin"));
  Status st = im.Step(im.put_meta.get(), "write store_id", {"store_id", id});
  if (st.ok()) st = im.Step(im.commit.get(), "commit");
  if (!st.ok()) {
    im.Step(im.rollback.get(), "rollback").ok();
    return Status(st.code(), "store " + im.path + ": " + st.message());
  }
  im.identity.id = id;
  return Status::Ok();
}

}  // namespace baton::store
