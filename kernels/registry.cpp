// The library's problems: one line per kernel family.
#include "kforge/problem.hpp"

namespace kforge {

std::shared_ptr<Problem> make_gemm_problem();
std::shared_ptr<Problem> make_scan_problem(const std::string& name);  // kernels/scan
std::shared_ptr<Problem> make_moe_problem();  // kernels/moe

const std::vector<std::shared_ptr<Problem>>& problems() {
  static const std::vector<std::shared_ptr<Problem>> all = {
      make_gemm_problem(),
      make_scan_problem("scan.linear"),
      make_scan_problem("scan.linear_rev"),
      make_scan_problem("scan.discounted_return"),
      make_scan_problem("scan.gae"),
      make_scan_problem("scan.td_lambda"),
      make_scan_problem("scan.vtrace"),
      make_scan_problem("scan.retrace"),
      make_scan_problem("scan.tree_backup"),
      make_scan_problem("scan.nstep"),
      make_moe_problem(),
  };
  return all;
}

}  // namespace kforge
