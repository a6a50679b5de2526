#include "store/postgres_store.h"

#include <set>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "codec/json_codec.h"
#include "store/postgres_util.h"

namespace baton::store {
namespace {

// Each entry migrates the schema from version i to i+1; baton_schema records where a database
// stands. Append only; the same tables as SQLite's (sqlite_store.cc), in PostgreSQL's types.
constexpr const char* kMigrations[] = {
    R"sql(
      CREATE TABLE jobs (id BIGINT PRIMARY KEY, state TEXT NOT NULL, record TEXT NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
      CREATE TABLE idempotency ("user" TEXT NOT NULL, key TEXT NOT NULL,
                                first_job BIGINT NOT NULL, count INTEGER NOT NULL,
                                PRIMARY KEY ("user", key));
      CREATE TABLE drains (node TEXT NOT NULL, gpu INTEGER NOT NULL, reason TEXT NOT NULL,
                           PRIMARY KEY (node, gpu));
      CREATE TABLE tokens (id BIGINT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, "user" TEXT NOT NULL,
                           role TEXT NOT NULL, name TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
                           revoked BOOLEAN NOT NULL);
    )sql",
    // The leader's lease (PostgresLease) and the fence each leader's commit passes.
    R"sql(
      CREATE TABLE leader (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL,
                           url TEXT NOT NULL, epoch BIGINT NOT NULL,
                           expires_at TIMESTAMPTZ NOT NULL);
      INSERT INTO leader VALUES (1, '', '', 0, '-infinity');
      CREATE FUNCTION baton_fence(e BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1 FROM leader WHERE id = 1 AND epoch = e FOR SHARE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'epoch % no longer leads: another controller took over', e
            USING ERRCODE = 'BT001';
        END IF;
      END $$;
    )sql",
    // Cluster events, the newest kKeptEvents (their JSON, as GET /v1/events gives them).
    R"sql(
      CREATE TABLE events (seq BIGINT PRIMARY KEY, record TEXT NOT NULL);
    )sql",
    // A job's record keeps `preemptible` only where it was chosen (JobSpec::preemptible); until
    // then every record said false where nothing was, which now means "chosen not to be".
    R"sql(
      UPDATE jobs SET record = (record::jsonb - 'preemptible')::text
        WHERE record::jsonb -> 'preemptible' = 'false'::jsonb;
    )sql",
    // Autoscaled nodes' stretches of use, charged at their templates' prices (end_ms -1: open).
    R"sql(
      CREATE TABLE node_charges (id BIGINT PRIMARY KEY, node TEXT NOT NULL,
                                 template TEXT NOT NULL, use TEXT NOT NULL,
                                 project TEXT NOT NULL, "user" TEXT NOT NULL,
                                 spot BOOLEAN NOT NULL, price_micros BIGINT NOT NULL,
                                 on_demand_micros BIGINT NOT NULL, start_ms BIGINT NOT NULL,
                                 end_ms BIGINT NOT NULL);
    )sql",
};

// Jobs and idempotency keys, the bulk of a batch, go as arrays: one statement for all of them.
constexpr const char* kPutJobs =
    "INSERT INTO jobs (id, state, record) "
    "SELECT * FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[]) "
    "ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, record = EXCLUDED.record";
constexpr const char* kPutMeta =
    "INSERT INTO meta (key, value) VALUES ($1, $2) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
constexpr const char* kPutKeys =
    "INSERT INTO idempotency (\"user\", key, first_job, count) "
    "SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::INTEGER[]) "
    "ON CONFLICT (\"user\", key) DO UPDATE SET first_job = EXCLUDED.first_job, "
    "count = EXCLUDED.count";
constexpr const char* kPutDrain =
    "INSERT INTO drains (node, gpu, reason) VALUES ($1, $2, $3) "
    "ON CONFLICT (node, gpu) DO UPDATE SET reason = EXCLUDED.reason";
constexpr const char* kDelDrain = "DELETE FROM drains WHERE node = $1 AND gpu = $2";
constexpr const char* kPutToken =
    "INSERT INTO tokens (id, hash, \"user\", role, name, created_at_ms, revoked) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, "
    "\"user\" = EXCLUDED.\"user\", role = EXCLUDED.role, name = EXCLUDED.name, "
    "created_at_ms = EXCLUDED.created_at_ms, revoked = EXCLUDED.revoked";

constexpr const char* kPutEvents =
    "INSERT INTO events (seq, record) SELECT * FROM unnest($1::BIGINT[], $2::TEXT[]) "
    "ON CONFLICT (seq) DO UPDATE SET record = EXCLUDED.record";
constexpr const char* kTrimEvents =
    "DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - $1";

constexpr const char* kPutCharge =
    "INSERT INTO node_charges (id, node, template, use, project, \"user\", spot, price_micros, "
    "on_demand_micros, start_ms, end_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
    "ON CONFLICT (id) DO UPDATE SET node = EXCLUDED.node, template = EXCLUDED.template, "
    "use = EXCLUDED.use, project = EXCLUDED.project, \"user\" = EXCLUDED.\"user\", "
    "spot = EXCLUDED.spot, price_micros = EXCLUDED.price_micros, "
    "on_demand_micros = EXCLUDED.on_demand_micros, start_ms = EXCLUDED.start_ms, "
    "end_ms = EXCLUDED.end_ms";

struct Prepared {
  const char* name;
  const char* sql;
};
constexpr Prepared kStatements[] = {
    {"put_jobs", kPutJobs},
    {"put_meta", kPutMeta},
    {"put_keys", kPutKeys},
    {"put_drain", kPutDrain},
    {"del_drain", kDelDrain},
    {"put_token", kPutToken},
    {"put_events", kPutEvents},
    {"trim_events", kTrimEvents},
    {"fence", "SELECT baton_fence($1)"},
    {"put_charge", kPutCharge},
    {"del_charge", "DELETE FROM node_charges WHERE id = $1"},
};

Status Migrate(PgConn& pg) {
  RETURN_IF_ERROR(pg.Exec("BEGIN"));
  // One controller migrates at a time; the others wait here, then find nothing left to do.
  Status st = pg.Exec("SELECT pg_advisory_xact_lock(7061746)");  // any fixed number of ours
  if (st.ok()) st = pg.Exec("CREATE TABLE IF NOT EXISTS baton_schema (version INTEGER NOT NULL)");
  int version = 0;
  if (st.ok()) {
    auto rows = pg.Query("SELECT version FROM baton_schema", {});
    if (!rows) {
      st = rows.error();
    } else if (rows->size() == 0) {
      st = pg.Exec("INSERT INTO baton_schema VALUES (0)");
    } else {
      version = std::stoi(rows->Text(0, 0));
    }
  }
  constexpr int kLatest = static_cast<int>(std::size(kMigrations));
  if (st.ok() && version > kLatest) {
    st = Conflict("the database has schema version " + std::to_string(version) +
                  ", newer than this baton understands (" + std::to_string(kLatest) + ")");
  }
  for (int i = version; st.ok() && i < kLatest; ++i) {
    st = pg.Exec(kMigrations[i]);
    if (st.ok()) st = pg.Exec("UPDATE baton_schema SET version = " + std::to_string(i + 1));
  }
  if (!st.ok()) {
    (void)pg.Exec("ROLLBACK");
    return st;
  }
  return pg.Exec("COMMIT");
}

// put_jobs' three arrays: ids, states, records; a job twice in a batch goes once, as last seen
// (one INSERT may not change a row twice).
std::vector<std::string> JobArrays(const std::vector<Job>& jobs) {
  std::vector<std::string> ids, states, records;
  std::unordered_set<int64_t> seen;
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if (!seen.insert(it->id.value).second) continue;
    ids.push_back(std::to_string(it->id.value));
    states.emplace_back(JobStateName(it->state));
    records.push_back(codec::EncodeJob(*it, codec::JobForm::kRecord));
  }
  return {PgTextArray(ids), PgTextArray(states), PgTextArray(records)};
}

std::vector<std::string> KeyArrays(const std::vector<IdempotencyEntry>& entries) {
  std::vector<std::string> users, keys, firsts, counts;
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (!seen.emplace(it->user, it->key).second) continue;
    users.push_back(it->user);
    keys.push_back(it->key);
    firsts.push_back(std::to_string(it->first.value));
    counts.push_back(std::to_string(it->count));
  }
  return {PgTextArray(users), PgTextArray(keys), PgTextArray(firsts), PgTextArray(counts)};
}

}  // namespace

struct PostgresStore::Impl {
  PgConn pg;
  std::string label;  // the redacted URL
};

PostgresStore::PostgresStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PostgresStore::~PostgresStore() = default;

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const std::string& url) {
  auto impl = std::make_unique<Impl>();
  impl->label = RedactPostgresUrl(url);
  auto labelled = [&](const Status& st) {
    return Status(st.code(), "store " + impl->label + ": " + st.message());
  };
  if (Status st = impl->pg.Connect(url); !st.ok()) return Err(labelled(st));
  if (Status st = Migrate(impl->pg); !st.ok()) return Err(labelled(st));
  for (const Prepared& p : kStatements) {
    if (Status st = impl->pg.Prepare(p.name, p.sql); !st.ok()) return Err(labelled(st));
  }
  return std::unique_ptr<PostgresStore>(new PostgresStore(std::move(impl)));
}

Result<Snapshot> PostgresStore::Load() {
  Snapshot snap;
  PgConn& pg = impl_->pg;
  // One snapshot of every table, as a single transaction sees them.
  RETURN_IF_ERROR(pg.Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  auto read = [&]() -> Status {
    ASSIGN_OR_RETURN(PgRows jobs, pg.Query("SELECT id, record FROM jobs ORDER BY id", {}));
    for (int r = 0; r < jobs.size(); ++r) {
      ASSIGN_OR_RETURN(int64_t id, jobs.Int(r, 0));
      auto job = codec::DecodeJob(jobs.Text(r, 1));
      if (!job) {
        return Internal("store " + impl_->label + ": job " + std::to_string(id) +
                        " cannot be read: " + job.error().message());
      }
      snap.jobs.push_back(std::move(*job));
      snap.next_job_id = std::max(snap.next_job_id, id + 1);
    }
    ASSIGN_OR_RETURN(PgRows meta, pg.Query("SELECT value FROM meta WHERE key = 'next_job_id'", {}));
    if (meta.size() > 0) {
      ASSIGN_OR_RETURN(int64_t next, meta.Int(0, 0));
      snap.next_job_id = std::max(snap.next_job_id, next);
    }
    ASSIGN_OR_RETURN(
        PgRows ident,
        pg.Query("SELECT key, value FROM meta WHERE key IN ('store_id', 'commits')", {}));
    identity_ = Identity{};
    for (int r = 0; r < ident.size(); ++r) {
      ASSIGN_OR_RETURN(int64_t value, ident.Int(r, 1));
      (ident.Text(r, 0) == "store_id" ? identity_.id : identity_.commits) = value;
    }
    ASSIGN_OR_RETURN(PgRows keys,
                     pg.Query("SELECT \"user\", key, first_job, count FROM idempotency", {}));
    for (int r = 0; r < keys.size(); ++r) {
      ASSIGN_OR_RETURN(int64_t first, keys.Int(r, 2));
      ASSIGN_OR_RETURN(int64_t count, keys.Int(r, 3));
      snap.idempotency.push_back(IdempotencyEntry{.user = keys.Text(r, 0),
                                                  .key = keys.Text(r, 1),
                                                  .first = JobId{first},
                                                  .count = static_cast<int>(count)});
    }
    ASSIGN_OR_RETURN(PgRows drains,
                     pg.Query("SELECT node, gpu, reason FROM drains ORDER BY node, gpu", {}));
    for (int r = 0; r < drains.size(); ++r) {
      ASSIGN_OR_RETURN(int64_t gpu, drains.Int(r, 1));
      snap.drains.push_back(Drain{
          .node = drains.Text(r, 0), .gpu = static_cast<int>(gpu), .reason = drains.Text(r, 2)});
    }
    ASSIGN_OR_RETURN(PgRows tokens, pg.Query("SELECT id, hash, \"user\", role, name, "
                                             "created_at_ms, revoked FROM tokens ORDER BY id",
                                             {}));
    for (int r = 0; r < tokens.size(); ++r) {
      ASSIGN_OR_RETURN(int64_t id, tokens.Int(r, 0));
      ASSIGN_OR_RETURN(int64_t created_ms, tokens.Int(r, 5));
      Token t{.id = id, .hash = tokens.Text(r, 1), .user = tokens.Text(r, 2)};
      auto role = ParseRole(tokens.Text(r, 3));
      if (!role) {
        return Internal("tokens: token " + std::to_string(t.id) + " has an unknown role \"" +
                        tokens.Text(r, 3) + "\"");
      }
      t.role = *role;
      t.name = tokens.Text(r, 4);
      t.created_at = FromMillis(created_ms);
      t.revoked = tokens.Text(r, 6) == "t";
      snap.tokens.push_back(std::move(t));
    }
    static_assert(kKeptEvents == 10000, "the LIMIT below");
    ASSIGN_OR_RETURN(PgRows events,
                     pg.Query("SELECT seq, record FROM (SELECT seq, record FROM events "
                              "ORDER BY seq DESC LIMIT 10000) e ORDER BY seq",
                              {}));
    for (int r = 0; r < events.size(); ++r) {
      auto event = codec::DecodeEvent(events.Text(r, 1));
      if (!event) {
        return Internal("store " + impl_->label + ": event " + events.Text(r, 0) +
                        " cannot be read: " + event.error().message());
      }
      snap.events.push_back(std::move(*event));
    }
    ASSIGN_OR_RETURN(PgRows charges,
                     pg.Query("SELECT id, node, template, use, project, \"user\", spot, "
                              "price_micros, on_demand_micros, start_ms, end_ms FROM "
                              "node_charges ORDER BY id",
                              {}));
    for (int r = 0; r < charges.size(); ++r) {
      ASSIGN_OR_RETURN(int64_t id, charges.Int(r, 0));
      ASSIGN_OR_RETURN(int64_t price, charges.Int(r, 7));
      ASSIGN_OR_RETURN(int64_t on_demand, charges.Int(r, 8));
      ASSIGN_OR_RETURN(int64_t start, charges.Int(r, 9));
      ASSIGN_OR_RETURN(int64_t end, charges.Int(r, 10));
      NodeCharge c{.id = id,
                   .node = charges.Text(r, 1),
                   .template_name = charges.Text(r, 2),
                   .use = charges.Text(r, 3),
                   .project = charges.Text(r, 4),
                   .user = charges.Text(r, 5),
                   .spot = charges.Text(r, 6) == "t",
                   .price_micros = price,
                   .on_demand_micros = on_demand,
                   .start = FromMillis(start)};
      if (end >= 0) c.end = FromMillis(end);
      snap.node_charges.push_back(std::move(c));
    }
    return Status::Ok();
  };
  Status st = read();
  // The end of the read-only transaction: a failed COMMIT leaves the connection unusable for
  // what follows, so it fails the load too (after a failed read, the read's error is the one).
  Status ended = pg.Exec(st.ok() ? "COMMIT" : "ROLLBACK");
  if (!st.ok()) return Err(st);
  if (!ended.ok())
    return Err(Status(ended.code(), "store " + impl_->label + ": " + ended.message()));
  return snap;
}

Status PostgresStore::Commit(const Batch& batch) {
  if (batch.empty()) return Status::Ok();
  PgPipeline p(impl_->pg);
  p.Send("BEGIN");
  if (epoch_ != 0) p.SendPrepared("fence", {std::to_string(epoch_)});
  if (!batch.jobs.empty()) p.SendPrepared("put_jobs", JobArrays(batch.jobs));
  if (batch.next_job_id) {
    p.SendPrepared("put_meta", {"next_job_id", std::to_string(*batch.next_job_id)});
  }
  if (!batch.idempotency.empty()) p.SendPrepared("put_keys", KeyArrays(batch.idempotency));
  for (const Drain& d : batch.drains) {
    if (d.active) {
      p.SendPrepared("put_drain", {d.node, std::to_string(d.gpu), d.reason});
    } else {
      p.SendPrepared("del_drain", {d.node, std::to_string(d.gpu)});
    }
  }
  for (const Token& t : batch.tokens) {
    p.SendPrepared("put_token",
                   {std::to_string(t.id), t.hash, t.user, std::string(RoleName(t.role)), t.name,
                    std::to_string(ToMillis(t.created_at)), t.revoked ? "true" : "false"});
  }
  if (!batch.events.empty()) {
    std::vector<std::string> seqs, records;
    for (const ClusterEvent& e : batch.events) {
      seqs.push_back(std::to_string(e.seq));
      records.push_back(codec::EncodeEvent(e));
    }
    p.SendPrepared("put_events", {PgTextArray(seqs), PgTextArray(records)});
    p.SendPrepared("trim_events", {std::to_string(kKeptEvents)});
  }
  for (const NodeCharge& c : batch.node_charges) {
    p.SendPrepared("put_charge",
                   {std::to_string(c.id), c.node, c.template_name, c.use, c.project, c.user,
                    c.spot ? "true" : "false", std::to_string(c.price_micros),
                    std::to_string(c.on_demand_micros), std::to_string(ToMillis(c.start)),
                    std::to_string(c.end ? ToMillis(*c.end) : -1)});
  }
  for (int64_t id : batch.node_charges_removed) p.SendPrepared("del_charge", {std::to_string(id)});
  p.SendPrepared("put_meta", {"commits", std::to_string(identity_.commits + 1)});
  p.Send("COMMIT");
  Status st = p.Finish();
  if (!st.ok()) return Status(st.code(), "store " + impl_->label + ": " + st.message());
  ++identity_.commits;
  return Status::Ok();
}

Status PostgresStore::SetIdentity(int64_t id) {
  PgPipeline p(impl_->pg);
  p.Send("BEGIN");
  if (epoch_ != 0) p.SendPrepared("fence", {std::to_string(epoch_)});
  p.SendPrepared("put_meta", {"store_id", std::to_string(id)});
  p.Send("COMMIT");
  Status st = p.Finish();
  if (!st.ok()) return Status(st.code(), "store " + impl_->label + ": " + st.message());
  identity_.id = id;
  return Status::Ok();
}

bool IsPostgresUrl(const std::string& url) {
  return url.starts_with("postgres://") || url.starts_with("postgresql://");
}

std::string RedactPostgresUrl(const std::string& url) {
  if (!IsPostgresUrl(url)) {
    // libpq's key=value form: hide the value of password=.
    size_t at = url.find("password=");
    if (at == std::string::npos) return url;
    size_t end = url.find(' ', at);
    return url.substr(0, at) + "password=***" + (end == std::string::npos ? "" : url.substr(end));
  }
  // scheme://user:password@host...: the password is between the first ':' after the scheme
  // and the last '@' of the authority.
  size_t start = url.find("://") + 3;
  size_t slash = url.find('/', start);
  std::string_view authority(url.data() + start,
                             (slash == std::string::npos ? url.size() : slash) - start);
  size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return url;
  size_t colon = authority.substr(0, at).find(':');
  if (colon == std::string_view::npos) return url;
  return url.substr(0, start + colon + 1) + "***" + url.substr(start + at);
}

}  // namespace baton::store
