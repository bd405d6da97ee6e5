// Finding a problem by name or by file: the library's first, then problem files, loaded once.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/problem_file.hpp"
#include "kforge/util.hpp"
#include "problem/file_problem.hpp"
#include "problem/kernelbench_problem.hpp"

namespace kforge {

// kernels/lazy_reduce: a problem made from a formula in its name.
std::shared_ptr<Problem> make_lazy_reduce_formula_problem(const std::string& name);

namespace {

struct Loaded {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Problem>> by_path, by_name;
};
Loaded& loaded() {
  static Loaded l;
  return l;
}

std::shared_ptr<Problem> library_problem(const std::string& name) {
  for (const auto& p : problems())
    if (p->name() == name) return p;
  return nullptr;
}

// A problem file declares tensors; a kernel spec beside it declares a language instead.
bool is_problem_file(const std::filesystem::path& p) {
  if (p.extension() == ".py") return is_kernelbench_file(p.string());
  if (p.extension() != ".json") return false;
  try {
    const auto j = nlohmann::json::parse(read_file(p));
    return j.is_object() && j.contains("tensors") && j.contains("reference");
  } catch (const std::exception&) {
    return false;  // not JSON: not a problem file (a broken one is reported when named)
  }
}

bool looks_like_path(const std::string& name) {
  return name.find('/') != std::string::npos || name.ends_with(".json") || name.ends_with(".py");
}

}  // namespace

std::shared_ptr<Problem> load_problem_file(const std::string& path) {
  const std::string canonical = std::filesystem::weakly_canonical(std::filesystem::absolute(path)).string();
  Loaded& l = loaded();
  {
    std::lock_guard lock(l.mutex);
    if (auto it = l.by_path.find(canonical); it != l.by_path.end()) return it->second;
  }
  // A KernelBench problem file (docs/kernelbench.md), or kforge's own JSON format.
  std::shared_ptr<Problem> problem;
  if (std::filesystem::path(canonical).extension() == ".py")
    problem = std::make_shared<KernelBenchProblem>(canonical);
  else
    problem = std::make_shared<FileProblem>(parse_problem_file(canonical));
  if (library_problem(problem->name()))
    throw ProblemError("problem file " + canonical + ": name '" + problem->name() +
                       "' is a library problem's; choose another (e.g. 'my." + problem->name() + "')");
  std::lock_guard lock(l.mutex);
  if (auto it = l.by_name.find(problem->name()); it != l.by_name.end())
    throw ProblemError("problem files " + it->second->source_file() + " and " + canonical +
                       " both name their problem '" + problem->name() + "'");
  l.by_path[canonical] = problem;
  l.by_name[problem->name()] = problem;
  return problem;
}

std::vector<std::shared_ptr<Problem>> problems_in(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) throw UsageError("no folder " + dir);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && is_problem_file(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::shared_ptr<Problem>> out;
  for (const auto& f : files) out.push_back(load_problem_file(f.string()));
  return out;
}

std::vector<std::string> problem_path() {
  const char* env = std::getenv("KFORGE_PROBLEM_PATH");
  std::vector<std::string> out;
  if (env)
    for (const auto& d : split(env, ':'))
      if (!d.empty()) out.push_back(d);
  return out;
}

std::shared_ptr<Problem> find_problem(const std::string& name) {
  if (auto p = library_problem(name)) return p;
  // Any formula: "lazy_reduce:<reduction>:<formula>" (kernels/lazy_reduce; the formula may hold '/').
  if (name.starts_with("lazy_reduce:")) return make_lazy_reduce_formula_problem(name);
  if (looks_like_path(name)) return load_problem_file(name);
  {
    Loaded& l = loaded();
    std::lock_guard lock(l.mutex);
    if (auto it = l.by_name.find(name); it != l.by_name.end()) return it->second;
  }
  for (const auto& dir : problem_path())
    if (std::filesystem::is_directory(dir))
      for (const auto& p : problems_in(dir))
        if (p->name() == name) return p;
  std::string names;
  for (const auto& p : problems()) names += (names.empty() ? "" : ", ") + p->name();
  throw UsageError("unknown problem '" + name + "' (known: " + names +
                   "; or give a problem file's path, or add its folder to KFORGE_PROBLEM_PATH)");
}

}  // namespace kforge
