// baton_submit_floor: the least a one-process-per-job submit can cost on this machine, to set
// `baton submit` against (docs/performance.md, "The local socket and commands built alone").
// It does what `baton submit --hold -g 1 -- true` does on the wire and nothing else: reads
// DATA/admin.token, connects to DATA/api.sock, POSTs one held one-GPU `true` job, prints its
// id. No flags, no JSON library, no TLS; DATA is $BATON_HOME, else ~/.baton. With `--run`, the
// job is not held (`baton submit -g 1 -- true`): the floor of a loop that submits jobs to run.
//
//   for ((i = 0; i < 200; i++)); do build/release/bench/baton_submit_floor >/dev/null; done
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int fail(const char* what) {
  fprintf(stderr, "baton_submit_floor: %s\n", what);
  return 1;
}

int main(int argc, char** argv) {
  const int run = argc > 1 && strcmp(argv[1], "--run") == 0;
  char dir[256];
  const char* home = getenv("BATON_HOME");
  if (home != NULL && *home != '\0') {
    snprintf(dir, sizeof dir, "%s", home);
  } else {
    snprintf(dir, sizeof dir, "%s/.baton", getenv("HOME") != NULL ? getenv("HOME") : ".");
  }
  char path[512];
  snprintf(path, sizeof path, "%s/admin.token", dir);
  char token[256] = {0};
  int tf = open(path, O_RDONLY);
  if (tf < 0) return fail("cannot read DATA/admin.token");
  ssize_t tn = read(tf, token, sizeof token - 1);
  close(tf);
  while (tn > 0 && (token[tn - 1] == '\n' || token[tn - 1] == '\r')) token[--tn] = '\0';
  if (tn <= 0) return fail("DATA/admin.token is empty");

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if ((size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "%s/api.sock", dir) >=
      sizeof addr.sun_path)
    return fail("DATA/api.sock: path too long");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0)
    return fail("cannot connect to DATA/api.sock (is baton up running?)");

  const char* body =
      run ? "{\"name\":\"true\",\"command\":[\"true\"],\"resources\":{\"gpus\":1},"
            "\"workdir\":\"/tmp\"}"
          : "{\"name\":\"true\",\"command\":[\"true\"],\"resources\":{\"gpus\":1},"
            "\"workdir\":\"/tmp\",\"hold\":true}";
  char req[1024];
  int n = snprintf(req, sizeof req,
                   "POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                   "Connection: close\r\n\r\n%s",
                   token, strlen(body), body);
  if (n <= 0 || (size_t)n >= sizeof req) return fail("request too long");
  for (int sent = 0; sent < n;) {
    ssize_t w = write(fd, req + sent, (size_t)(n - sent));
    if (w <= 0) return fail("write failed");
    sent += (int)w;
  }
  static char res[1 << 16];
  size_t got = 0;
  for (ssize_t r; got < sizeof res - 1 && (r = read(fd, res + got, sizeof res - 1 - got)) > 0;)
    got += (size_t)r;
  res[got] = '\0';
  close(fd);
  const char* id = strstr(res, "\"id\":");
  if (strncmp(res, "HTTP/1.1 201", 12) != 0 || id == NULL) {
    fputs(res, stderr);
    return fail("the server refused the job");
  }
  printf("%ld\n", strtol(id + 5, NULL, 10));
  return 0;
}
