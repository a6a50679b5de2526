// HTTP requests and responses as plain values, so handlers never see Beast.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace baton::api {

struct Request {
  std::string method;                       // "GET", "POST", ...
  std::string path;                         // decoded path, no query
  std::map<std::string, std::string> query; // decoded query parameters (last one wins)
  std::string body;
  std::string authorization;                // the Authorization header
  std::string idempotency_key;              // the Idempotency-Key header
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// Sends the response; callable from any thread, exactly once.
using Respond = std::function<void(Response)>;
using Handler = std::function<void(Request, Respond)>;

}  // namespace baton::api
