#pragma once
// Moves one problem instance onto a backend, launches a compiled kernel on it with the
// problem's ABI (tensors, then sizes as int, then scalars as float) and reads the outputs back.
// Every tensor sits between two guard bands, so writes out of bounds are seen, and input
// tensors are read back, so writes into an input are seen too.
#include <memory>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/problem.hpp"
#include "kforge/verify.hpp"

namespace kforge {

class KernelRunner {
 public:
  KernelRunner(Backend& b, Module& m, const Problem& p, const LaunchGeometry& g)
      : backend_(b), module_(m), problem_(p), geometry_(g) {}

  // Copies the instance in, at fresh buffers (never at the addresses of the previous load);
  // outputs (and inout tensors when asked) poisoned.
  void load(const Instance& inst, bool poison_inout);
  // The same, into the very buffers of the previous load (same sizes): the reused_buffers
  // check, which a cache keyed by a pointer must fail.
  void refill(const Instance& inst, bool poison_inout);
  // The index_width check's instance (Problem::wide_index_shape): `live`'s tensors, each one
  // that is larger at the `wide` sizes preceded by zeros. An input that grew is mapped, not
  // filled: only its guard bands and its live rows are written, the rest stays on the zero page
  // (Backend::sparse_buffers). An output that grew past kWideSampledOutputBytes is allocated
  // whole (the kernel writes it) but poisoned and read back only in its live rows and eight
  // windows of the rows before them (samples). Launches then use the wide sizes.
  // `fold` (the index_width proxy): such an output's rows before its live ones are folded onto
  // a few MiB (Backend::fold_region), so it takes address space only, and only its live rows
  // come back (no samples: a folded row holds whichever row was written last); throws
  // std::domain_error where the backend cannot fold.
  void load_wide(const Instance& live, const Sizes& wide, bool poison_inout, bool fold = false);
  // Puts every out/inout/scratch tensor back as load() left it, so a repeated run starts from
  // the same state (a scratch tensor poisoned again: nothing carried from run to run) and a run
  // that writes nothing leaves the poison for the verifier to find.
  void restore_outputs();
  // Puts the scratch tensors alone back (poison), for runs whose outputs need no restoring.
  void restore_scratch();
  [[nodiscard]] bool has_scratch() const;
  double launch();  // seconds on the backend's clock
  // Another runner of the same kernel with buffers of its own (`--cold` rotates among copies).
  [[nodiscard]] KernelRunner sibling() const { return {backend_, module_, problem_, geometry_}; }
  void set_geometry(const LaunchGeometry& g) { geometry_ = g; }
  // Out/inout tensors decoded (in order; scratch ones skipped), poison left unwritten, guard
  // and input damage (scratch tensors' guards included).
  [[nodiscard]] KernelOutput outputs();
  // A hash of every tensor as it is now on the device, guard bands included (a scratch
  // tensor's guard bands only): equal fingerprints, equal outputs() (cheap enough to take after
  // every timed run).
  [[nodiscard]] std::uint64_t fingerprint();

  static constexpr std::size_t kGuardBytes = 4096;  // each side; OpenCL sub-buffer alignment

 private:
  struct Tensor {
    std::unique_ptr<Buffer> buffer;
    std::vector<unsigned char> image;  // guard, contents as loaded, guard
    std::size_t elements = 0;
    // Elements before the live part that were never written (load_wide's mapped input); the
    // image then holds the guard, the live part and the guard only.
    std::size_t zero_prefix = 0;
    // A sampled output (load_wide: an output past kWideSampledOutputBytes): zero_prefix is the
    // part before its live rows that the kernel writes but the image does not hold; these windows
    // of it (first element, count) are poisoned before the run and read back after it.
    std::vector<std::pair<std::size_t, std::size_t>> samples;
    bool folded = false;  // the same, folded (load_wide's `fold`): no samples, the live rows only
    TensorSpec spec;
    DType dtype = DType::fp32;  // its storage: the instance's dtype, or the spec's own
    [[nodiscard]] std::size_t esize() const { return dtype_size(dtype); }
  };
  void fill(const Instance& inst, bool poison_inout, bool same_buffers);
  // Tensor t's element count: the instance's, or the problem's at its sizes for a scratch one.
  [[nodiscard]] std::size_t elements(const std::vector<TensorSpec>& specs, std::size_t t, const Instance& inst) const;
  // The kernel's arguments: every tensor's body, then the sizes, then the scalars.
  void bind_args(const Sizes& sizes, const Scalars& scalars);
  // The tensor's whole image (guards included) as it is now on the device, in readback_.
  const std::vector<unsigned char>& read_back(const Tensor& x);

  Backend& backend_;
  Module& module_;
  const Problem& problem_;
  LaunchGeometry geometry_;
  DType dtype_ = DType::fp32;  // the instance's
  std::vector<Tensor> tensors_;
  std::vector<Arg> args_;
  std::vector<unsigned char> readback_;
};

}  // namespace kforge
