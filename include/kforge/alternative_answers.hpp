#pragma once
// A problem with more than one right answer (an index among values equal within rounding: the
// nearest neighbours in kernels/lazy_reduce) also derives from AlternativeAnswers. Before each
// comparison the verifier lets it replace elements of the reference by the kernel's where the
// kernel's are right too; every other element is compared as usual.
#include <vector>

#include "kforge/problem.hpp"

namespace kforge {

class AlternativeAnswers {
 public:
  virtual ~AlternativeAnswers() = default;
  // `got`: the kernel's out tensors; `ref`: a copy of the reference's, to edit.
  virtual void accept_alternatives(const Instance& inst, const std::vector<std::vector<double>>& got,
                                   std::vector<std::vector<double>>& ref) const = 0;
};

}  // namespace kforge
