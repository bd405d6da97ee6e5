#pragma once
// Where the kforge-worker binary is, for whoever starts one (isolate.cpp, the race worker).
#include <string>

namespace kforge {

// $KFORGE_WORKER, else the kforge-worker beside this executable, else the build's.
[[nodiscard]] std::string worker_path();

}  // namespace kforge
