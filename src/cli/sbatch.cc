#include "cli/sbatch.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace baton::cli {

namespace {

constexpr size_t kMaxScriptBytes = 256 * 1024 - 4096;  // the script, inside a job's command

// Options sbatch takes that change nothing here, each with what Baton does instead.
struct Noted {
  const char* name;
  const char* note;
};
constexpr Noted kNoted[] = {
    {"--mail-type",
     "Baton sends no mail: a failed job is an event (`baton events`) and an alert to its "
     "webhooks; `baton wait ID` waits for a job's end"},
    {"--mail-user", "Baton sends no mail: a failed job is an event and an alert to its webhooks"},
    {"--open-mode", "output files are written anew at the first run and appended to on a requeue"},
    {"--parsable", "baton submit prints the job id alone"},
    {"--hint", "Baton places jobs by GPUs and NUMA itself"},
    {"--threads-per-core", "Baton places jobs by GPUs and NUMA itself"},
    {"--cores-per-socket", "Baton places jobs by GPUs and NUMA itself"},
    {"--sockets-per-node", "Baton places jobs by GPUs and NUMA itself"},
    {"--ntasks-per-core", "Baton places jobs by GPUs and NUMA itself"},
    {"--distribution", "srun places tasks in blocks, node by node"},
    {"--comment", "not kept"},
    {"--get-user-env", "the job gets its node's environment and what --export names"},
    {"--no-kill", "a job whose node fails is requeued (unless --no-requeue)"},
    {"--wait-all-nodes", "a job starts once all its nodes have started it"},
    {"--kill-on-invalid-dep", "a job whose dependency cannot be met is cancelled, with why"},
    {"--time-min", "the job's time limit is --time"},
    {"--profile", "Baton samples GPU use itself (baton show)"},
    {"--propagate", "a job gets its node's limits and its own cgroup's"},
    {"--export-file", "not read: name the variables with --export"},
    {"--mincpus", "use --cpus-per-task"},
    {"--nice", "use --qos or #BATON --priority"},
    {"--wckey", "not kept"},
};

// Options that name what Baton does not do yet, with what to do instead.
struct Refused {
  const char* name;
  const char* why;
};
constexpr Refused kRefused[] = {
    {"--constraint", "name the GPU model with --gres=gpu:TYPE:N"},
    {"--reservation", "Baton has no reservations to name"},
    {"--licenses", "Baton has no licenses to count"},
    {"--clusters", "one Baton cluster takes the job"},
    {"--wrap", "a script has its command in it"},
    {"--test-only", "type it: baton submit --test-only SCRIPT"},
};

// Short options and their long names.
constexpr std::pair<const char*, const char*> kShort[] = {
    {"-J", "--job-name"},   {"-N", "--nodes"},    {"-n", "--ntasks"},     {"-c", "--cpus-per-task"},
    {"-G", "--gpus"},       {"-t", "--time"},     {"-p", "--partition"},  {"-A", "--account"},
    {"-q", "--qos"},        {"-a", "--array"},    {"-d", "--dependency"}, {"-o", "--output"},
    {"-e", "--error"},      {"-D", "--chdir"},    {"-w", "--nodelist"},   {"-x", "--exclude"},
    {"-C", "--constraint"}, {"-L", "--licenses"}, {"-M", "--clusters"},   {"-b", "--begin"},
    {"-H", "--hold"},       {"-Q", "--quiet"},    {"-v", "--verbose"},    {"-s", "--oversubscribe"},
};

bool TakesNoValue(const std::string& name) {
  return name == "--exclusive" || name == "--requeue" || name == "--no-requeue" ||
         name == "--hold" || name == "--parsable" || name == "--quiet" || name == "--verbose" ||
         name == "--get-user-env" || name == "--no-kill" || name == "--oversubscribe" ||
         name == "--wait-all-nodes" || name == "--kill-on-invalid-dep" || name == "--overcommit" ||
         name == "--spread-job" || name == "--contiguous";
}

std::vector<std::string> SplitOn(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = std::min(s.find(sep, i), s.size());
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

// "gpu:4", "gpu:a100:4", "gpu" (one), "gpu:a100" (one) -> [TYPE:]N; other resources refused.
Result<std::string> GresGpus(const std::string& value) {
  std::string result;
  for (const std::string& item : SplitOn(value, ',')) {
    std::string gres = item.substr(0, item.find('('));  // "(S:0-1)": sockets, taken as given
    std::vector<std::string> parts = SplitOn(gres, ':');
    if (parts[0] != "gpu") {
      return Err(InvalidArgument("--gres=" + value +
                                 ": Baton schedules GPUs (gpu:N or "
                                 "gpu:TYPE:N), not \"" +
                                 parts[0] + "\""));
    }
    if (!result.empty()) return Err(InvalidArgument("--gres=" + value + ": gpu given twice"));
    if (parts.size() == 1)
      result = "1";
    else if (parts.size() == 2)
      result = AllDigits(parts[1]) ? parts[1] : parts[1] + ":1";
    else if (parts.size() == 3 && AllDigits(parts[2]))
      result = parts[1] + ":" + parts[2];
    else
      return Err(InvalidArgument("--gres=" + value + ": expected gpu:N or gpu:TYPE:N"));
  }
  return result;
}

// "afterok:12:13,afterany:14", "singleton" -> --after 12,13 --after-any 14 --singleton.
Result<std::vector<std::string>> Dependencies(const std::string& value) {
  if (value.find('?') != std::string::npos) {
    return Err(
        InvalidArgument("--dependency=" + value + ": Baton's dependencies all hold (',' not '?')"));
  }
  std::vector<std::string> out;
  for (const std::string& item : SplitOn(value, ',')) {
    if (item == "singleton") {
      out.push_back("--singleton");
      continue;
    }
    std::vector<std::string> parts = SplitOn(item, ':');
    std::string flag = parts[0] == "afterok"      ? "--after"
                       : parts[0] == "afterany"   ? "--after-any"
                       : parts[0] == "afternotok" ? "--after-notok"
                                                  : "";
    if (flag.empty() || parts.size() < 2) {
      return Err(InvalidArgument(
          "--dependency=" + value + ": \"" + item +
          "\": Baton knows afterok:ID[:ID...], afterany:..., afternotok:... and singleton"));
    }
    std::string ids;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::string id = parts[i].substr(0, parts[i].find('+'));  // "+time": not kept
      if (std::string array = id.substr(0, id.find('_')); array != id && AllDigits(array)) {
        // One task of an array: not the whole array, which would wait for every task.
        return Err(InvalidArgument(
            "--dependency=" + value + ": \"" + parts[i] + "\" is one task of array " + array +
            ": name the task's own job id (`baton show " + id + "` prints it), or the array's, " +
            array + ", for all its tasks"));
      }
      if (!AllDigits(id)) {
        return Err(
            InvalidArgument("--dependency=" + value + ": \"" + parts[i] + "\" is not a job id"));
      }
      ids += (ids.empty() ? "" : ",") + id;
    }
    out.insert(out.end(), {flag, ids});
  }
  return out;
}

Result<std::vector<std::string>> TranslateSbatchOption(const std::string& typed,
                                                       const std::string& value, bool has_value,
                                                       std::vector<std::string>* notes) {
  std::string name = typed;
  for (const auto& [s, l] : kShort) {
    if (typed == s) name = l;
  }
  for (const Refused& r : kRefused) {
    if (name == r.name) return Err(InvalidArgument(name + ": " + r.why));
  }
  for (const Noted& n : kNoted) {
    if (name == n.name) {
      notes->push_back(name + ": " + n.note);
      return std::vector<std::string>{};
    }
  }
  if (!TakesNoValue(name) && !has_value) return Err(InvalidArgument(name + ": needs a value"));
  auto as = [&](const char* flag) { return std::vector<std::string>{flag, value}; };
  if (name == "--job-name") return as("--name");
  if (name == "--nodes")
    return std::vector<std::string>{"--nodes", value.substr(0, value.find('-'))};
  if (name == "--ntasks") return as("--ntasks");
  if (name == "--ntasks-per-node") return as("--ntasks-per-node");
  if (name == "--cpus-per-task") return as("--cpus-per-task");
  if (name == "--gpus") return as("--gpus");
  if (name == "--gpus-per-node") return as("--gpus-per-node");
  if (name == "--gpus-per-task") return as("--gpus-per-task");
  if (name == "--gres") {
    ASSIGN_OR_RETURN(std::string per_node, GresGpus(value));
    return std::vector<std::string>{"--gpus-per-node", per_node};
  }
  if (name == "--mem") return as("--memory");
  if (name == "--mem-per-gpu") return as("--mem-per-gpu");
  if (name == "--mem-per-cpu") return as("--mem-per-cpu");
  if (name == "--time") return as("--time");
  if (name == "--partition") return as("--pool");
  if (name == "--account") return as("--project");
  if (name == "--qos") return as("--priority");
  if (name == "--array") return as("--array");
  if (name == "--dependency") return Dependencies(value);
  if (name == "--output") return as("--output");
  if (name == "--error") return as("--error");
  if (name == "--begin") return as("--begin");
  if (name == "--hold") return std::vector<std::string>{"--hold"};
  if (name == "--requeue" || name == "--no-requeue") return std::vector<std::string>{name};
  if (name == "--exclusive") {
    // --exclusive=user|mcs|topo share nodes among some jobs: Baton's is a node to one job.
    if (has_value) notes->push_back("--exclusive=" + value + ": taken as --exclusive");
    return std::vector<std::string>{"--exclusive"};
  }
  if (name == "--nodelist") return as("--nodelist");
  if (name == "--exclude") return as("--exclude");
  if (name == "--quiet" || name == "--verbose" || name == "--oversubscribe" ||
      name == "--overcommit" || name == "--spread-job" || name == "--contiguous")
    return std::vector<std::string>{};
  if (name == "--chdir") {
    std::filesystem::path dir(value);
    if (dir.is_relative()) dir = std::filesystem::current_path() / dir;
    return std::vector<std::string>{"--workdir", dir.lexically_normal().string()};
  }
  if (name == "--signal") {
    std::string v = value;
    // B: (the batch shell alone) is the job's too; R: (a reservation's) is Slurm's alone.
    if (v.starts_with("R:")) v = v.substr(2);
    // Slurm's TIME after @ is seconds.
    size_t at = v.find('@');
    if (at != std::string::npos && AllDigits(v.substr(at + 1))) v += "s";
    return std::vector<std::string>{"--signal", v};
  }
  if (name == "--export") {
    std::vector<std::string> out;
    for (const std::string& item : SplitOn(value, ',')) {
      if (item == "NONE" || item.empty()) continue;
      if (item == "ALL") {
        notes->push_back(
            "--export=ALL: the job gets its node's environment (PATH, HOME), not "
            "this shell's; name what it needs (--export=ALL,VAR or VAR=VALUE)");
        continue;
      }
      size_t eq = item.find('=');
      if (eq != std::string::npos) {
        out.insert(out.end(), {"--env", item});
      } else if (const char* v = std::getenv(item.c_str())) {
        out.insert(out.end(), {"--env", item + "=" + v});
      }
    }
    return out;
  }
  return Err(InvalidArgument(typed + ": an sbatch option Baton does not know"));
}

Result<std::vector<std::string>> SplitDirective(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;  // a comment
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return Err(InvalidArgument(std::string("an unclosed ") + quote));
  if (in_word) words.push_back(std::move(word));
  return words;
}

bool IsScript(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[2] = {0, 0};
  return in && in.read(head, 2) && head[0] == '#' && head[1] == '!' &&
         !std::filesystem::is_directory(path);
}

// A line after the #! one, as sbatch reads the comments before a script's first command.
enum class Lead { kOther, kSbatch, kBaton, kCommand };  // kOther: blank, or another comment
Lead LeadingLine(const std::string& line, std::string* rest) {
  std::string trimmed = line.substr(std::min(line.find_first_not_of(" \t\r"), line.size()));
  if (trimmed.empty()) return Lead::kOther;
  if (trimmed[0] != '#') return Lead::kCommand;
  bool sbatch = trimmed.starts_with("#SBATCH");
  if (!sbatch && !trimmed.starts_with("#BATON")) return Lead::kOther;
  *rest = trimmed.substr(sbatch ? 7 : 6);
  if (!rest->empty() && (*rest)[0] != ' ' && (*rest)[0] != '\t') return Lead::kOther;  // #SBATCHED
  return sbatch ? Lead::kSbatch : Lead::kBaton;
}

// Whether `text` has #SBATCH or #BATON lines among the comments before its first command.
bool HasDirectives(const std::string& text) {
  std::istringstream lines(text);
  std::string line, rest;
  std::getline(lines, line);  // #!
  while (std::getline(lines, line)) {
    Lead lead = LeadingLine(line, &rest);
    if (lead == Lead::kCommand) return false;
    if (lead != Lead::kOther) return true;
  }
  return false;
}

Result<BatchScript> ReadBatchScript(const std::string& path, const std::vector<std::string>& args) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Err(NotFound(path + ": cannot be read"));
  std::string text(kMaxScriptBytes + 1, '\0');  // read no more than a script may hold
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  BatchScript script;
  script.name = std::filesystem::path(path).filename().string();
  // A file without directives that Baton cannot run as one: a command, unless --batch-script.
  auto refuse = [&](Status why) -> Result<BatchScript> {
    if (HasDirectives(text)) return Err(std::move(why));
    script.refused = why.message();
    return script;
  };
  if (text.size() > kMaxScriptBytes) {
    std::error_code ec;
    auto bytes = std::filesystem::file_size(path, ec);
    return refuse(TooLarge(path + ": a batch script of at most 252 KiB (this one is " +
                           (ec ? std::string("larger") : std::to_string(bytes >> 10) + " KiB") +
                           ")"));
  }
  if (text.find('\0') != std::string::npos)
    return refuse(InvalidArgument(path + ": not a script (it holds a NUL byte)"));
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  if (!line.starts_with("#!"))
    return Err(InvalidArgument(path + ": a batch script starts with #! (its interpreter), as "
                                      "sbatch asks"));
  // "#!/bin/bash -l" -> /bin/bash -l; "#!/usr/bin/env python3" -> /usr/bin/env python3.
  ASSIGN_OR_RETURN(std::vector<std::string> interpreter, SplitDirective(line.substr(2)));
  if (interpreter.empty()) return Err(InvalidArgument(path + ":1: #! names no interpreter"));
  // The program: the interpreter's own name, or what `env` runs ("#!/usr/bin/env -S python3").
  std::string program = std::filesystem::path(interpreter[0]).filename().string();
  if (program == "env") {
    program.clear();
    for (size_t i = 1; i < interpreter.size() && program.empty(); ++i) {
      if (interpreter[i][0] != '-' && interpreter[i].find('=') == std::string::npos)
        program = std::filesystem::path(interpreter[i]).filename().string();
    }
  }
  bool shell = program == "sh" || program == "bash" || program == "dash" || program == "zsh" ||
               program == "ksh";
  bool python = program.starts_with("python");
  if (!shell && !python) {
    return refuse(
        InvalidArgument(path + ":1: " + line.substr(0, 80) +
                        ": Baton runs batch scripts of sh, bash, dash, zsh, ksh or python"));
  }
  std::filesystem::path absolute = std::filesystem::absolute(path).lexically_normal();
  script.command = interpreter;
  script.command.insert(script.command.end(), {"-c", text});
  if (shell) script.command.push_back(absolute.string());  // $0, as `bash FILE` has it
  script.command.insert(script.command.end(), args.begin(), args.end());
  // Directives: #SBATCH and #BATON lines before the first command, as sbatch reads them.
  int number = 1;
  std::string rest;
  while (std::getline(lines, line)) {
    ++number;
    Lead lead = LeadingLine(line, &rest);
    if (lead == Lead::kCommand) break;
    if (lead == Lead::kOther) continue;
    bool baton = lead == Lead::kBaton;
    std::string where = path + ":" + std::to_string(number) + ": ";
    script.directives = true;
    auto words = SplitDirective(rest);
    if (!words) return Err(InvalidArgument(where + words.error().message()));
    if (baton) {
      script.flags.insert(script.flags.end(), words->begin(), words->end());
      continue;
    }
    for (size_t i = 0; i < words->size(); ++i) {
      const std::string& w = (*words)[i];
      if (w.size() < 2 || w[0] != '-') {
        return Err(InvalidArgument(where + "#SBATCH " + w + ": not an option"));
      }
      std::string name = w, value;
      bool has_value = false;
      if (w.starts_with("--")) {
        size_t eq = w.find('=');
        if (eq != std::string::npos) {
          name = w.substr(0, eq);
          value = w.substr(eq + 1);
          has_value = true;
        }
      } else if (w.size() > 2) {
        name = w.substr(0, 2);
        value = w.substr(2);
        has_value = true;
      }
      std::string long_name = name;
      for (const auto& [s, l] : kShort) {
        if (name == s) long_name = l;
      }
      if (!has_value && !TakesNoValue(long_name) && i + 1 < words->size() &&
          ((*words)[i + 1].empty() || (*words)[i + 1][0] != '-' || AllDigits((*words)[i + 1]))) {
        value = (*words)[++i];
        has_value = true;
      }
      if (long_name == "--array") script.array = true;
      auto flags = TranslateSbatchOption(name, value, has_value, &script.notes);
      if (!flags) return Err(InvalidArgument(where + "#SBATCH " + flags.error().message()));
      script.flags.insert(script.flags.end(), flags->begin(), flags->end());
    }
  }
  for (std::string& note : script.notes) note = path + ": #SBATCH " + note;
  return script;
}

}  // namespace baton::cli
