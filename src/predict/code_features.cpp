// Features of the compiled code, had without running it: the instruction mix of the cpu
// backend's object (objdump's disassembly of its .text). Trees see what the compiler made of
// the parameters: whether the loops vectorized, at which width, how many FMAs per load.
#include <algorithm>
#include <sstream>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/subprocess.hpp"

namespace kforge {

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

struct Mix {
  double instructions = 0, fma = 0, vector = 0, loads = 0, stores = 0, branches = 0, calls = 0;
  double zmm = 0, ymm = 0, xmm = 0;
};

// One instruction in AT&T syntax ("vfmadd231ps (%rax),%zmm1,%zmm0": sources first, the
// destination last): a memory operand "(...)" read is a load, one in the last place a store.
void count(Mix& m, const std::string& mnemonic, const std::string& operands) {
  m.instructions += 1;
  if (starts_with(mnemonic, "vfmadd") || starts_with(mnemonic, "vfmsub") || starts_with(mnemonic, "vfnmadd") ||
      starts_with(mnemonic, "vfnmsub"))
    m.fma += 1;
  if (mnemonic[0] == 'v') m.vector += 1;
  if (mnemonic[0] == 'j') m.branches += 1;
  if (starts_with(mnemonic, "call")) m.calls += 1;
  if (operands.find("%zmm") != std::string::npos) m.zmm += 1;
  else if (operands.find("%ymm") != std::string::npos) m.ymm += 1;
  else if (operands.find("%xmm") != std::string::npos) m.xmm += 1;
  const auto paren = operands.find('(');
  if (paren == std::string::npos || starts_with(mnemonic, "lea") || starts_with(mnemonic, "nop") ||
      starts_with(mnemonic, "prefetch"))
    return;
  const auto last_comma = operands.rfind(',');
  const bool memory_last = last_comma != std::string::npos ? operands.find('(', last_comma) != std::string::npos
                                                           : mnemonic[0] != 'j' && !starts_with(mnemonic, "call");
  if (memory_last && last_comma != std::string::npos) m.stores += 1;
  else m.loads += 1;
}

}  // namespace

Features instruction_mix(const std::string& disassembly) {
  Mix m;
  std::istringstream in(disassembly);
  bool text = false;
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "Disassembly of section ")) {
      text = line.find(" .text:") != std::string::npos;
      continue;
    }
    if (!text) continue;
    // "    1139:\tvmovaps 0xec3(%rip),%ymm0" (objdump --no-show-raw-insn)
    const auto colon = line.find(":\t");
    if (colon == std::string::npos || line.find_first_not_of(" 0123456789abcdef") != colon) continue;
    std::string rest = line.substr(colon + 2);
    const auto comment = rest.find('#');
    if (comment != std::string::npos) rest.resize(comment);
    std::istringstream words(rest);
    std::string mnemonic, operands;
    if (!(words >> mnemonic)) continue;
    if (mnemonic == "rep" || mnemonic == "lock" || mnemonic == "notrack" || mnemonic == "bnd") words >> mnemonic;
    std::getline(words, operands);
    count(m, mnemonic, operands);
  }
  Features f;
  f.add("code_instructions", m.instructions);
  f.add("code_vector_instructions", m.vector);
  f.add("code_vector_fma", m.fma);
  f.add("code_loads", m.loads);
  f.add("code_stores", m.stores);
  f.add("code_branches", m.branches);
  f.add("code_calls", m.calls);
  f.add("code_zmm_instructions", m.zmm);
  f.add("code_ymm_instructions", m.ymm);
  f.add("code_xmm_instructions", m.xmm);
  f.add("code_vector_width_bits", m.zmm > 0 ? 512 : m.ymm > 0 ? 256 : m.xmm > 0 ? 128 : 0);
  return f;
}

Features object_code_features(const std::string& object_file) {
  const ProcessResult r = run_process({"objdump", "-d", "--no-show-raw-insn", object_file}, {}, {.timeout_s = 60});
  if (!r.ok())
    throw UsageError("objdump -d " + object_file + " failed (" + r.describe() +
                     "): install binutils for the code features");
  return instruction_mix(r.out);
}

}  // namespace kforge
