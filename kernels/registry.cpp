// The library's problems: one line per kernel family.
#include "kforge/problem.hpp"

namespace kforge {

std::shared_ptr<Problem> make_gemm_problem();
std::shared_ptr<Problem> make_conv2d_problem();

const std::vector<std::shared_ptr<Problem>>& problems() {
  static const std::vector<std::shared_ptr<Problem>> all = {
      make_gemm_problem(),
      make_conv2d_problem(),
  };
  return all;
}

}  // namespace kforge
