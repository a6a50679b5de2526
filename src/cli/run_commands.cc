// The commands around jobs run attached: `baton run` (the flags of submit; -t is --tty there),
// `baton run --in`, `baton alloc`, `baton attach`, `sessions` and `forward` (cli/session.h,
// cli/alloc.h).
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/alloc.h"
#include "cli/code.h"
#include "cli/forward.h"
#include "cli/parser.h"
#include "cli/session.h"
#include "cli/spec_flags.h"
#include "cli/submit.h"

namespace baton::cli {

namespace {

// `baton run --in ID`: only --env of the spec flags (the job is there already; srun's options
// go after --).
int RunInAllocation(const Connection& conn, const SubmitFlags& f, const std::string& ref,
                    bool session, std::vector<std::string> command) {
  for (const std::string& flag : f.given) {
    if (flag == "--env" || !f.IsSpecFlag(flag)) continue;
    return Usage(InvalidArgument("run --in: " + flag +
                                 ": the allocation has its size already; srun's options go after "
                                 "--: baton run --in " +
                                 ref + " -- -N 1 -l hostname"));
  }
  if (session)
    return Usage(InvalidArgument("run --in: not with -t or --jupyter (srun runs the command)"));
  std::vector<std::pair<std::string, std::string>> env;
  for (const std::string& kv : f.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return Usage(InvalidArgument("--env " + kv + ": expected KEY=VALUE"));
    env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return RunIn(conn, ref, std::move(command), env);
}

// `baton alloc`: the flags of submit; the command here (default: the user's shell).
void AddAllocCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code,
                     const std::shared_ptr<std::optional<std::vector<std::string>>>& tail) {
  auto f = std::make_shared<SubmitFlags>();
  CLI::App* sub = app.add_subcommand(
      "alloc",
      "hold nodes and run a shell here while you use them, as salloc: srun in it (or baton run "
      "--in ID anywhere) runs on them; exit gives them back");
  sub->prefix_command();
  SetUsage(sub,
           "baton alloc [OPTIONS] [-- COMMAND [ARGS...]]   e.g. baton alloc -N 2 "
           "--gpus-per-node 4 -t 2h");
  AddConnectionFlags(sub, *conn);
  AddSpecFlags(sub, *f);
  sub->callback([sub, f, conn, exit_code, tail] {
    auto command = CommandWords(*sub, "alloc", *tail, *f);
    if (!command) {
      *exit_code = Usage(command.error());
      return;
    }
    NoteGiven(*sub, f.get());
    auto spec = SpecFromFlags(*f, {"baton-slurm", "--alloc-host"});
    if (!spec) {
      *exit_code = Usage(spec.error());
      return;
    }
    spec->batch = spec->slurm_env = spec->alloc = true;
    if (f->given.count("--name") == 0) spec->name = "alloc";
    if (Status st = ValidateJobSpec(*spec); !st.ok()) {
      *exit_code = Usage(st);
      return;
    }
    *exit_code = Alloc(*conn, std::move(*spec), std::move(*command));
  });
}

// `baton run`: the flags of submit (-t is --tty there), -i, --jupyter and its --port.
void AddRunCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code,
                   const std::shared_ptr<std::optional<std::vector<std::string>>>& tail) {
  auto f = std::make_shared<SubmitFlags>();
  auto tty = std::make_shared<bool>(false);
  auto jupyter = std::make_shared<bool>(false);
  auto port = std::make_shared<int>(0);
  auto in = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "run", "run a job attached, as srun: its output here, stdin to it, its exit code");
  sub->prefix_command();
  SetUsage(sub,
           "baton run [OPTIONS] -- COMMAND [ARGS...]\n       baton run -it [OPTIONS] -- bash\n"
           "       baton run --in ID [--env K=V] -- [SRUN OPTIONS] COMMAND [ARGS...]");
  AddConnectionFlags(sub, *conn);
  AddSpecFlags(sub, *f, false);
  sub->add_flag("-t,--tty", *tty,
                "a terminal on the node (a shell, an editor): keys go to the job as typed, "
                "Ctrl-P Ctrl-Q detaches, `baton attach ID` goes back");
  sub->add_flag("-i,--interactive")
      ->description("keep stdin attached (it always is; -i makes docker's -it work here)");
  sub->add_flag("--jupyter", *jupyter,
                "run Jupyter (lab, else notebook) on the node and print a URL on this machine "
                "that reaches it; Ctrl-C ends it");
  sub->add_option("--port", *port, "with --jupyter: the local port (default: a free one)")
      ->check(CLI::Range(0, 65535));
  sub->add_option("--in", *in,
                  "run COMMAND in this allocation (baton alloc) through srun, over its nodes; "
                  "the words after -- are srun's");
  sub->callback([sub, f, tty, jupyter, port, in, conn, exit_code, tail] {
    auto command = CommandWords(*sub, "run", *tail, *f);
    if (!command) {
      *exit_code = Usage(command.error());
      return;
    }
    NoteGiven(*sub, f.get());
    if (!in->empty()) {
      *exit_code = RunInAllocation(*conn, *f, *in, *tty || *jupyter, std::move(*command));
      return;
    }
    if (!*jupyter && command->empty()) {
      *exit_code = Usage(InvalidArgument(
          "run: no command: use `baton run [OPTIONS] -- COMMAND [ARGS...]`, `baton run -it -- "
          "bash` for a shell, or `baton run --jupyter`"));
      return;
    }
    if (*jupyter && (!command->empty() || *tty)) {
      *exit_code = Usage(InvalidArgument("run --jupyter: no command and no -t (it runs Jupyter)"));
      return;
    }
    auto spec = SpecFromFlags(*f, *jupyter ? std::vector<std::string>{"jupyter"} : *command);
    if (!spec) {
      *exit_code = Usage(spec.error());
      return;
    }
    if (!f->code.empty()) {
      auto api = ApiClient::Connect(*conn);
      auto id = api ? UploadCode(**api, f->code) : Result<std::string>(Err(api.error()));
      if (!id) {
        *exit_code = Fail(id.error());
        return;
      }
      spec->code = *id;
    }
    if (*jupyter) {
      *exit_code = RunJupyter(*conn, *spec, *port);
      return;
    }
    spec->interactive = *tty ? Interactive::kTty : Interactive::kStdin;
    if (Status st = ValidateJobSpec(*spec); !st.ok()) {
      *exit_code = Usage(st);
      return;
    }
    if (*tty && isatty(0) == 0) {
      *exit_code = Usage(
          InvalidArgument("run -t: stdin is not a terminal (drop -t to pipe input to the job)"));
      return;
    }
    *exit_code = RunAttached(*conn, *spec);
  });
}

}  // namespace

// `baton run` and the commands around sessions: attach, sessions, forward (cli/session.h).
void AddSessionCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code,
                        const std::shared_ptr<std::optional<std::vector<std::string>>>& tail) {
  AddRunCommand(app, conn, exit_code, tail);
  AddAllocCommand(app, conn, exit_code, tail);
  {
    auto id = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand("attach", "go back to a session that baton run started");
    AddConnectionFlags(sub, *conn);
    sub->add_option("id", *id, "the session's job id")->required();
    sub->callback([=] { *exit_code = Attach(*conn, *id); });
  }
  {
    auto all = std::make_shared<bool>(false);
    auto json = std::make_shared<bool>(false);
    CLI::App* sub =
        app.add_subcommand("sessions", "list your sessions (baton run) that run or wait");
    AddConnectionFlags(sub, *conn);
    sub->add_flag("--all", *all, "everyone's (as far as your token may see)");
    sub->add_flag("--json", *json, "print JSON");
    sub->callback([=] { *exit_code = Sessions(*conn, *all, *json); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto ports = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand(
        "forward",
        "relay a local port to a port a running job listens on (a notebook, TensorBoard)");
    SetUsage(
        sub,
        "baton forward ID [LOCAL:]REMOTE   e.g. baton forward 12 8888, baton forward 12 9000:6006");
    AddConnectionFlags(sub, *conn);
    sub->add_option("id", *id, "the job")->required();
    sub->add_option("ports", *ports,
                    "[LOCAL:]REMOTE: LOCAL on 127.0.0.1 (0: any free port; "
                    "default REMOTE), REMOTE on the job's first node")
        ->required();
    sub->callback([=] { *exit_code = Forward(*conn, *id, *ports); });
  }
}

}  // namespace baton::cli
