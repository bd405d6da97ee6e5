// The parts of a FileProblem that run the file's own code or act on values: the reference and
// the conditioning hook (each in a forked child), declared conditions, perturbation, baseline.
#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"
#include "problem/draw_streams.hpp"
#include "problem/file_problem.hpp"
#include "problem/native_code.hpp"
#include "problem/native_host.hpp"

namespace kforge {
namespace {

using BaselineFn = void (*)(float* const*, const int*, const float*, int);

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
    std::vector<NativeBuffer> buffers;  // every input, changed in place by the hook
    for (std::size_t t = 0; t < f_.tensors.size(); ++t)
      if (is_input(f_.tensors[t].role)) buffers.push_back({inst.tensors[t].data(), inst.tensors[t].size(), true});
    NativeArgs a{size_values(inst.sizes), {}, seed, trial};
    run_native(NativeEntry::condition,
               fmt::format("the input conditioning {} of problem {}", f_.condition->function, f_.name), buffers, a);
  }
  for (std::size_t t = 0; t < f_.tensors.size(); ++t)
    if (is_input(f_.tensors[t].role)) round_to(f_.tensors[t].type.value_or(inst.dtype), inst.tensors[t]);
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
  // Outputs start as NaN: an element the reference never writes is found, not read as zero.
  const double unwritten = std::numeric_limits<double>::quiet_NaN();
  out.clear();
  magnitude.clear();
  for (std::size_t t = 0; t < f_.tensors.size(); ++t) {
    if (!is_output(f_.tensors[t].role)) continue;
    const auto& v = in.tensors[t];
    out.push_back(f_.tensors[t].role == Role::inout ? v : std::vector<double>(v.size(), unwritten));
    magnitude.emplace_back(v.size(), unwritten);
  }
  std::vector<NativeBuffer> buffers;  // each input, then each output and its magnitude; no scratch
  for (std::size_t t = 0, k = 0; t < f_.tensors.size(); ++t) {
    if (f_.tensors[t].role == Role::scratch) continue;
    if (f_.tensors[t].role == Role::in) {
      buffers.push_back({const_cast<double*>(in.tensors[t].data()), in.tensors[t].size(), false});
      continue;
    }
    buffers.push_back({out[k].data(), out[k].size(), true});
    buffers.push_back({magnitude[k].data(), magnitude[k].size(), true});
    ++k;
  }
  std::vector<double> x;
  for (const auto& d : f_.scalars) x.push_back(in.scalars.at(d.name));
  const std::string what = fmt::format("the reference {} of problem {}", f_.reference.function, f_.name);
  run_native(NativeEntry::reference, what, buffers, {size_values(in.sizes), x});
  std::size_t k = 0;
  for (const auto& d : f_.tensors) {
    if (!is_output(d.role)) continue;
    for (int part = 0; part < 2; ++part) {
      const auto& v = part ? magnitude[k] : out[k];
      const std::size_t bad = std::find_if(v.begin(), v.end(), [](double e) { return std::isnan(e); }) - v.begin();
      if (bad < v.size())
        throw ProblemError(fmt::format("{} left {}{}[{}] unwritten or NaN: a reference must fill every "
                                       "element of each output and of its magnitude",
                                       what, d.name, part ? "_magnitude" : "", bad));
    }
    ++k;
  }
}

std::vector<long long> FileProblem::size_values(const Sizes& sizes) const {
  std::vector<long long> s;
  for (const auto& d : f_.sizes) s.push_back(sizes.at(d.name));
  return s;
}

// In the problem's native host when the worker started one (before its sandbox), else in a
// forked child of this process: either way a crash or a hang is the problem's, not ours.
void FileProblem::run_native(NativeEntry e, const std::string& what, std::vector<NativeBuffer>& buffers,
                             const NativeArgs& a) const {
  if (host_) return host_->call(e, what, f_.timeout_s, buffers, a);
  NativeCode& code = e == NativeEntry::reference ? *reference_ : *condition_;
  void* fn = code.symbol(e == NativeEntry::reference ? "kforge_reference" : "kforge_condition");
  std::vector<std::unique_ptr<SharedDoubles>> shared;  // what the child hands back
  std::vector<double*> pointers;
  for (auto& b : buffers) {
    if (!b.write_back) {
      pointers.push_back(b.data);  // the child's copy-on-write view
      continue;
    }
    shared.push_back(std::make_unique<SharedDoubles>(b.size));
    std::copy(b.data, b.data + b.size, shared.back()->data());
    pointers.push_back(shared.back()->data());
  }
  run_forked(what, f_.timeout_s, [&] { invoke_native(e, fn, pointers.data(), a); });
  for (std::size_t k = 0, j = 0; k < buffers.size(); ++k)
    if (buffers[k].write_back) std::copy(shared[j]->data(), shared[j]->data() + buffers[k].size, buffers[k].data), ++j;
}

void FileProblem::start_native_host() const {
  if (host_) return;
  std::vector<std::pair<std::string, std::string>> entries{{reference_->compile(), "kforge_reference"}};
  entries.emplace_back(condition_ ? condition_->compile() : "", "kforge_condition");
  if (baseline_) (void)baseline_->symbol("kforge_baseline");  // timed here, beside the kernel
  host_ = std::make_unique<NativeHost>(native_host_program(), entries);
}

std::function<void()> FileProblem::baseline(const Instance& in, int threads) const {
  if (!baseline_) return {};
  auto fn = reinterpret_cast<BaselineFn>(baseline_->symbol("kforge_baseline"));
  auto data = std::make_shared<std::vector<std::vector<float>>>();
  for (std::size_t t = 0; t < f_.tensors.size(); ++t)  // a scratch tensor: room of its size, zeros
    if (f_.tensors[t].role == Role::scratch) data->emplace_back(static_cast<std::size_t>(tensor_elements(t, in.sizes)));
    else data->emplace_back(in.tensors[t].begin(), in.tensors[t].end());
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
