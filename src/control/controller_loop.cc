#include "control/controller_loop.h"

namespace baton::control {

ControllerLoop::ControllerLoop(Controller& controller, store::Store& store, Clock& clock,
                               LoopOptions options, Fatal fatal)
    : controller_(controller),
      store_(store),
      clock_(clock),
      options_(options),
      fatal_(std::move(fatal)) {}

ControllerLoop::~ControllerLoop() { Stop(); }

void ControllerLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ControllerLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<std::pair<Command, Done>> left;
  {
    std::lock_guard lock(mu_);
    left.swap(inbox_);
  }
  for (auto& [cmd, done] : left) {
    Reply r;
    r.status = Unavailable("the controller is shutting down");
    done(std::move(r));
  }
  for (auto& [id, done] : parked_) done(Reply{});
  parked_.clear();
}

void ControllerLoop::Post(Command command, Done done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      Reply r;
      r.status = Unavailable("the controller is shutting down");
      done(std::move(r));
      return;
    }
    if (auto* poll = std::get_if<AgentPoll>(&command)) poll->poll_id = next_poll_id_++;
    inbox_.emplace_back(std::move(command), std::move(done));
  }
  cv_.notify_one();
}

ControllerLoop::Stats ControllerLoop::stats() {
  std::lock_guard lock(mu_);
  return stats_;
}

void ControllerLoop::Run() {
  std::vector<std::pair<Command, Done>> batch;
  std::vector<std::pair<Done, Reply>> replies;
  TimePoint next_tick = clock_.Now() + options_.tick;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, options_.tick, [&] { return stopping_ || !inbox_.empty(); });
      if (stopping_) return;
      if (inbox_.size() <= options_.max_batch) {
        batch.swap(inbox_);
      } else {
        auto cut = inbox_.begin() + static_cast<std::ptrdiff_t>(options_.max_batch);
        batch.assign(std::make_move_iterator(inbox_.begin()), std::make_move_iterator(cut));
        inbox_.erase(inbox_.begin(), cut);
      }
    }
    TimePoint now = clock_.Now();
    for (auto& [cmd, done] : batch) {
      Reply r = controller_.Apply(cmd, now);
      if (r.parked) {
        parked_[std::get<AgentPoll>(cmd).poll_id] = std::move(done);
      } else {
        replies.emplace_back(std::move(done), std::move(r));
      }
    }
    if (now >= next_tick) {
      (void)controller_.Apply(Tick{}, now);
      next_tick = now + options_.tick;
    }
    auto cycle_start = std::chrono::steady_clock::now();
    Effects fx = controller_.EndBatch(now);
    double cycle =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - cycle_start).count();
    bool committed = fx.store.empty();
    Status st;
    for (int attempt = 0; !committed && attempt < options_.commit_attempts; ++attempt) {
      // A busy or briefly failing disk gets a moment: 0, 50, 200 ms...
      if (attempt > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(50 << (2 * (attempt - 1))));
      st = store_.Commit(fx.store);
      committed = st.ok();
    }
    if (!committed) {
      for (auto& [done, r] : replies) {
        Reply err;
        err.status = Unavailable("the store failed to commit: " + st.message());
        done(std::move(err));
      }
      {
        std::lock_guard lock(mu_);
        stopping_ = true;  // nothing more is accepted: it could not be made durable
      }
      fatal_(st);
      return;
    }
    if (options_.on_commit && !fx.store.empty()) options_.on_commit(fx.store);
    for (auto& [done, r] : replies) {
      // Answer with the jobs as the batch left them: a job submitted to an idle GPU is
      // already running when its submit is answered.
      for (Job& j : r.jobs) {
        if (const Job* now_job = controller_.FindJob(j.id)) j = *now_job;
      }
      done(std::move(r));
    }
    if (options_.on_event) {
      for (const ClusterEvent& e : fx.events) options_.on_event(e);
    }
    for (Delivery& d : fx.deliveries) {
      auto it = parked_.find(d.poll_id);
      if (it == parked_.end()) continue;
      Reply r;
      r.orders = std::move(d.orders);
      it->second(std::move(r));
      parked_.erase(it);
    }
    {
      std::lock_guard lock(mu_);
      stats_.batches += 1;
      stats_.cycle_seconds.Observe(cycle);
      stats_.commands += batch.size();
      stats_.commits += fx.store.empty() ? 0 : 1;
    }
    batch.clear();
    replies.clear();
  }
}

}  // namespace baton::control
