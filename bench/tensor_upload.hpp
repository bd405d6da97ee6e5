#pragma once
// A bench program's device buffers from host values: each tensor in its storage type (the
// instance's dtype, or the tensor's own: int32 for sparse pointers and indices,
// TensorSpec::storage), as kforge's runner lays them out.
#include <algorithm>
#include <memory>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/dtype.hpp"
#include "kforge/problem.hpp"

namespace kforge::bench {

// A device buffer holding `v` in type `t` (`n` elements, zeros past v's end: an output; at
// least one element, so an empty tensor still has an address).
inline std::unique_ptr<Buffer> upload(Backend& backend, const std::vector<double>& v, std::size_t n = 0,
                                      DType t = DType::fp32) {
  std::vector<double> padded(std::max({n, v.size(), std::size_t{1}}), 0.0);
  std::copy(v.begin(), v.end(), padded.begin());
  std::vector<unsigned char> bytes(padded.size() * dtype_size(t));
  encode(t, padded, bytes.data());
  auto b = backend.alloc(bytes.size());
  backend.write(*b, bytes.data(), bytes.size());
  return b;
}
// Tensor `t` of `in` in its storage type, all its elements (an output or scratch tensor, which
// the instance leaves empty or holds as zeros, sized by the problem).
inline std::unique_ptr<Buffer> upload(Backend& backend, const Problem& p, const Instance& in, std::size_t t) {
  return upload(backend, in.tensors[t], static_cast<std::size_t>(p.tensor_elements(t, in.sizes)),
                storage_dtype(p.tensors().at(t), in.dtype));
}

}  // namespace kforge::bench
