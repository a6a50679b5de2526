#include "cli/tokens.h"

#include <pwd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "cli/table.h"
#include "codec/json_codec.h"

namespace baton::cli {

// `baton token create [--user U] [--role R] [--name N]`: a new token, shown this once.
int TokenCreate(const Connection& conn, const std::string& user, const std::string& role,
                const std::string& name, bool json) {
  std::string body = "{\"role\": " + codec::EncodeString(role);
  if (!user.empty()) body += ", \"user\": " + codec::EncodeString(user);
  if (!name.empty()) body += ", \"name\": " + codec::EncodeString(name);
  body += "}";
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto res = (*api)->Call("POST", "/v1/tokens", body);
  if (!res) return Fail(res.error());
  auto t = codec::DecodeToken(*res);
  if (!t) return Fail(t.error());
  // Jobs run as their user's Unix account: a name no account has here is most likely a typo,
  // and agents set up as this machine is would fail its jobs. Made all the same: the agents'
  // machines may know it.
  if (!user.empty() && role != "agent" && getpwnam(user.c_str()) == nullptr) {
    std::cerr << "baton: warning: no Unix user '" << user
              << "' on this machine; its jobs will fail on any node that lacks it too\n";
  }
  if (json) {
    std::cout << *res << "\n";
    return 0;
  }
  std::cout << t->secret << "\n";
  if (t->role == Role::kJoin) {
    std::cerr << "join token " << t->id
              << ": one new node joins with it within a day (baton agent --server URL --token "
              << t->secret.substr(0, 8)
              << "... --name NODE --tls-ca CA, CA being the server's DATA/tls/ca.crt when it "
                 "made its own); it is shown only now\n";
    return 0;
  }
  std::cerr << "token " << t->id << " for " << t->user << " (" << RoleName(t->role)
            << "); it is shown only now: BATON_TOKEN=" << t->secret.substr(0, 8)
            << "... in the holder's environment\n";
  return 0;
}

namespace {

// `baton token list`: the caller's tokens (an admin's: everyone's), never their secrets.
int TokenList(const Connection& conn, bool json) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto res = (*api)->Call("GET", "/v1/tokens");
  if (!res) return Fail(res.error());
  if (json) {
    std::cout << *res << "\n";
    return 0;
  }
  auto list = codec::DecodeTokenList(*res);
  if (!list) return Fail(list.error());
  Table t({"ID", "USER", "ROLE", "NAME", "CREATED", "STATE"});
  for (const auto& k : *list) {
    t.Add({std::to_string(k.id), k.user, std::string(RoleName(k.role)),
           k.name.empty() ? "-" : k.name, FormatRfc3339(k.created_at),
           k.revoked ? "revoked" : "active"});
  }
  t.Print(std::cout);
  return 0;
}

// `baton token revoke ID`: the token stops working at once, for good.
int TokenRevoke(const Connection& conn, int64_t id) {
  auto api = ApiClient::Connect(conn);
  if (!api) return Fail(api.error());
  auto res = (*api)->Call("POST", "/v1/tokens/" + std::to_string(id) + "/revoke", "");
  if (!res) return Fail(res.error());
  return 0;
}

}  // namespace

// `baton token create`, `list` and `revoke`.
void AddTokenCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code) {
  CLI::App* token = app.add_subcommand("token", "API tokens: create, list, revoke");
  token->require_subcommand(1);
  auto user = std::make_shared<std::string>();
  auto role = std::make_shared<std::string>("user");
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* create = token->add_subcommand("create", "a new token; its secret is printed once");
  AddConnectionFlags(create, *conn);
  create->add_option("--user", *user, "the Unix user it acts as (default: yourself)");
  create
      ->add_option("--role", *role,
                   "user (own jobs), admin (everything), agent (the node protocol, as the node "
                   "named by --user) or join (joining as a new node, once)")
      ->check(CLI::IsMember({"user", "admin", "agent", "join"}));
  create->add_option("--name", *name, "what it is for, shown by `baton token list`");
  create->add_flag("--json", *json, "print JSON");
  create->callback([=] { *exit_code = TokenCreate(*conn, *user, *role, *name, *json); });
  CLI::App* list =
      token->add_subcommand("list", "tokens (yours; an admin's: all), without secrets");
  AddConnectionFlags(list, *conn);
  list->add_flag("--json", *json, "print JSON");
  list->callback([=] { *exit_code = TokenList(*conn, *json); });
  auto id = std::make_shared<int64_t>(0);
  CLI::App* revoke = token->add_subcommand("revoke", "stop a token working, for good");
  AddConnectionFlags(revoke, *conn);
  revoke->add_option("id", *id, "the token's id (baton token list)")
      ->required()
      ->check(CLI::PositiveNumber);
  revoke->callback([=] { *exit_code = TokenRevoke(*conn, *id); });
}

}  // namespace baton::cli
