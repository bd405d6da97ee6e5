#include "verify/progress.hpp"

#include <utility>

namespace kforge {

namespace {
std::function<void(const std::string&)>& hook() {
  static std::function<void(const std::string&)> h;
  return h;
}
}  // namespace

void set_verify_progress(std::function<void(const std::string& where)> h) { hook() = std::move(h); }

void verify_progress(const std::string& where) {
  if (hook()) hook()(where);
}

}  // namespace kforge
