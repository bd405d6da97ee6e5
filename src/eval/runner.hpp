#pragma once
// Moves one problem instance onto a backend, launches a compiled kernel on it with the
// problem's ABI (tensors, then sizes as int, then scalars as float) and reads the outputs back.
#include <memory>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/problem.hpp"

namespace kforge {

class KernelRunner {
 public:
  KernelRunner(Backend& b, Module& m, const Problem& p, const LaunchGeometry& g)
      : backend_(b), module_(m), problem_(p), geometry_(g) {}

  // Copies the instance in, at fresh buffers; outputs (and inout tensors when asked) poisoned.
  void load(const Instance& inst, bool poison_inout);
  double launch();  // seconds on the backend's clock
  // Out/inout tensors, decoded; `unwritten` marks elements that still hold the poison.
  std::vector<std::vector<double>> outputs(std::vector<std::vector<bool>>& unwritten);

 private:
  Backend& backend_;
  Module& module_;
  const Problem& problem_;
  LaunchGeometry geometry_;
  DType dtype_ = DType::fp32;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<std::size_t> elements_;
  std::vector<Arg> args_;
};

}  // namespace kforge
