#include "eval/runner.hpp"

#include <cstring>

#include <fmt/format.h>

namespace kforge {

void KernelRunner::load(const Instance& inst, bool poison_inout) {
  dtype_ = inst.dtype;
  const auto specs = problem_.tensors();
  const std::size_t esize = dtype_size(inst.dtype);
  // The old buffers stay alive until the new ones exist, so no address repeats: a kernel
  // cannot recognise a trial by its pointers.
  std::vector<Tensor> fresh;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    Tensor x;
    x.spec = specs[t];
    x.elements = inst.tensors[t].size();
    const std::size_t bytes = x.elements * esize;
    x.image.assign(bytes + 2 * kGuardBytes, kGuardByte);
    unsigned char* body = x.image.data() + kGuardBytes;
    const bool poison = specs[t].role == Role::out || (specs[t].role == Role::inout && poison_inout);
    if (poison) std::memset(body, kPoisonByte, bytes);
    else encode(inst.dtype, inst.tensors[t], body);
    x.buffer = backend_.alloc(x.image.size());
    backend_.write(*x.buffer, x.image.data(), x.image.size());
    fresh.push_back(std::move(x));
  }
  tensors_ = std::move(fresh);
  args_.clear();
  for (auto& x : tensors_)
    args_.push_back(Arg::buf(*x.buffer, kGuardBytes, std::max<std::size_t>(x.image.size() - 2 * kGuardBytes, 1)));
  for (const auto& name : problem_.size_names())
    args_.push_back(Arg::i(static_cast<std::int32_t>(inst.sizes.at(name))));
  for (const auto& name : problem_.scalar_names())
    args_.push_back(Arg::f(static_cast<float>(inst.scalars.at(name))));
}

void KernelRunner::restore_outputs() {
  for (auto& x : tensors_)
    if (x.spec.role != Role::in) backend_.write(*x.buffer, x.image.data(), x.image.size());
}

double KernelRunner::launch() { return backend_.run(module_, geometry_, args_); }

KernelOutput KernelRunner::outputs() {
  KernelOutput out;
  const std::size_t esize = dtype_size(dtype_);
  std::vector<unsigned char> now;
  for (const auto& x : tensors_) {
    now.resize(x.image.size());
    backend_.read(*x.buffer, now.data(), now.size());
    const std::size_t body = x.elements * esize, end = kGuardBytes + body;
    // Guard bands: report the farthest damaged byte on each side.
    std::size_t before = 0, after = 0;
    for (std::size_t i = 0; i < kGuardBytes; ++i)
      if (now[i] != kGuardByte) { before = kGuardBytes - i; break; }
    for (std::size_t i = now.size(); i-- > end;)
      if (now[i] != kGuardByte) { after = i - end + 1; break; }
    if (before || after) {
      ++out.guard_violations;
      out.guard_detail += fmt::format("{}{}: written {}", out.guard_detail.empty() ? "" : "; ",
                                      x.spec.name,
                                      before && after ? fmt::format("up to {} bytes before its start and {} bytes past its end", before, after)
                                      : before ? fmt::format("up to {} bytes before its start", before)
                                               : fmt::format("up to {} bytes past its end", after));
    }
    if (x.spec.role == Role::in) {
      if (std::memcmp(now.data() + kGuardBytes, x.image.data() + kGuardBytes, body) != 0)
        out.inputs_modified.push_back(x.spec.name);
      continue;
    }
    std::vector<bool> poisoned(x.elements);
    for (std::size_t i = 0; i < x.elements; ++i) {
      bool all = true;
      for (std::size_t k = 0; k < esize; ++k) all = all && now[kGuardBytes + i * esize + k] == kPoisonByte;
      poisoned[i] = all;
    }
    std::vector<double> v(x.elements);
    decode(dtype_, now.data() + kGuardBytes, v);
    out.tensors.push_back(std::move(v));
    out.unwritten.push_back(std::move(poisoned));
  }
  return out;
}

std::uint64_t KernelRunner::fingerprint() {
  // Four independent multiply-xor lanes over 8-byte words: several GB/s, so hashing a timed
  // run's tensors costs about as much as reading them back.
  std::uint64_t lane[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
                           0x082efa98ec4e6c89ull};
  std::vector<unsigned char> now;
  for (const auto& x : tensors_) {
    now.assign(x.image.size() + 32, 0);  // zero tail: whole words
    backend_.read(*x.buffer, now.data(), x.image.size());
    const std::size_t words = (x.image.size() + 7) / 8;
    for (std::size_t w = 0; w < words; ++w) {
      std::uint64_t v;
      std::memcpy(&v, now.data() + 8 * w, 8);
      std::uint64_t& h = lane[w & 3];
      h = (h ^ v) * 0x9e3779b97f4a7c15ull;
      h ^= h >> 29;
    }
  }
  return lane[0] ^ (lane[1] * 3) ^ (lane[2] * 5) ^ (lane[3] * 7);
}

}  // namespace kforge
