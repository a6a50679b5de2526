// A session's side in baton-shim (`baton run`): the job's terminal (a pseudo-terminal whose
// output the shim copies to the job's log and to an attached client) or its first process's
// stdin (a pipe fed from the client), served on a Unix socket that the agent connects tunnels
// to (agent_tunnels.cc). One client at a time: a new one takes over, the old one is told. A
// connection's first frame says what it is: a note (`n`, an idle session's warning from the
// agent) is shown in the terminal and kept in the log, and the connection closed; anything
// else makes it the client (the CLI sends the window size first).
// The frames are core/session_frame.h's, copied here since the shim links nothing of ours.
#pragma once

#include <sys/types.h>

struct ShimSession {
  int listen_fd = -1;
  int client_fd = -1;
  int pending_fd = -1;  // accepted, its first frame not yet read: a client, or a note from Baton
  bool tty = false;
  int master = -1;   // tty: the terminal's master side
  int stdin_w = -1;  // stdin: the pipe's write end
  const char* socket_path = nullptr;
  char tty_path[128] = {};
};

// Opens the session's socket and its terminal or stdin pipe; `*child_stdin` is the pipe's read
// end for the job's first process. False after writing why to `log_fd`.
bool OpenSession(const char* socket_path, const char* mode, int log_fd, ShimSession* s,
                 int* child_stdin);
// Serves the session until the job's `count` processes (group `group`) have ended; returns the
// wait status of the first that failed, else 0 (as the shim's WaitForJob). With a terminal,
// its output goes to `log_fd` too.
int ServeSession(ShimSession* s, int log_fd, int count, pid_t group);
// Tells an attached client how the job ended ("exit 0", "signal 9"), closes and removes the
// socket.
void CloseSession(ShimSession* s, const char* how);
