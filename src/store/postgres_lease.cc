#include "store/postgres_lease.h"

#include "store/postgres_store.h"
#include "store/postgres_util.h"

namespace baton::store {

struct PostgresLease::Impl {
  PgConn pg;
  std::string label;
};

PostgresLease::PostgresLease(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PostgresLease::~PostgresLease() = default;

namespace {
std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}
}  // namespace

std::string LeaseConnectionName(const std::string& holder) { return "baton " + holder; }

Result<std::unique_ptr<PostgresLease>> PostgresLease::Open(const std::string& url,
                                                           const std::string& holder) {
  auto impl = std::make_unique<Impl>();
  impl->label = RedactPostgresUrl(url);
  // A lease that cannot be renewed is lost; a connection must not hang longer than that.
  // Named after the holder: while it leads, its lease connection shows who is alive.
  if (Status st = impl->pg.Connect(url, 2, LeaseConnectionName(holder)); !st.ok()) {
    return Err(Status(st.code(), "lease " + impl->label + ": " + st.message()));
  }
  return std::unique_ptr<PostgresLease>(new PostgresLease(std::move(impl)));
}

Result<std::optional<int64_t>> PostgresLease::TryAcquire(const std::string& holder,
                                                         const std::string& url, Duration ttl) {
  ASSIGN_OR_RETURN(
      PgRows rows,
      impl_->pg.Query("UPDATE leader SET holder = $1, url = $2, epoch = epoch + 1, "
                      "expires_at = clock_timestamp() + $3 * INTERVAL '1 millisecond' "
                      "WHERE id = 1 AND (expires_at < clock_timestamp() OR NOT EXISTS ("
                      "SELECT 1 FROM pg_stat_activity WHERE application_name = 'baton ' || "
                      "leader.holder)) RETURNING epoch",
                      {holder, url, Millis(ttl)}));
  if (rows.size() == 0) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t epoch, rows.Int(0, 0));
  return std::optional<int64_t>(epoch);
}

Status PostgresLease::Renew(int64_t epoch, Duration ttl) {
  auto rows = impl_->pg.Query(
      "UPDATE leader SET expires_at = clock_timestamp() + $2 * INTERVAL '1 millisecond' "
      "WHERE id = 1 AND epoch = $1",
      {std::to_string(epoch), Millis(ttl)});
  if (!rows) return rows.error();
  if (rows->Affected() == 0) {
    return Conflict("epoch " + std::to_string(epoch) +
                    " no longer leads: another controller took over");
  }
  return Status::Ok();
}

Status PostgresLease::Release(int64_t epoch) {
  auto rows =
      impl_->pg.Query("UPDATE leader SET expires_at = '-infinity' WHERE id = 1 AND epoch = $1",
                      {std::to_string(epoch)});
  return rows ? Status::Ok() : rows.error();
}

Result<Leadership> PostgresLease::Current() {
  ASSIGN_OR_RETURN(PgRows rows,
                   impl_->pg.Query("SELECT holder, url, epoch, expires_at > clock_timestamp() "
                                   "FROM leader WHERE id = 1",
                                   {}));
  if (rows.size() == 0) return Leadership{};
  ASSIGN_OR_RETURN(int64_t epoch, rows.Int(0, 2));
  return Leadership{.holder = rows.Text(0, 0),
                    .url = rows.Text(0, 1),
                    .epoch = epoch,
                    .live = rows.Text(0, 3) == "t"};
}

}  // namespace baton::store
