#pragma once
// A large buffer as an anonymous mapping of its own: its untouched pages read as zero and take
// no memory (the index_width check maps inputs of 8 GiB and writes only their last rows), it
// lies on 2 MiB pages where the kernel allows it, and a range of it can be folded onto a few
// pages (Backend::fold_region). The cpu backend keeps its buffers of 4 MiB and more this way;
// the opencl backend uses one as the host memory of its largest buffers on devices that share
// the host's memory (PoCL), so the same check runs there.
#include <cstddef>

namespace kforge {

class AnonymousMapping {
 public:
  explicit AnonymousMapping(std::size_t bytes);  // throws std::bad_alloc when the mapping fails
  ~AnonymousMapping();
  AnonymousMapping(const AnonymousMapping&) = delete;
  AnonymousMapping& operator=(const AnonymousMapping&) = delete;

  [[nodiscard]] unsigned char* data() const { return data_; }  // 2 MiB aligned
  // Maps one shared anonymous block of `period` bytes again over every period-long piece of
  // [offset, offset + bytes): each piece is then the same memory. False when the range or the
  // period is not in whole pages, or the kernel refuses.
  bool fold(std::size_t offset, std::size_t bytes, std::size_t period);

 private:
  unsigned char* map_ = nullptr;   // the whole mapping (data_ lies inside it)
  unsigned char* data_ = nullptr;
  std::size_t mapped_ = 0;
};

}  // namespace kforge
