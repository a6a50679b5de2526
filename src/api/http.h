// HTTP requests and responses as plain values, so handlers never see Beast.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace baton::api {

struct Request {
  std::string method;                        // "GET", "POST", ...
  std::string path;                          // decoded path, no query
  std::string target;                        // path and query as sent
  std::vector<std::string> segments;         // the path's decoded segments, empty ones left out
  std::map<std::string, std::string> query;  // decoded query parameters (last one wins)
  std::string body;
  std::string authorization;    // the Authorization header
  std::string idempotency_key;  // the Idempotency-Key header
  std::string accept;           // the Accept header
  std::string last_event_id;    // the Last-Event-ID header (Server-Sent Events)
  std::string upgrade;          // the Upgrade header, when Connection names it
  std::string content_type;     // the Content-Type header
  std::string accept_encoding;  // the Accept-Encoding header
  std::string if_none_match;    // the If-None-Match header
};

// One piece of a streamed body (a followed log, Server-Sent Events).
struct Piece {
  std::string data;                   // sent as one chunk when not empty
  bool end = false;                   // the body is complete
  std::chrono::milliseconds wait{0};  // no data now: ask again after this long at the latest
  // With `wait`: how to ask again sooner. The server calls it once with a wake-up that ends the
  // wait; the wake-up may be called from any thread, and does nothing once the wait is over.
  std::function<void(std::function<void()> wake)> on_wake;
};
using PieceCallback = std::function<void(Piece)>;
// Asked for the next piece each time the last one is written (or its wait is over); answers
// through the callback exactly once, at once or later, from any thread. Never called again
// once the client has gone.
using Pull = std::function<void(PieceCallback)>;

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is streamed with chunked transfer encoding from what `stream` gives,
  // and `body` is ignored; the connection closes after the last piece.
  Pull stream;
  // When set (with status 101), the connection is upgraded: after the head, the server hands
  // the connected socket over (a descriptor the callee then owns) with the bytes the client
  // sent after its request, and has no more to do with it.
  std::function<void(int fd, std::string early)> upgrade;
};

// Sends the response; callable from any thread, exactly once.
using Respond = std::function<void(Response)>;
using Handler = std::function<void(Request, Respond)>;

}  // namespace baton::api
