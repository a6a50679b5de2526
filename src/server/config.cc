#include "server/config.h"

#include <fstream>
#include <future>
#include <sstream>
#include <tuple>

#include "core/log.h"

namespace baton::server {
namespace {

// The options only a start takes: a reload that changes them says so.
auto StartOnly(const ServeOptions& o) {
  return std::tie(o.listen, o.data, o.shared_dir, o.webhooks, o.webhook_attempts, o.store_path,
                  o.store_url, o.tls.cert, o.tls.key, o.tls.insecure_http);
}

}  // namespace

void ApplyConfigFile(codec::ServerConfig cfg, ServeOptions* o) {
  auto typed = [&](const char* flag) { return o->typed.count(flag) > 0; };
  if (!cfg.listen.empty() && !typed("--listen")) o->listen = cfg.listen;
  if (!cfg.data.empty() && !typed("--data")) o->data = cfg.data;
  if (!cfg.shared_dir.empty() && !typed("--shared-dir")) o->shared_dir = cfg.shared_dir;
  o->policy = std::move(cfg.policy);
  o->webhooks = std::move(cfg.webhooks);
  o->webhook_attempts = cfg.webhook_attempts;
  o->store_path = cfg.store_path;
  o->store_url = cfg.store_url;
  if (!cfg.tls_cert.empty() && !typed("--tls-cert") && !typed("--tls-key")) {
    o->tls.cert = cfg.tls_cert;
    o->tls.key = cfg.tls_key;
  }
  if (cfg.insecure_http) o->tls.insecure_http = true;
}

Result<codec::ServerConfig> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Err(NotFound(path + ": cannot be read"));
  return codec::DecodeServerConfig(text.str(), path);
}

Status LoadConfig(const std::string& path, ServeOptions* o) {
  ASSIGN_OR_RETURN(codec::ServerConfig cfg, ReadConfigFile(path));
  ApplyConfigFile(std::move(cfg), o);
  return Status::Ok();
}

void Reload(const std::string& path, const ServeOptions& running, control::ControllerLoop& loop) {
  if (path.empty()) {
    LogInfo("SIGHUP: started without --config: there is no file to reload");
    return;
  }
  auto cfg = ReadConfigFile(path);
  if (!cfg) {
    LogInfo("SIGHUP: " + cfg.error().message() + "; the running configuration stays");
    return;
  }
  ServeOptions next = running;
  ApplyConfigFile(std::move(*cfg), &next);
  std::promise<Status> applied;
  loop.Post(control::SetPolicy{next.policy},
            [&applied](control::Reply r) { applied.set_value(r.status); });
  Status st = applied.get_future().get();
  if (!st.ok()) {
    LogInfo("SIGHUP: " + st.message() + "; the running configuration stays");
    return;
  }
  LogInfo("SIGHUP: reloaded " + path +
          ": its scheduling policy, projects, users and pools are in force");
  if (StartOnly(next) != StartOnly(running)) {
    LogInfo(
        "SIGHUP: `listen`, `data`, `shared_dir`, `store`, `alerts` and `tls` take effect at the "
        "next start only");
  }
}

}  // namespace baton::server
