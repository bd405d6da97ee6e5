// The parts of a FileProblem that run the file's own code or act on values: the reference and
// the conditioning hook (each in a forked child), declared conditions, perturbation, baseline.
#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"
#include "problem/file_problem.hpp"
#include "problem/native_code.hpp"

namespace kforge {
namespace {

using ReferenceFn = void (*)(double* const*, const long long*, const double*);
using ConditionFn = void (*)(double* const*, const long long*, unsigned long long, int);
using BaselineFn = void (*)(float* const*, const int*, const float*, int);

// Streams of the conditioning draws, apart from those of fill_random (trial * 1000 + tensor).
// flag and probability use the scan family's streams, so a problem re-expressed as a file
// draws exactly the inputs of its compiled-in twin.
constexpr std::uint64_t kIndexStream = 6000, kFlagStream = 7000, kProbStream = 9000,
                        kSparseStream = 10000;

std::int64_t index_range(const TensorDecl& t, const Sizes& s, std::int64_t& low) {
  low = t.low->eval(s);
  return t.high->eval(s) - low;
}

// Sorts each row (the last dimension) of a tensor ascending.
void sort_rows(std::vector<double>& v, std::int64_t row) {
  if (row < 1) return;
  for (std::size_t r = 0; r + row <= v.size(); r += row) std::sort(v.begin() + r, v.begin() + r + row);
}

}  // namespace

void FileProblem::condition_inputs(Instance& inst, std::uint64_t seed, int trial) const {
  const std::uint64_t tr = static_cast<std::uint64_t>(trial);
  for (std::size_t t = 0; t < f_.tensors.size(); ++t) {
    const TensorDecl& d = f_.tensors[t];
    auto& v = inst.tensors[t];
    switch (d.condition) {
      case Condition::none: break;
      case Condition::index: {
        std::int64_t low = 0;
        const std::int64_t range = index_range(d, inst.sizes, low);
        if (range < 1)
          throw UsageError(fmt::format("tensor {} of problem {} holds indices in an empty range at these sizes",
                                       d.name, f_.name));
        for (std::size_t i = 0; i < v.size(); ++i)
          v[i] = low + std::min<std::int64_t>(range - 1, static_cast<std::int64_t>(random_unit(seed, kIndexStream + 1000 * tr + t, i) * range));
        break;
      }
      case Condition::flag:
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = random_unit(seed, kFlagStream + 1000 * tr + t, i) < d.p;
        break;
      case Condition::probability:
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(random_unit(seed, kProbStream + t, i));
        break;
      case Condition::positive:
        for (auto& x : v) x = x == 0 ? 1 : std::fabs(x);
        break;
      case Condition::sorted:
        sort_rows(v, d.shape.back().eval(inst.sizes));
        break;
      case Condition::sparse:
        for (std::size_t i = 0; i < v.size(); ++i)
          if (random_unit(seed, kSparseStream + 1000 * tr + t, i) >= d.density) v[i] = 0;
        break;
    }
  }
  if (condition_) {
    auto fn = reinterpret_cast<ConditionFn>(condition_->symbol("kforge_condition"));
    std::vector<std::size_t> inputs;
    std::vector<std::unique_ptr<SharedDoubles>> shared;
    std::vector<double*> args;
    for (std::size_t t = 0; t < f_.tensors.size(); ++t) {
      if (f_.tensors[t].role == Role::out) continue;
      inputs.push_back(t);
      shared.push_back(std::make_unique<SharedDoubles>(inst.tensors[t].size()));
      std::copy(inst.tensors[t].begin(), inst.tensors[t].end(), shared.back()->data());
      args.push_back(shared.back()->data());
    }
    std::vector<long long> s;
    for (const auto& d : f_.sizes) s.push_back(inst.sizes.at(d.name));
    run_forked(fmt::format("the input conditioning {} of problem {}", f_.condition->function, f_.name),
               f_.timeout_s, [&] { fn(args.data(), s.data(), seed, trial); });
    for (std::size_t k = 0; k < inputs.size(); ++k)
      std::copy(shared[k]->data(), shared[k]->data() + shared[k]->size(), inst.tensors[inputs[k]].begin());
  }
  for (std::size_t t = 0; t < f_.tensors.size(); ++t)
    if (f_.tensors[t].role != Role::out) round_to(inst.dtype, inst.tensors[t]);
}

void FileProblem::perturb(Instance& inst, std::size_t t, std::size_t i) const {
  const TensorDecl& d = f_.tensors[t];
  double& v = inst.tensors[t][i];
  switch (d.condition) {
    case Condition::index: {
      std::int64_t low = 0;
      const std::int64_t range = index_range(d, inst.sizes, low);
      v = low + (static_cast<std::int64_t>(v) - low + 1) % std::max<std::int64_t>(range, 1);
      return;
    }
    case Condition::flag: v = 1 - v; return;
    case Condition::probability: v = v < 0.5 ? v + 0.5 : v - 0.5; return;
    case Condition::positive: {
      std::vector<double> moved{v < 1 ? v * 3 : v / 3};
      round_to(inst.dtype, moved);
      v = moved[0];
      return;
    }
    case Condition::sorted: {
      Problem::perturb(inst, t, i);
      sort_rows(inst.tensors[t], d.shape.back().eval(inst.sizes));
      return;
    }
    default: Problem::perturb(inst, t, i);
  }
}

void FileProblem::reference(const Instance& in, std::vector<std::vector<double>>& out,
                            std::vector<std::vector<double>>& magnitude) const {
  auto fn = reinterpret_cast<ReferenceFn>(reference_->symbol("kforge_reference"));
  // Outputs start as NaN: an element the reference never writes is found, not read as zero.
  const double unwritten = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::unique_ptr<SharedDoubles>> shared;  // each output, then its magnitude
  std::vector<double*> args;
  for (std::size_t t = 0; t < f_.tensors.size(); ++t) {
    auto& v = in.tensors[t];
    if (f_.tensors[t].role == Role::in) {
      args.push_back(const_cast<double*>(v.data()));  // the child's copy-on-write view
      continue;
    }
    for (int part = 0; part < 2; ++part) {
      shared.push_back(std::make_unique<SharedDoubles>(v.size()));
      double* p = shared.back()->data();
      if (part == 0 && f_.tensors[t].role == Role::inout) std::copy(v.begin(), v.end(), p);
      else std::fill(p, p + v.size(), unwritten);
      args.push_back(p);
    }
  }
  std::vector<long long> s;
  for (const auto& d : f_.sizes) s.push_back(in.sizes.at(d.name));
  std::vector<double> x;
  for (const auto& d : f_.scalars) x.push_back(in.scalars.at(d.name));
  const std::string what = fmt::format("the reference {} of problem {}", f_.reference.function, f_.name);
  run_forked(what, f_.timeout_s, [&] { fn(args.data(), s.data(), x.data()); });
  out.clear();
  magnitude.clear();
  std::size_t k = 0;
  for (const auto& d : f_.tensors) {
    if (d.role == Role::in) continue;
    for (int part = 0; part < 2; ++part, ++k) {
      const double* p = shared[k]->data();
      const std::size_t n = shared[k]->size();
      const std::size_t bad = std::find_if(p, p + n, [](double e) { return std::isnan(e); }) - p;
      if (bad < n)
        throw ProblemError(fmt::format("{} left {}{}[{}] unwritten or NaN: a reference must fill every "
                                       "element of each output and of its magnitude",
                                       what, d.name, part ? "_magnitude" : "", bad));
      (part ? magnitude : out).emplace_back(p, p + n);
    }
  }
}

void FileProblem::load_native_code() const {
  (void)reference_->symbol("kforge_reference");
  if (condition_) (void)condition_->symbol("kforge_condition");
  if (baseline_) (void)baseline_->symbol("kforge_baseline");
}

std::function<void()> FileProblem::baseline(const Instance& in, int threads) const {
  if (!baseline_) return {};
  auto fn = reinterpret_cast<BaselineFn>(baseline_->symbol("kforge_baseline"));
  auto data = std::make_shared<std::vector<std::vector<float>>>();
  for (const auto& t : in.tensors) data->emplace_back(t.begin(), t.end());
  auto sizes = std::make_shared<std::vector<int>>();
  for (const auto& d : f_.sizes) sizes->push_back(static_cast<int>(in.sizes.at(d.name)));
  auto scalars = std::make_shared<std::vector<float>>();
  for (const auto& d : f_.scalars) scalars->push_back(static_cast<float>(in.scalars.at(d.name)));
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  return [=] {
    std::vector<float*> t;
    for (auto& v : *data) t.push_back(v.data());
    fn(t.data(), sizes->data(), scalars->data(), n);
  };
}

}  // namespace kforge
