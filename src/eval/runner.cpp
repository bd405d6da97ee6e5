#include "eval/runner.hpp"

#include <cstring>

#include "kforge/verify.hpp"

namespace kforge {

void KernelRunner::load(const Instance& inst, bool poison_inout) {
  dtype_ = inst.dtype;
  const auto specs = problem_.tensors();
  buffers_.clear();  // fresh buffers, so nothing carries over from an earlier trial
  elements_.clear();
  args_.clear();
  const std::size_t esize = dtype_size(inst.dtype);
  for (std::size_t t = 0; t < specs.size(); ++t) {
    const std::size_t n = inst.tensors[t].size();
    std::vector<unsigned char> bytes(n * esize);
    const bool poison = specs[t].role == Role::out || (specs[t].role == Role::inout && poison_inout);
    if (poison) std::memset(bytes.data(), kPoisonByte, bytes.size());
    else encode(inst.dtype, inst.tensors[t], bytes.data());
    buffers_.push_back(backend_.alloc(std::max<std::size_t>(bytes.size(), 1)));
    backend_.write(*buffers_.back(), bytes.data(), bytes.size());
    elements_.push_back(n);
  }
  for (auto& b : buffers_) args_.push_back(Arg::buf(*b));
  for (const auto& name : problem_.size_names())
    args_.push_back(Arg::i(static_cast<std::int32_t>(inst.sizes.at(name))));
  for (const auto& name : problem_.scalar_names())
    args_.push_back(Arg::f(static_cast<float>(inst.scalars.at(name))));
}

double KernelRunner::launch() { return backend_.run(module_, geometry_, args_); }

std::vector<std::vector<double>> KernelRunner::outputs(std::vector<std::vector<bool>>& unwritten) {
  std::vector<std::vector<double>> out;
  unwritten.clear();
  const auto specs = problem_.tensors();
  const std::size_t esize = dtype_size(dtype_);
  for (std::size_t t = 0; t < specs.size(); ++t) {
    if (specs[t].role == Role::in) continue;
    std::vector<unsigned char> bytes(elements_[t] * esize);
    backend_.read(*buffers_[t], bytes.data(), bytes.size());
    std::vector<bool> poisoned(elements_[t]);
    for (std::size_t i = 0; i < elements_[t]; ++i) {
      bool all = true;
      for (std::size_t k = 0; k < esize; ++k) all = all && bytes[i * esize + k] == kPoisonByte;
      poisoned[i] = all;
    }
    std::vector<double> v(elements_[t]);
    decode(dtype_, bytes.data(), v);
    out.push_back(std::move(v));
    unwritten.push_back(std::move(poisoned));
  }
  return out;
}

}  // namespace kforge
