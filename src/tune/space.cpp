#include "kforge/space.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"

namespace kforge {

SearchRng::SearchRng(std::uint64_t seed) : state_(mix64(seed ^ 0x6b666f72ull)) {}

std::uint64_t SearchRng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t SearchRng::below(std::uint64_t n) {
  // Rejection keeps it exactly uniform.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

double SearchRng::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::size_t Space::VecHash::operator()(const std::vector<int>& v) const {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int x : v) h = (h ^ static_cast<std::uint32_t>(x)) * 0x100000001b3ull;
  return static_cast<std::size_t>(h);
}

namespace {

// Union-find over parameter indices.
int root(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

struct Attached {
  const Expr* expr;
  std::size_t depth;  // checked once the group's first depth+1 parameters are bound
};

// Backtracking over one group's parameters, checking each constraint at the depth where its
// last parameter is bound.
void enumerate_group(const KernelSpec& k, const std::vector<int>& dims,
                     const std::vector<std::vector<const Expr*>>& at_depth, Bindings& b,
                     std::vector<int>& idx, std::vector<int>& out) {
  const std::size_t depth = idx.size();
  if (depth == dims.size()) {
    out.insert(out.end(), idx.begin(), idx.end());
    return;
  }
  const Param& p = k.params[dims[depth]];
  for (std::size_t v = 0; v < p.values.size(); ++v) {
    b[p.name] = p.values[v];
    bool ok = true;
    for (const Expr* e : at_depth[depth]) {
      try {
        ok = e->eval(b) != 0;
      } catch (const UsageError&) {
        ok = false;  // a division by zero: this combination cannot be valid
      }
      if (!ok) break;
    }
    if (!ok) continue;
    idx.push_back(static_cast<int>(v));
    enumerate_group(k, dims, at_depth, b, idx, out);
    idx.pop_back();
  }
  b.erase(p.name);
}

}  // namespace

Space Space::from_kernel(const KernelSpec& k, const Sizes& s) {
  Space sp;
  const int n = static_cast<int>(k.params.size());
  for (const Param& p : k.params) {
    SpaceParam q{p.name, {}, {}};
    for (std::int64_t v : p.values) {
      q.labels.push_back(std::to_string(v));
      q.numbers.push_back(static_cast<double>(v));
    }
    sp.params_.push_back(std::move(q));
  }
  // Which parameters each constraint reads; join them.
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<std::vector<int>> reads(k.constraints.size());
  bool unsatisfiable = false;
  for (std::size_t c = 0; c < k.constraints.size(); ++c) {
    for (const std::string& name : k.constraints[c].names()) {
      const int i = sp.param_index(name);
      if (i >= 0) reads[c].push_back(i);
      else if (!s.count(name))
        throw UsageError("kernel " + k.name + ": constraint '" + k.constraints[c].text() +
                         "' reads '" + name + "', which is neither a parameter nor a size");
    }
    for (std::size_t j = 1; j < reads[c].size(); ++j)
      parent[root(parent, reads[c][j])] = root(parent, reads[c][0]);
    if (reads[c].empty()) {  // sizes only: it holds for every configuration or for none
      Bindings b(s.begin(), s.end());
      try {
        unsatisfiable |= k.constraints[c].eval(b) == 0;
      } catch (const UsageError&) {
        unsatisfiable = true;
      }
    }
  }
  std::vector<int> group_of(n, -1);
  for (int i = 0; i < n; ++i) {
    const int r = root(parent, i);
    if (group_of[r] < 0) {
      group_of[r] = static_cast<int>(sp.groups_.size());
      sp.groups_.push_back({});
    }
    sp.groups_[group_of[r]].dims.push_back(i);
  }
  for (Group& g : sp.groups_) {
    std::vector<std::vector<const Expr*>> at_depth(g.dims.size());
    for (std::size_t c = 0; c < k.constraints.size(); ++c) {
      if (reads[c].empty() || root(parent, reads[c][0]) != root(parent, g.dims[0])) continue;
      std::size_t depth = 0;
      for (int i : reads[c])
        depth = std::max<std::size_t>(depth, std::find(g.dims.begin(), g.dims.end(), i) - g.dims.begin());
      at_depth[depth].push_back(&k.constraints[c]);
    }
    Bindings b(s.begin(), s.end());
    std::vector<int> idx;
    if (!unsatisfiable) enumerate_group(k, g.dims, at_depth, b, idx, g.flat);
  }
  sp.finish();
  if (unsatisfiable) sp.size_ = 0;
  return sp;
}

Space Space::from_members(std::vector<SpaceParam> params, const std::vector<Config>& members) {
  Space sp;
  sp.params_ = std::move(params);
  Group g;
  for (std::size_t i = 0; i < sp.params_.size(); ++i) g.dims.push_back(static_cast<int>(i));
  for (const Config& c : members) {
    if (c.size() != sp.params_.size())
      throw UsageError("space member has " + std::to_string(c.size()) + " values, expected " +
                       std::to_string(sp.params_.size()));
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i] < 0 || c[i] >= static_cast<int>(sp.params_[i].labels.size()))
        throw UsageError("space member has an index out of range for parameter " + sp.params_[i].name);
    g.flat.insert(g.flat.end(), c.begin(), c.end());
  }
  if (!sp.params_.empty()) sp.groups_.push_back(std::move(g));
  sp.finish();
  if (sp.params_.empty()) sp.size_ = members.empty() ? 0 : 1;
  return sp;
}

void Space::finish() {
  size_ = 1;
  product_ = 1;
  for (const SpaceParam& p : params_) {
    if (product_ > UINT64_MAX / std::max<std::size_t>(1, p.labels.size())) product_ = UINT64_MAX;
    else product_ *= p.labels.size();
  }
  for (Group& g : groups_) {
    const std::size_t w = g.dims.size();
    for (std::uint64_t m = 0; m < g.count(); ++m) {
      std::vector<int> key(g.flat.begin() + m * w, g.flat.begin() + (m + 1) * w);
      if (!g.index.emplace(std::move(key), static_cast<std::uint32_t>(m)).second)
        throw UsageError("space has a duplicate configuration");
    }
    if (g.count() != 0 && size_ > UINT64_MAX / g.count())
      throw UsageError("space has more than 2^64 valid configurations");
    size_ *= g.count();
  }
}

std::optional<std::uint64_t> Space::rank(const Config& c) const {
  if (c.size() != params_.size() || size_ == 0) return std::nullopt;
  std::uint64_t r = 0;
  std::vector<int> key;
  for (const Group& g : groups_) {
    key.clear();
    for (int d : g.dims) key.push_back(c[d]);
    auto it = g.index.find(key);
    if (it == g.index.end()) return std::nullopt;
    r = r * g.count() + it->second;
  }
  return r;
}

Config Space::at(std::uint64_t rank) const {
  Config c(params_.size(), 0);
  for (std::size_t gi = groups_.size(); gi-- > 0;) {
    const Group& g = groups_[gi];
    const std::uint64_t m = rank % g.count();
    rank /= g.count();
    for (std::size_t j = 0; j < g.dims.size(); ++j) c[g.dims[j]] = g.flat[m * g.dims.size() + j];
  }
  return c;
}

Config Space::sample(SearchRng& rng) const {
  Config c(params_.size(), 0);
  for (const Group& g : groups_) {
    const std::uint64_t m = rng.below(g.count());
    for (std::size_t j = 0; j < g.dims.size(); ++j) c[g.dims[j]] = g.flat[m * g.dims.size() + j];
  }
  return c;
}

std::vector<Config> Space::neighbours(const Config& c, Neighbourhood n) const {
  std::vector<Config> out;
  auto consider = [&](std::size_t d, int v) {
    if (v < 0 || v >= static_cast<int>(params_[d].labels.size()) || v == c[d]) return;
    Config x = c;
    x[d] = v;
    if (contains(x)) out.push_back(std::move(x));
  };
  for (std::size_t d = 0; d < params_.size(); ++d) {
    if (n == Neighbourhood::adjacent) {
      consider(d, c[d] - 1);
      consider(d, c[d] + 1);
    } else {
      for (int v = 0; v < static_cast<int>(params_[d].labels.size()); ++v) consider(d, v);
    }
  }
  return out;
}

std::vector<double> Space::normalized(const Config& c) const {
  std::vector<double> x(c.size());
  for (std::size_t d = 0; d < c.size(); ++d) {
    const std::size_t n = params_[d].labels.size();
    x[d] = n > 1 ? static_cast<double>(c[d]) / static_cast<double>(n - 1) : 0.0;
  }
  return x;
}

ParamValues Space::values(const Config& c) const {
  ParamValues p;
  for (std::size_t d = 0; d < c.size(); ++d)
    p[params_[d].name] = static_cast<std::int64_t>(std::llround(params_[d].numbers[c[d]]));
  return p;
}

std::optional<Config> Space::config_of(const ParamValues& p) const {
  Config c(params_.size(), -1);
  for (std::size_t d = 0; d < params_.size(); ++d) {
    auto it = p.find(params_[d].name);
    if (it == p.end()) return std::nullopt;
    const auto& nums = params_[d].numbers;
    auto v = std::find(nums.begin(), nums.end(), static_cast<double>(it->second));
    if (v == nums.end()) return std::nullopt;
    c[d] = static_cast<int>(v - nums.begin());
  }
  if (!contains(c)) return std::nullopt;
  return c;
}

std::string Space::label(const Config& c) const {
  std::string out;
  for (std::size_t d = 0; d < c.size(); ++d)
    out += (d ? "," : "") + params_[d].name + "=" + params_[d].labels[c[d]];
  return out;
}

int Space::param_index(const std::string& name) const {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace kforge
