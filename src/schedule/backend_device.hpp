#pragma once
// A real device for the schedule engine (include/kforge/schedule.hpp): the library's kernels of
// the launches' problems on a backend, prepared before the run, timed on the wall clock.
#include <map>
#include <string>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/schedule.hpp"

namespace kforge::schedule {

class BackendDevice {
 public:
  // Compiles and loads every distinct launch (throws UsageError for an unknown problem or sizes
  // its kernel refuses).
  BackendDevice(Backend& backend, const std::vector<Job>& jobs);
  ~BackendDevice();
  [[nodiscard]] Device device();
  // Each kernel's longest of three launches after a warm-up, taken while preparing it.
  [[nodiscard]] const Estimates& measured() const { return measured_; }

 private:
  struct Prepared;
  Backend& backend_;
  std::map<std::string, Prepared> prepared_;
  Estimates measured_;
};

}  // namespace kforge::schedule
