#pragma once
// A search space: named parameters, each with a list of values, and the set of valid
// configurations. A configuration is a vector of indices into the value lists, so spaces of
// integers (a kernel spec), floats or strings (a recorded Kernel Tuner cache) look the same to
// a strategy.
//
// The valid set is never built from the Cartesian product. Parameters that share a constraint
// are joined into a group (the connected components of the constraint graph); each group's
// valid sub-assignments are enumerated by backtracking, a constraint being checked as soon as
// every parameter it reads is bound; the space is the product of the groups (the idea of KTT's
// configuration forest). So size, uniform sampling and rank <-> configuration are exact and
// cheap even when the product is huge.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kforge/kernel.hpp"

namespace kforge {

using Config = std::vector<int>;  // per parameter, the index of its value

struct SpaceParam {
  std::string name;
  std::vector<std::string> labels;  // each value as text
  std::vector<double> numbers;      // each value as a number (its index where it is not one)
};

// A small, exactly reproducible generator (splitmix64) for the strategies: same seed, same
// stream on every compiler and standard library. The seed is mixed into the starting state:
// splitmix64 steps its state by a constant, so a state that were an affine function of the
// seed would make seed k+1's stream seed k's shifted by one draw.
class SearchRng {
 public:
  explicit SearchRng(std::uint64_t seed);
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n);  // uniform in [0, n); n > 0
  double unit();                         // uniform in [0, 1)

 private:
  std::uint64_t state_;
};

enum class Neighbourhood {
  adjacent,  // one parameter moved to the previous or next value in its list
  hamming,   // one parameter changed to any other value
};

class Space {
 public:
  Space() = default;
  // The valid configurations of a kernel's space for these sizes. Throws UsageError when a
  // constraint names neither a parameter nor a size.
  static Space from_kernel(const KernelSpec& k, const Sizes& s);
  // Exactly these members (a recorded space); duplicates are an error.
  static Space from_members(std::vector<SpaceParam> params, const std::vector<Config>& members);

  [[nodiscard]] std::size_t dims() const { return params_.size(); }
  [[nodiscard]] const std::vector<SpaceParam>& params() const { return params_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }        // valid configurations
  [[nodiscard]] std::uint64_t product() const { return product_; }  // before constraints
  [[nodiscard]] std::size_t groups() const { return groups_.size(); }

  [[nodiscard]] bool contains(const Config& c) const { return rank(c).has_value(); }
  // Position in the enumeration order (groups in order, the first slowest); none if invalid.
  [[nodiscard]] std::optional<std::uint64_t> rank(const Config& c) const;
  [[nodiscard]] Config at(std::uint64_t rank) const;  // rank < size()
  [[nodiscard]] Config sample(SearchRng& rng) const;  // uniform over the valid set
  // The valid neighbours of `c`, in a fixed order.
  [[nodiscard]] std::vector<Config> neighbours(const Config& c, Neighbourhood n) const;
  // Each index scaled to [0, 1] by its list length (0 for a one-value parameter).
  [[nodiscard]] std::vector<double> normalized(const Config& c) const;

  // Kernel spaces: the configuration as parameter values, and back (none if a value is not
  // in its list or the configuration is invalid).
  [[nodiscard]] ParamValues values(const Config& c) const;
  [[nodiscard]] std::optional<Config> config_of(const ParamValues& p) const;
  [[nodiscard]] std::string label(const Config& c) const;  // "MR=6,NV=2"
  [[nodiscard]] int param_index(const std::string& name) const;  // -1 if absent

 private:
  struct VecHash {
    std::size_t operator()(const std::vector<int>& v) const;
  };
  struct Group {
    std::vector<int> dims;               // parameter indices, ascending
    std::vector<int> flat;               // members, dims.size() indices each
    std::unordered_map<std::vector<int>, std::uint32_t, VecHash> index;
    [[nodiscard]] std::uint64_t count() const { return dims.empty() ? 1 : flat.size() / dims.size(); }
  };
  void finish();  // fills index_, size_, product_

  std::vector<SpaceParam> params_;
  std::vector<Group> groups_;
  std::uint64_t size_ = 0, product_ = 1;
};

}  // namespace kforge
