// The agent's link to the controllers: following the leader among several (--server
// URL1,URL2), refusing a deposed leader's epoch, joining as a new node for its credential, and
// the two conversations: registration (main loop) and the long poll for orders (its thread).
#include <cctype>
#include <set>

#include "agent/agent.h"
#include "codec/json_codec.h"
#include "core/file_util.h"
#include "core/log.h"

namespace baton::agent {

void Agent::FollowServers(net::HttpClient& client, uint64_t* generation) {
  if (uint64_t g = servers_->generation(); g != *generation) {
    *generation = g;
    if (auto url = net::ParseHttpUrl(servers_->Current())) client.Retarget(*url);
  }
}

void Agent::SeekLeader(const std::string& url, const Result<net::HttpResponse>& res) {
  if (res && res->standby && !res->leader.empty() && res->leader != url) {
    servers_->Leader(res->leader);
  } else if (servers_->size() > 1) {
    servers_->Failed(url);
  }
  std::lock_guard lock(mu_);
  need_register_ = true;
  cv_.notify_all();
}

bool Agent::AcceptEpoch(int64_t epoch) {
  if (epoch == 0) return true;  // a controller without a lease (a lone one)
  std::lock_guard lock(epoch_mu_);
  if (epoch < epoch_) return false;
  if (epoch > epoch_) {
    epoch_ = epoch;
    Status st =
        env_.WriteFileAtomic(options_.data_dir + "/epoch", std::to_string(epoch) + "\n", {});
    if (!st.ok()) LogWarn("cannot keep the leader's epoch: " + st.message(), Context());
  }
  return true;
}

std::string Agent::Credential() {
  std::lock_guard lock(mu_);
  return credential_.empty() ? options_.token : credential_;
}

Status Agent::ReadCredential() {
  std::string path = options_.data_dir + "/credential";
  RETURN_IF_ERROR(CheckPrivate(path, "this node's credential"));
  auto text = env_.ReadFile(path);
  if (!text) return Status::Ok();  // not joined yet
  std::string credential = std::move(*text);
  while (!credential.empty() && std::isspace(static_cast<unsigned char>(credential.back()))) {
    credential.pop_back();
  }
  std::lock_guard lock(mu_);
  credential_ = std::move(credential);
  return Status::Ok();
}

void Agent::NoteContact(const Result<net::HttpResponse>& res) {
  if (!res) {
    last_contact_error_ = res.error().message();
  } else if (res->standby) {
    // Not an answer about this agent: the leader is elsewhere.
  } else if (res->status >= 200 && res->status < 300) {
    last_contact_error_.clear();
  } else {
    // Reached, and refused: say what it answered rather than only that it was not reached.
    last_contact_error_ = "it answered " + std::to_string(res->status) + ": " +
                          codec::ErrorMessage(res->body).substr(0, 200);
  }
}

bool Agent::Join(net::HttpClient& client, const std::string& url) {
  auto res = client.Request("POST", "/v1/agent/join", codec::EncodeJoin(options_.name));
  NoteContact(res);
  if (!res || res->standby) return false;
  auto credential = res->status == 201 ? codec::DecodeJoinReply(res->body)
                                       : Result<std::string>(Err(Internal(res->body)));
  if (!credential) {
    LogWarn(url + " refused node " + options_.name + " joining (HTTP " +
                std::to_string(res->status) + "): " + codec::ErrorMessage(res->body),
            Context());
    return false;
  }
  Status st =
      env_.WriteFileAtomic(options_.data_dir + "/credential", *credential + "\n", {.mode = 0600});
  if (!st.ok()) {
    LogWarn("cannot keep this node's credential: " + st.message(), Context());
    return false;
  }
  LogInfo("joined " + url + " as node " + options_.name + " (its credential is in " +
              options_.data_dir + "/credential)",
          Context());
  std::lock_guard lock(mu_);
  credential_ = *credential;
  return true;
}

bool Agent::RegisterWithController(bool* tried_every_server) {
  *tried_every_server = true;
  // Several controllers: ask them all at once which leads, so that a stalled one (it takes
  // connections and answers nothing) holds the registration 2 s at most.
  servers_->ProbeLeader(Credential(), options_.tls, std::chrono::seconds(2));
  std::string url = servers_->Current();
  auto client = net::HttpClient::Create(url, options_.token, options_.tls);
  if (!client) return false;
  std::string credential = Credential();
  if (credential == options_.token) {  // not joined yet: the join token is all it has
    if (!Join(**client, url)) {
      *tried_every_server = servers_->Failed(url);
      return false;
    }
    credential = Credential();
  }
  (*client)->SetToken(credential);
  report_client_->SetToken(credential);
  RegisterRequest req;
  req.node.name = options_.name;
  req.node.gpus = gpus_;
  req.node.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  req.node.memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  req.node.gpu_backend = backend_.kind();
  req.node.topology = backend_.topology();
  req.node.pool = options_.pool;
  req.node.address = options_.address;
  req.node.refuses_root_jobs = as_root_ && !options_.allow_root_jobs;
  req.node.spot = options_.spot;
  req.node.mps = mps_found_;
  if (options_.mig_reconfigure) req.node.mig_gpus = backend_.MigParents();
  req.node.runtimes = Launcher::FindRuntimes();
  req.reclaim = reclaim_;
  // A job that ended while the controller lacks some of its output is told as running: its
  // end goes in a report with the last of its output, as every end does (report_outbox.h).
  // Told here, the controller would end it, and refuse the output that followed as no longer
  // placed on this node: a job that ended while its agent was restarting lost its output.
  std::set<JobAttempt> held;
  for (auto& [key, job] : jobs_) {
    if (job.exited && LogWaiting(job)) held.insert(key);
  }
  for (auto& [key, job] : jobs_) {
    JobEvent e;
    e.job = job.order.job;
    e.attempt = job.order.attempt;
    e.at = job.started_at;
    e.kind = job.exited && !held.count(key) ? JobEvent::Kind::kExited : JobEvent::Kind::kStarted;
    e.exit_code = job.status.exit_code;
    e.signal = job.status.signal;
    e.timed_out = job.stop.timed_out();
    e.lost = job.lost;
    e.launch_failed = job.launch_failed;
    req.jobs.push_back(e);
  }
  req.health = health_.health();
  auto res = (*client)->Request("POST", "/v1/agent/register", codec::EncodeRegister(req));
  NoteContact(res);
  if (res && res->standby && !res->leader.empty() && res->leader != url) {
    servers_->Leader(res->leader);
    *tried_every_server = false;
    return false;
  }
  auto reply = res && res->status == 200 ? codec::DecodeRegisterReply(res->body)
                                         : Result<RegisterReply>(Err(Unavailable("")));
  int64_t epoch_before = epoch_;
  if (res && res->status == 401) {
    LogWarn(url + " refused this node's credential: " + codec::ErrorMessage(res->body) +
                ". If it was revoked (baton node revoke " + options_.name + "), delete " +
                options_.data_dir + "/credential and start the agent with a join token",
            Context());
  }
  if (reply && !AcceptEpoch(reply->epoch)) {
    LogWarn("refused " + url + ": it leads with epoch " + std::to_string(reply->epoch) +
                ", older than epoch " + std::to_string(epoch_) + " seen already",
            Context());
    reply = Err(Conflict(""));
  }
  if (!reply) {
    *tried_every_server = servers_->Failed(url);
    return false;
  }
  servers_->Succeeded(url);
  // The registration told the controller everything; exits in it are acknowledged.
  outbox_.Registered(held);
  jobs_.Registered(/*new_leader=*/epoch_before != 0 && reply->epoch > epoch_before, held);
  DropAcknowledged();
  lease_.Set(reply->fence_ms, reply->fence_grace_ms);
  {
    std::lock_guard lock(mu_);
    session_ = reply->session;
    need_register_ = false;
    orders_.clear();
  }
  cv_.notify_all();
  return true;
}

Result<std::string> Agent::FetchCode(const std::string& id) {
  auto client = net::HttpClient::Create(servers_->Current(), Credential(), options_.tls);
  if (!client) return Err(client.error());
  auto got = (*client)->Request("GET", "/v1/code/" + id, {}, {}, std::chrono::minutes(5));
  if (!got) return Err(got.error());
  if (got->status != 200) {
    return Err(Unavailable("the controller answered " + std::to_string(got->status) +
                           " for snapshot " + id.substr(0, 12)));
  }
  return std::move(got->body);
}

bool Agent::PauseLink(Duration wait) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, wait, [&] { return stopping_.load(); });
}

void Agent::PollLoop() {
  net::HttpClient* client = poll_client_.get();
  uint64_t session = 0;
  uint64_t after = 0;
  while (!stopping_) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || (!need_register_ && session_ != 0); });
      if (stopping_) return;
      if (session != session_) {
        session = session_;
        after = 0;
      }
    }
    if (ToMillis(clock_.Now()) < silent_until_ms_) {
      if (!PauseLink(std::chrono::milliseconds(100))) return;  // an injected silence
      continue;
    }
    FollowServers(*client, &poll_generation_);
    client->SetToken(Credential());
    std::string url = servers_->Current();
    std::string target = "/v1/agent/orders?node=" + options_.name +
                         "&session=" + std::to_string(session) + "&after=" + std::to_string(after);
    auto res = client->Request("GET", target, {}, {}, std::chrono::seconds(40));
    if (stopping_) return;
    if (!res || res->standby) {
      if (res || servers_->size() > 1) SeekLeader(url, res);
      if (!PauseLink(std::chrono::milliseconds(300))) return;
      continue;
    }
    if (res->status == 409) {
      std::lock_guard lock(mu_);
      if (session_ == session) need_register_ = true;
      cv_.notify_all();
      continue;
    }
    if (res->status != 200) {
      if (!PauseLink(std::chrono::milliseconds(300))) return;
      continue;
    }
    auto orders = codec::DecodeOrders(res->body);
    if (!orders) {
      // A controller newer than this agent (an order kind it does not know): say so and ask
      // again in a while, rather than at once for ever.
      LogWarn("cannot read the controller's orders (is the controller newer than this agent?): " +
                  orders.error().message(),
              Context());
      if (!PauseLink(std::chrono::seconds(5))) return;
      continue;
    }
    std::lock_guard lock(mu_);
    if (session_ != session) continue;
    for (Order& o : *orders) {
      if (!AcceptEpoch(o.epoch)) {
        // A deposed leader: nothing of it is done; register with the one that leads now.
        LogWarn("refused an order of epoch " + std::to_string(o.epoch) + " from " + url +
                    ": a newer leader (epoch " + std::to_string(epoch_) + ") has taken over",
                Context());
        need_register_ = true;
        break;
      }
      if (o.seq <= after) continue;
      after = o.seq;
      orders_.push_back(std::move(o));
    }
    cv_.notify_all();
  }
}

}  // namespace baton::agent
