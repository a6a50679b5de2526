#include "cli/logs.h"

#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "codec/json_codec.h"

namespace baton::cli {

std::string LineLabeler::Add(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(data);
      break;
    }
    out += label_;
    out += partial_;
    out.append(data.substr(0, nl + 1));
    partial_.clear();
    data.remove_prefix(nl + 1);
  }
  return out;
}

std::string LineLabeler::Flush() {
  if (partial_.empty()) return "";
  std::string out = label_ + partial_ + "\n";
  partial_.clear();
  return out;
}

namespace {

std::string LogTarget(const std::string& id, const std::string& node) {
  return "/v1/jobs/" + id + "/logs" + (node.empty() ? "" : "?node=" + node);
}

// The whole log (of `node`, else the one the server picks), a page (1 MiB) at a time, each
// page through `print`.
Status ReadWhole(ApiClient& api, const std::string& id, const std::string& node,
                 const std::function<void(std::string_view)>& print) {
  int64_t offset = 0;
  for (;;) {
    std::string target = LogTarget(id, node);
    target += (node.empty() ? "?" : "&") + std::string("offset=") + std::to_string(offset);
    auto res = api.Raw("GET", target);
    if (!res) return res.error();
    if (res->status != 200) return InvalidArgument(codec::ErrorMessage(res->body));
    if (res->body.empty()) return Status::Ok();
    print(res->body);
    offset += static_cast<int64_t>(res->body.size());
  }
}

Status Follow(ApiClient& api, const std::string& id, const std::string& node,
              const std::function<void(std::string_view)>& print) {
  std::string target = LogTarget(id, node);
  target += node.empty() ? "?follow=1" : "&follow=1";
  return api.Stream(target, print);
}

// Every node of a multi-node job, each line labelled; followed at once with -f, one node after
// another otherwise.
int AllNodes(const Connection& conn, ApiClient& api, const std::string& id, const Job& job,
             bool follow) {
  std::mutex out;
  std::vector<Status> results(job.allocation.size());
  auto one = [&](size_t rank, ApiClient& client) {
    const std::string& node = job.allocation[rank].node;
    LineLabeler labels("[" + node + " rank " + std::to_string(rank) + "] ");
    auto print = [&](std::string_view piece) {
      std::string text = labels.Add(piece);
      std::lock_guard lock(out);
      std::cout << text << std::flush;
    };
    results[rank] = follow ? Follow(client, id, node, print) : ReadWhole(client, id, node, print);
    std::lock_guard lock(out);
    std::cout << labels.Flush() << std::flush;
  };
  if (!follow) {
    for (size_t rank = 0; rank < job.allocation.size(); ++rank) one(rank, api);
  } else {
    std::vector<std::unique_ptr<ApiClient>> clients;
    for (size_t rank = 0; rank < job.allocation.size(); ++rank) {
      auto client = ApiClient::Connect(conn);
      if (!client) return Fail(client.error());
      clients.push_back(std::move(*client));
    }
    std::vector<std::thread> threads;
    for (size_t rank = 0; rank < job.allocation.size(); ++rank)
      threads.emplace_back(one, rank, std::ref(*clients[rank]));
    for (std::thread& t : threads) t.join();
  }
  for (const Status& st : results) {
    if (!st.ok()) return Fail(st);
  }
  return 0;
}

}  // namespace

int Logs(const Connection& conn, const std::string& id, bool follow, const std::string& node) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  if (node.empty()) {
    auto job = (*api)->GetJob(id);
    if (!job) return Fail(job.error());
    if (job->allocation.size() > 1) return AllNodes(conn, **api, id, *job, follow);
  }
  auto print = [](std::string_view piece) { std::cout << piece << std::flush; };
  // One node: the server picks it (where the job runs, else where it last wrote output) and,
  // following, moves to the new node of a requeued job.
  Status st = follow ? Follow(**api, id, node, print) : ReadWhole(**api, id, node, print);
  return st.ok() ? 0 : Fail(st);
}

}  // namespace baton::cli
