#include "eval/runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "kforge/util.hpp"
#include "verify/poison.hpp"

namespace kforge {

void KernelRunner::load(const Instance& inst, bool poison_inout) { fill(inst, poison_inout, false); }

std::size_t KernelRunner::elements(const std::vector<TensorSpec>& specs, std::size_t t, const Instance& inst) const {
  // A scratch tensor has no values in the instance: its size is the problem's.
  return specs[t].role == Role::scratch ? static_cast<std::size_t>(problem_.tensor_elements(t, inst.sizes))
                                        : inst.tensors[t].size();
}

void KernelRunner::refill(const Instance& inst, bool poison_inout) {
  const auto specs = problem_.tensors();
  bool same = tensors_.size() == inst.tensors.size() && inst.dtype == dtype_;
  for (std::size_t t = 0; same && t < tensors_.size(); ++t) same = tensors_[t].elements == elements(specs, t, inst);
  if (!same) throw std::logic_error("KernelRunner::refill: the instance does not fit the loaded buffers");
  fill(inst, poison_inout, true);
}

void KernelRunner::fill(const Instance& inst, bool poison_inout, bool same_buffers) {
  dtype_ = inst.dtype;
  const auto specs = problem_.tensors();
  // The old buffers stay alive until the new ones exist, so no address repeats: a kernel
  // cannot recognise a trial by its pointers (unless the very same buffers are asked for).
  std::vector<Tensor> fresh;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    Tensor x;
    x.spec = specs[t];
    x.dtype = storage_dtype(specs[t], inst.dtype);
    x.elements = elements(specs, t, inst);
    const std::size_t bytes = x.elements * x.esize();
    // Guard bands hold a NaN pattern, so a value read out of bounds poisons what it touches.
    x.image.resize(bytes + 2 * kGuardBytes);
    fill_guard(x.dtype, x.image.data(), kGuardBytes);
    fill_guard(x.dtype, x.image.data() + kGuardBytes + bytes, kGuardBytes);
    unsigned char* body = x.image.data() + kGuardBytes;
    const bool poison = specs[t].role == Role::out || specs[t].role == Role::scratch ||
                        (specs[t].role == Role::inout && poison_inout);
    if (poison) fill_poison(x.dtype, body, bytes);
    else encode(x.dtype, inst.tensors[t], body);
    x.buffer = same_buffers ? std::move(tensors_[t].buffer) : backend_.alloc(x.image.size());
    backend_.write(*x.buffer, x.image.data(), x.image.size());
    fresh.push_back(std::move(x));
  }
  tensors_ = std::move(fresh);
  bind_args(inst.sizes, inst.scalars);
}

namespace {

// Eight windows of `len` elements in a sampled output's first `prefix` elements: the first, the
// last (just before the live rows) and six drawn from the live inputs' bits (a new set for every
// seed, and a kernel cannot know them before it runs).
std::vector<std::pair<std::size_t, std::size_t>> sample_windows(std::size_t prefix, std::size_t len,
                                                                const Instance& live) {
  std::vector<std::pair<std::size_t, std::size_t>> w;
  if (prefix == 0) return w;
  len = std::min(len, prefix);
  std::uint64_t h = 0x6a09e667f3bcc908ull;
  for (const auto& t : live.tensors)
    for (std::size_t i = 0; i < std::min<std::size_t>(t.size(), 8); ++i) {
      std::uint64_t b;
      std::memcpy(&b, &t[i], 8);
      h = (h ^ b) * 0x9e3779b97f4a7c15ull;
      h ^= h >> 31;
    }
  std::vector<std::size_t> starts{0, prefix - len};
  for (int k = 0; k < 6; ++k) {
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull + 0x9e3779b97f4a7c15ull;
    starts.push_back(static_cast<std::size_t>(h % (prefix - len + 1)));
  }
  std::sort(starts.begin(), starts.end());
  for (std::size_t s : starts) {  // overlapping windows merged: every element read once
    if (!w.empty() && s <= w.back().first + w.back().second)
      w.back().second = std::max(w.back().second, s + len - w.back().first);
    else
      w.emplace_back(s, len);
  }
  return w;
}

}  // namespace

// A growing input of at least this size is mapped, not written (load_wide).
constexpr std::size_t kUnwrittenFrom = std::size_t{1} << 30;

void KernelRunner::load_wide(const Instance& live, const Sizes& wide, bool poison_inout, bool fold) {
  dtype_ = live.dtype;
  const auto specs = problem_.tensors();
  std::vector<Tensor> fresh;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    Tensor x;
    x.spec = specs[t];
    x.dtype = storage_dtype(specs[t], live.dtype);
    const std::size_t esize = x.esize();
    x.elements = static_cast<std::size_t>(problem_.tensor_elements(t, wide));
    const std::size_t n_live = specs[t].role == Role::scratch ? 0 : live.tensors[t].size();
    if (x.elements < n_live) throw std::logic_error("KernelRunner::load_wide: a tensor shrank at the wide sizes");
    const bool poison = specs[t].role == Role::out || specs[t].role == Role::scratch ||
                        (specs[t].role == Role::inout && poison_inout);
    // Left unwritten (its zeros the backend's: Backend::sparse_buffers) only where it is large
    // enough to be a sparse buffer on every backend that has them (cpu: 4 MiB, opencl: 1 GiB);
    // a smaller input that grew (moe's ids and gate, scan's bootstrap values) may sit in reused
    // heap memory, so it is written whole, its zeros included.
    const bool mapped = specs[t].role == Role::in && x.elements > n_live && x.elements * esize >= kUnwrittenFrom;
    const bool sampled = poison && x.elements > n_live && x.elements * esize >= kWideSampledOutputBytes;
    x.zero_prefix = mapped || sampled ? x.elements - n_live : 0;
    if (sampled && !fold) x.samples = sample_windows(x.zero_prefix, std::max<std::size_t>(n_live, 1), live);
    const std::size_t bytes = x.elements * esize, shown = (x.elements - x.zero_prefix) * esize;
    x.image.assign(shown + 2 * kGuardBytes, 0);  // outputs are small: written whole, zeros first
    fill_guard(x.dtype, x.image.data(), kGuardBytes);
    fill_guard(x.dtype, x.image.data() + kGuardBytes + shown, kGuardBytes);
    unsigned char* body = x.image.data() + kGuardBytes;
    if (poison) fill_poison(x.dtype, body, shown);
    else encode(x.dtype, live.tensors[t], body + shown - n_live * esize);
    x.buffer = backend_.alloc(bytes + 2 * kGuardBytes);  // may throw std::bad_alloc: the check is skipped
    if (sampled && fold) {
      // The period: whole live parts (whole rows, so every folded row's elements sit in their
      // own columns), about 16 MiB, in whole pages.
      const std::size_t part = std::max<std::size_t>(n_live * esize, 1);
      const std::size_t period = part * std::max<std::size_t>(1, (std::size_t{16} << 20) / part);
      x.folded = period % 4096 == 0 && backend_.fold_region(*x.buffer, kGuardBytes, x.zero_prefix * esize, period);
      if (!x.folded)
        throw std::domain_error(fmt::format("the {} backend cannot fold {} (its live part is {} bytes, not whole "
                                             "pages)", backend_.name(), x.spec.name, part));
    }
    if (mapped || sampled) {
      backend_.write_region(*x.buffer, 0, x.image.data(), kGuardBytes);
      backend_.write_region(*x.buffer, kGuardBytes + x.zero_prefix * esize, body, shown + kGuardBytes);
      if (sampled) {  // the windows poisoned like the live rows; the rest is the kernel's to write
        std::vector<unsigned char> poison_bytes;
        for (const auto& [first, count] : x.samples) {
          poison_bytes.resize(count * esize);
          fill_poison(x.dtype, poison_bytes.data(), poison_bytes.size());
          backend_.write_region(*x.buffer, kGuardBytes + first * esize, poison_bytes.data(), poison_bytes.size());
        }
      }
    } else {
      backend_.write(*x.buffer, x.image.data(), x.image.size());
    }
    fresh.push_back(std::move(x));
  }
  tensors_ = std::move(fresh);
  bind_args(wide, live.scalars);
}

void KernelRunner::bind_args(const Sizes& sizes, const Scalars& scalars) {
  args_.clear();
  for (auto& x : tensors_)
    args_.push_back(Arg::buf(*x.buffer, kGuardBytes, std::max<std::size_t>(x.elements * x.esize(), 1)));
  for (const auto& name : problem_.size_names())
    args_.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(name))));
  for (const auto& name : problem_.scalar_names())
    args_.push_back(Arg::f(static_cast<float>(scalars.at(name))));
}

void KernelRunner::restore_outputs() {
  for (auto& x : tensors_) {
    if (!is_written(x.spec.role)) continue;
    if (x.zero_prefix > 0) throw std::logic_error("KernelRunner::restore_outputs: a sampled output is run once");
    backend_.write(*x.buffer, x.image.data(), x.image.size());
  }
}

void KernelRunner::restore_scratch() {
  for (auto& x : tensors_)
    if (x.spec.role == Role::scratch) backend_.write(*x.buffer, x.image.data(), x.image.size());
}

bool KernelRunner::has_scratch() const {
  return std::any_of(tensors_.begin(), tensors_.end(), [](const Tensor& x) { return x.spec.role == Role::scratch; });
}

double KernelRunner::launch() { return backend_.run(module_, geometry_, args_); }

namespace {

// A 64 KiB block of 8-byte words hashed in four independent multiply-xor lanes: several GB/s
// per core, so hashing a timed run's tensors costs about as much as reading them back.
std::uint64_t hash_block(const unsigned char* p, std::size_t words) {
  std::uint64_t lane[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
                           0x082efa98ec4e6c89ull};
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v;
    std::memcpy(&v, p + 8 * w, 8);
    std::uint64_t& h = lane[w & 3];
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return lane[0] ^ (lane[1] * 3) ^ (lane[2] * 5) ^ (lane[3] * 7);
}

}  // namespace

const std::vector<unsigned char>& KernelRunner::read_back(const Tensor& x) {
  // Whole 8-byte words: the bytes past the end read as zeros. The buffer is kept from call to
  // call: fresh pages for every timed run's hundreds of megabytes cost more than the copy.
  readback_.resize(x.image.size() + 8);
  if (x.zero_prefix > 0) {  // the guard, then the live part and the guard: the image's layout
    backend_.read_region(*x.buffer, 0, readback_.data(), kGuardBytes);
    backend_.read_region(*x.buffer, kGuardBytes + x.zero_prefix * x.esize(), readback_.data() + kGuardBytes,
                         x.image.size() - kGuardBytes);
  } else {
    backend_.read(*x.buffer, readback_.data(), x.image.size());
  }
  std::memset(readback_.data() + x.image.size(), 0, 8);
  return readback_;
}

KernelOutput KernelRunner::outputs() {
  KernelOutput out;
  out.fp_environment = backend_.launch_fp_environment_change();
  for (const auto& x : tensors_) {
    const std::size_t esize = x.esize();
    const auto& now = read_back(x);
    const std::size_t body = (x.elements - x.zero_prefix) * esize, end = kGuardBytes + body;
    // Guard bands: report the farthest damaged byte on each side.
    std::size_t before = 0, after = 0;
    for (std::size_t i = 0; i < kGuardBytes; ++i)
      if (now[i] != x.image[i]) { before = kGuardBytes - i; break; }
    for (std::size_t i = x.image.size(); i-- > end;)
      if (now[i] != x.image[i]) { after = i - end + 1; break; }
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
    if (x.spec.role == Role::scratch) continue;  // its guards only: what it holds is the kernel's
    // Threads take whole blocks of 64 elements: a vector<bool> packs 64 flags in one word, and
    // two threads must never write the same word.
    const std::size_t shown = x.elements - x.zero_prefix;  // the live part (all of it unless sampled)
    std::vector<bool> poisoned(shown);
    const unsigned char* first = now.data() + kGuardBytes;
    parallel_for(static_cast<std::int64_t>((shown + 63) / 64), [&](std::int64_t b, std::int64_t e) {
      const std::size_t stop = std::min(shown, static_cast<std::size_t>(e) * 64);
      for (std::size_t i = static_cast<std::size_t>(b) * 64; i < stop; ++i)
        poisoned[i] = is_untouched(x.dtype, first + i * esize);
    }, 1 << 10);
    std::vector<double> v(x.elements - x.zero_prefix);
    decode(x.dtype, first, v);
    // Where each written NaN came from (a NaN result is rare: this pass costs one compare each).
    KernelOutput::NaNTrace trace;
    for (std::size_t i = 0; i < shown; ++i) {
      if (!std::isnan(v[i]) || poisoned[i]) continue;
      const NaNOrigin o = nan_origin(x.dtype, first + i * esize);
      const auto at = static_cast<std::int64_t>(x.zero_prefix + i);
      if (o == NaNOrigin::poison && trace.from_poison++ == 0) trace.first_from_poison = at;
      if (o == NaNOrigin::guard && trace.from_guard++ == 0) trace.first_from_guard = at;
    }
    std::vector<std::int64_t> where;
    if (!x.samples.empty()) {  // the windows first, then the live part: in element order
      std::vector<double> all;
      std::vector<bool> all_poisoned;
      std::vector<unsigned char> bytes;
      for (const auto& [at, count] : x.samples) {
        bytes.resize(count * esize);
        backend_.read_region(*x.buffer, kGuardBytes + at * esize, bytes.data(), bytes.size());
        std::vector<double> w(count);
        decode(x.dtype, bytes.data(), w);
        for (std::size_t i = 0; i < count; ++i) {
          const unsigned char* e = bytes.data() + i * esize;
          const bool untouched = is_untouched(x.dtype, e);
          if (std::isnan(w[i]) && !untouched) {
            const NaNOrigin o = nan_origin(x.dtype, e);
            const auto f = static_cast<std::int64_t>(at + i);
            if (o == NaNOrigin::poison && trace.from_poison++ == 0) trace.first_from_poison = f;
            if (o == NaNOrigin::guard && trace.from_guard++ == 0) trace.first_from_guard = f;
          }
          all.push_back(w[i]);
          all_poisoned.push_back(untouched);
          where.push_back(static_cast<std::int64_t>(at + i));
        }
      }
      for (std::size_t i = 0; i < shown; ++i) where.push_back(static_cast<std::int64_t>(x.zero_prefix + i));
      all.insert(all.end(), v.begin(), v.end());
      all_poisoned.insert(all_poisoned.end(), poisoned.begin(), poisoned.end());
      v = std::move(all);
      poisoned = std::move(all_poisoned);
    } else if (x.folded) {
      for (std::size_t i = 0; i < shown; ++i) where.push_back(static_cast<std::int64_t>(x.zero_prefix + i));
    } else if (x.zero_prefix > 0) {
      throw std::logic_error("KernelRunner::outputs: an output with a prefix that is not read back");
    }
    out.nan_traces.push_back(trace);
    out.tensors.push_back(std::move(v));
    out.unwritten.push_back(std::move(poisoned));
    out.flat_index.push_back(std::move(where));
  }
  return out;
}

std::uint64_t KernelRunner::fingerprint() {
  // Fixed blocks hashed on every core, their hashes folded in order: the same fingerprint
  // whatever the number of threads.
  constexpr std::size_t kBlockWords = 8192;
  std::uint64_t h = 0x452821e638d01377ull;
  std::vector<std::uint64_t> block_hash;
  for (const auto& x : tensors_) {
    const auto& now = read_back(x);
    if (x.spec.role == Role::scratch) {
      // Its guard bands only: what a kernel leaves in its workspace is no part of its result (a
      // racy but correct kernel would otherwise count a distinct result per run).
      const std::size_t end = x.image.size() - kGuardBytes;
      h = ((h ^ hash_block(now.data(), kGuardBytes / 8)) * 0x9e3779b97f4a7c15ull) ^ (h >> 31);
      h = ((h ^ hash_block(now.data() + end, kGuardBytes / 8)) * 0x9e3779b97f4a7c15ull) ^ (h >> 31);
      continue;
    }
    const std::size_t words = (x.image.size() + 7) / 8;
    block_hash.assign((words + kBlockWords - 1) / kBlockWords, 0);
    parallel_for(static_cast<std::int64_t>(block_hash.size()), [&](std::int64_t b, std::int64_t e) {
      for (auto k = static_cast<std::size_t>(b); k < static_cast<std::size_t>(e); ++k)
        block_hash[k] = hash_block(now.data() + 8 * k * kBlockWords, std::min(kBlockWords, words - k * kBlockWords));
    }, 16);
    for (std::uint64_t v : block_hash) h = ((h ^ v) * 0x9e3779b97f4a7c15ull) ^ (h >> 31);
  }
  return h;
}

}  // namespace kforge
