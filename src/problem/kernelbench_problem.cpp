// KernelBench problem files as kforge problems: what the bridge reports, turned into the
// Problem interface (shapes, conditions, counts, the memory budget, the reference).
#include "problem/kernelbench_problem.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"
#include "kforge/util.hpp"
#include "problem/python_server.hpp"

namespace kforge {
namespace {

// Bytes per tensor element that kforge and the reference hold at once: the instance in double,
// the request's copy in Python, the float64 inputs there (and their absolute values), the
// float32 witness, each output's reference and magnitude on both sides, the kernel's buffers.
constexpr double kBytesPerElement = 48;

// Streams of the conditioning draws, apart from those of fill_random (trial * 1000 + tensor).
constexpr std::uint64_t kKbIndexStream = 6000, kKbFlagStream = 7000;

std::string sizes_text(const std::vector<std::string>& order, const Sizes& s) {
  std::string out;
  for (const auto& n : order)
    if (auto it = s.find(n); it != s.end()) out += fmt::format("{}{}={}", out.empty() ? "" : ",", n, it->second);
  return out;
}

std::string gib(double bytes) { return fmt::format("{:.3g} GiB", bytes / (1ull << 30)); }

}  // namespace

std::int64_t KbTensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

bool is_kernelbench_file(const std::string& path) {
  if (std::filesystem::path(path).extension() != ".py") return false;
  try {
    return read_file(path).find("def get_inputs") != std::string::npos;
  } catch (const std::exception&) {
    return false;
  }
}

KernelBenchProblem::KernelBenchProblem(const std::string& path) : path_(path) {
  if (!std::filesystem::is_regular_file(path)) throw UsageError("no KernelBench problem file " + path);
  name_ = "kb." + std::filesystem::path(path).stem().string();
  server_ = std::make_unique<PythonServer>("KernelBench problem " + path, path);
  const auto hello = call({{"op", "hello"}});
  torch_version_ = hello.value("torch", std::string("?"));
  for (const auto& s : hello.at("sizes")) {
    size_names_.push_back(s.at(0).get<std::string>());
    defaults_[size_names_.back()] = s.at(1).get<std::int64_t>();
  }
  for (const auto& t : shape(defaults_).tensors) specs_.push_back({t.name, t.role});
}

KernelBenchProblem::~KernelBenchProblem() = default;

nlohmann::json KernelBenchProblem::call(nlohmann::json req, const std::vector<const std::vector<double>*>& tensors,
                                        std::vector<std::vector<double>>* reply) const {
  auto r = server_->call(std::move(req), tensors, kernelbench_timeout_s());
  if (reply) *reply = std::move(r.tensors);
  return r.header;
}

std::string KernelBenchProblem::description() const {
  std::string d = fmt::format("KernelBench problem {} (PyTorch reference in float64, torch {})",
                              std::filesystem::path(path_).filename().string(), torch_version_);
  const double need = memory_needed(defaults_);
  if (need > memory_budget()) {
    d += fmt::format("; its default sizes need about {}, more than this machine's budget of {}", gib(need),
                     gib(memory_budget()));
    if (auto s = fitting_sizes(defaults_)) d += fmt::format(": try --size {}", sizes_text(size_names_, *s));
  }
  return d;
}

std::vector<TensorSpec> KernelBenchProblem::tensors() const { return specs_; }

std::vector<std::string> KernelBenchProblem::kernel_specs() const {
  std::vector<std::string> out;
  const auto dir = std::filesystem::path(path_).parent_path();
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    try {
      const auto j = nlohmann::json::parse(read_file(e.path()));
      if (j.is_object() && j.value("problem", std::string()) == name_ && j.contains("source"))
        out.push_back(std::filesystem::absolute(e.path()).string());
    } catch (const std::exception&) {
      // not JSON, or not a kernel spec: not one of this problem's kernels
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

KbShape KernelBenchProblem::shape(const Sizes& s, bool observe) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = shapes_.find({s, observe}); it != shapes_.end()) return *it->second;
    if (auto it = refused_.find(s); it != refused_.end()) throw UsageError(it->second);
  }
  // Observing draws get_inputs() for real: only at sizes that fit (the 6 GiB default of a ReLU
  // is described on fake tensors alone, its conditions left unknown).
  const bool draw = observe && memory_needed(s) <= memory_budget();
  nlohmann::json d;
  try {
    d = call({{"op", "describe"}, {"sizes", s}, {"observe", observe}, {"draw", draw}});
  } catch (const ProblemError& e) {
    if (s == defaults_) throw;  // at its own defaults, the file is at fault
    std::lock_guard lock(mutex_);
    refused_[s] = fmt::format("sizes {} are refused by the module: {}", sizes_text(size_names_, s), e.what());
    throw UsageError(refused_[s]);
  }
  auto out = std::make_shared<KbShape>();
  const auto conditions = d.value("conditions", nlohmann::json::object());
  auto add = [&](const nlohmann::json& list, Role role) {
    for (const auto& t : list) {
      KbTensor k;
      k.name = t.at("name").get<std::string>();
      k.role = role;
      k.shape = t.at("shape").get<std::vector<std::int64_t>>();
      k.dtype = t.at("dtype").get<std::string>();
      if (conditions.contains(k.name)) {
        const auto& c = conditions[k.name];
        k.condition = c.at("kind").get<std::string>();
        if (k.condition == "index") k.low = c.at("low").get<double>(), k.high = c.at("high").get<double>();
        else if (k.condition == "flag") k.low = c.at("p").get<double>();
      }
      out->tensors.push_back(std::move(k));
    }
  };
  add(d.at("inputs"), Role::in);
  add(d.at("state"), Role::in);
  add(d.at("outputs"), Role::out);
  for (const auto& [k, v] : d.at("fixed").items()) out->fixed[k] = v.get<std::string>();
  out->observed = observe;
  if (observe) {
    out->flops = d.value("flops", 0.0);
    out->length = std::max(1.0, d.value("length", 1.0));
    out->counted = d.value("counted", false);
  }
  if (!specs_.empty() && out->tensors.size() != specs_.size()) {
    std::lock_guard lock(mutex_);
    refused_[s] = fmt::format("sizes {} give {} tensors where the default sizes give {}", sizes_text(size_names_, s),
                              out->tensors.size(), specs_.size());
    throw UsageError(refused_[s]);
  }
  std::lock_guard lock(mutex_);
  if (shapes_.size() > 256) shapes_.clear();
  shapes_[{s, observe}] = out;
  return *out;
}

std::int64_t KernelBenchProblem::tensor_elements(std::size_t t, const Sizes& s) const {
  return shape(s).tensors.at(t).elements();
}

double KernelBenchProblem::memory_needed(const Sizes& s) const {
  double n = 0;
  for (const auto& t : shape(s).tensors) n += static_cast<double>(t.elements());
  return n * kBytesPerElement;
}

double KernelBenchProblem::memory_budget() {
  if (const char* e = std::getenv("KFORGE_KB_MEMORY_GIB"); e && *e) {
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (end && *end == '\0' && v > 0) return v * (1ull << 30);
    throw UsageError(fmt::format("KFORGE_KB_MEMORY_GIB='{}' is not a positive number", e));
  }
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / 4;
}

std::optional<Sizes> KernelBenchProblem::fitting_sizes(const Sizes& s) const {
  try {
    const auto r = call({{"op", "suggest"}, {"sizes", s}, {"budget_bytes", memory_budget()},
                         {"bytes_per_element", kBytesPerElement}});
    if (r.at("suggested").is_null()) return std::nullopt;
    return r.at("suggested").get<Sizes>();
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

void KernelBenchProblem::check_sizes(const Sizes& s) const {
  for (const auto& [k, v] : s) {
    const auto d = defaults_.find(k);
    if (d == defaults_.end()) throw UsageError(fmt::format("problem {} has no size '{}'", name_, k));
    const std::int64_t min = std::min<std::int64_t>(d->second, 1);  // padding = 0 may stay 0
    if (v < min) throw UsageError(fmt::format("size {}={} of problem {} must be at least {}", k, v, name_, min));
  }
  const double need = memory_needed(s);
  if (need > memory_budget()) {
    std::string hint;
    if (auto fit = fitting_sizes(s)) hint = fmt::format(": try --size {}", sizes_text(size_names_, *fit));
    throw UsageError(fmt::format("problem {} at {} needs about {} (inputs, parameters and outputs at {} bytes an "
                                 "element for kforge and its float64 reference), more than the budget of {} (a quarter "
                                 "of this machine's memory; KFORGE_KB_MEMORY_GIB sets it){}",
                                 name_, sizes_text(size_names_, s), gib(need), kBytesPerElement,
                                 gib(memory_budget()), hint));
  }
}

void KernelBenchProblem::condition_inputs(Instance& inst, std::uint64_t seed, int trial) const {
  const KbShape sh = shape(inst.sizes, true);
  const auto tr = static_cast<std::uint64_t>(trial);
  for (std::size_t t = 0; t < sh.tensors.size(); ++t) {
    const KbTensor& d = sh.tensors[t];
    if (d.role != Role::in) continue;
    auto& v = inst.tensors[t];
    if (d.condition == "index") {
      const auto low = static_cast<std::int64_t>(d.low), range = static_cast<std::int64_t>(d.high - d.low);
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<double>(low + std::min<std::int64_t>(
            range - 1, static_cast<std::int64_t>(random_unit(seed, kKbIndexStream + 1000 * tr + t, i) * range)));
    } else if (d.condition == "flag") {
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = random_unit(seed, kKbFlagStream + 1000 * tr + t, i) < d.low;
    } else if (d.condition == "positive") {
      for (auto& x : v) x = x == 0 ? 1 : std::fabs(x);
    } else if (d.dtype.find("int") != std::string::npos) {
      for (auto& x : v) x = std::round(x);  // an integer input with no range seen: integers all the same
    }
    round_to(inst.dtype, v);
  }
}

void KernelBenchProblem::perturb(Instance& inst, std::size_t t, std::size_t i) const {
  const KbShape sh = shape(inst.sizes, true);
  const KbTensor& d = sh.tensors.at(t);
  double& v = inst.tensors[t][i];
  if (d.condition == "index") {
    const auto low = static_cast<std::int64_t>(d.low), range = std::max<std::int64_t>(1, static_cast<std::int64_t>(d.high - d.low));
    v = static_cast<double>(low + (static_cast<std::int64_t>(v) - low + 1) % range);
  } else if (d.condition == "flag") {
    v = 1 - v;
  } else if (d.condition == "positive") {
    std::vector<double> moved{v < 1 ? v * 3 : v / 3};
    round_to(inst.dtype, moved);
    v = moved[0];
  } else {
    Problem::perturb(inst, t, i);
  }
}

void KernelBenchProblem::reference(const Instance& inst, std::vector<std::vector<double>>& out,
                                   std::vector<std::vector<double>>& magnitude) const {
  std::vector<const std::vector<double>*> ins;
  for (std::size_t t = 0; t < specs_.size(); ++t)
    if (specs_[t].role == Role::in) ins.push_back(&inst.tensors[t]);
  std::vector<std::vector<double>> reply;
  (void)call({{"op", "reference"}, {"sizes", inst.sizes}}, ins, &reply);
  out.clear();
  magnitude.clear();
  for (std::size_t k = 0; k + 1 < reply.size(); k += 2) {
    out.push_back(std::move(reply[k]));
    magnitude.push_back(std::move(reply[k + 1]));
  }
  std::size_t outputs = 0;
  for (const auto& s : specs_) outputs += s.role != Role::in;
  if (out.size() != outputs)
    throw ProblemError(fmt::format("KernelBench problem {}: the reference returned {} outputs, not {}", path_,
                                   out.size(), outputs));
}

double KernelBenchProblem::reduction_length(const Sizes& s) const { return shape(s, true).length; }
double KernelBenchProblem::flops(const Sizes& s) const { return shape(s, true).flops; }

double KernelBenchProblem::bytes(const Sizes& s, DType t) const {
  double n = 0;
  for (const auto& k : shape(s).tensors) n += static_cast<double>(k.elements());
  return n * static_cast<double>(dtype_size(t));
}

std::function<void()> KernelBenchProblem::baseline(const Instance& inst, int threads) const {
  std::vector<const std::vector<double>*> ins;
  for (std::size_t t = 0; t < specs_.size(); ++t)
    if (specs_[t].role == Role::in) ins.push_back(&inst.tensors[t]);
  (void)call({{"op", "eager_prepare"}, {"sizes", inst.sizes}, {"threads", threads}}, ins);
  return [this] { (void)call({{"op", "eager_run"}}); };
}

std::vector<KbTrial> KernelBenchProblem::kernelbench_trials(const Sizes& s, int trials,
                                                                                int seed) const {
  const KbShape sh = shape(s);
  std::vector<std::vector<double>> blobs;
  (void)call({{"op", "kb_trials"}, {"sizes", s}, {"seed", seed}, {"trials", trials}}, {}, &blobs);
  const std::size_t per = sh.tensors.size();
  if (blobs.size() != per * static_cast<std::size_t>(trials))
    throw ProblemError(fmt::format("KernelBench problem {}: its trials returned {} tensors, not {}", path_,
                                   blobs.size(), per * trials));
  std::vector<KbTrial> out;
  for (int k = 0; k < trials; ++k) {
    KbTrial trial;
    trial.inst.sizes = s;
    trial.inst.dtype = DType::fp32;
    for (std::size_t t = 0; t < per; ++t) {
      auto& b = blobs[k * per + t];
      if (sh.tensors[t].role == Role::in) {
        trial.inst.tensors.push_back(std::move(b));
      } else {
        trial.inst.tensors.emplace_back(b.size(), 0.0);
        trial.expected.push_back(std::move(b));
      }
    }
    out.push_back(std::move(trial));
  }
  return out;
}

std::pair<double, double> KernelBenchProblem::eager_time(const Sizes& s, int runs, int threads) const {
  const auto r = call({{"op", "kb_time"}, {"sizes", s}, {"runs", runs}, {"threads", threads}});
  return {r.at("median_s").get<double>(), r.at("mean_s").get<double>()};
}

}  // namespace kforge
