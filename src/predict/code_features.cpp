// Features of the compiled code, had without running it: the instruction mix of the cpu
// backend's object (objdump's disassembly of its .text), or of a CUDA kernel's PTX (its entry's
// body in the module NVRTC wrote). Trees see what the compiler made of
// the parameters: whether the loops vectorized, at which width, how many FMAs per load.
#include <algorithm>
#include <cctype>
#include <sstream>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/util.hpp"

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

namespace {

// The body of `.entry NAME(...) { ... }` in a PTX module; empty when the module has no such entry.
std::string ptx_entry_body(const std::string& ptx, const std::string& entry) {
  const auto head = ptx.find(".entry " + entry + "(");
  if (head == std::string::npos) return {};
  const auto open = ptx.find('{', ptx.find(')', head));
  if (open == std::string::npos) return {};
  int depth = 0;
  for (auto i = open; i < ptx.size(); ++i) {
    depth += ptx[i] == '{' ? 1 : ptx[i] == '}' ? -1 : 0;
    if (depth == 0) return ptx.substr(open + 1, i - open - 1);
  }
  return {};
}

}  // namespace

Features ptx_instruction_mix(const std::string& ptx, const std::string& entry) {
  const std::string body = ptx_entry_body(ptx, entry);
  std::istringstream in(body.empty() ? ptx : body);
  double n = 0, fma = 0, gld = 0, gst = 0, sld = 0, sst = 0, bar = 0, bra = 0, sfu = 0, atom = 0, vec = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string op;
    if (!(words >> op)) continue;
    if (op[0] == '@' && !(words >> op)) continue;  // a predicate guards the instruction
    // directives (.reg), comments, braces, parentheses and labels ($L__BB0_1:) are not instructions
    if (!std::isalpha(static_cast<unsigned char>(op[0])) || op.back() == ':') continue;
    n += 1;
    if (starts_with(op, "fma.")) fma += 1;
    if (starts_with(op, "ld.global")) gld += 1;
    if (starts_with(op, "st.global")) gst += 1;
    if (starts_with(op, "ld.shared")) sld += 1;
    if (starts_with(op, "st.shared")) sst += 1;
    if (starts_with(op, "bar.") || starts_with(op, "barrier.")) bar += 1;
    if (starts_with(op, "bra")) bra += 1;
    for (const char* f : {"ex2.", "lg2.", "rcp.", "sqrt.", "rsqrt.", "sin.", "cos.", "tanh."})
      if (starts_with(op, f)) sfu += 1;
    if (starts_with(op, "atom.") || starts_with(op, "red.")) atom += 1;
    if ((starts_with(op, "ld.") || starts_with(op, "st.")) &&
        (op.find(".v2.") != std::string::npos || op.find(".v4.") != std::string::npos))
      vec += 1;
  }
  Features f;
  f.add("ptx_instructions", n);
  f.add("ptx_fma", fma);
  f.add("ptx_global_loads", gld);
  f.add("ptx_global_stores", gst);
  f.add("ptx_shared_loads", sld);
  f.add("ptx_shared_stores", sst);
  f.add("ptx_vector_accesses", vec);
  f.add("ptx_barriers", bar);
  f.add("ptx_branches", bra);
  f.add("ptx_special_functions", sfu);
  f.add("ptx_atomics", atom);
  f.add("ptx_whole_module", body.empty() ? 1 : 0);  // the entry was not found by its name
  return f;
}

Features object_code_features(const std::string& object_file, const std::string& entry) {
  if (object_file.size() > 4 && object_file.compare(object_file.size() - 4, 4, ".ptx") == 0)
    return ptx_instruction_mix(read_file(object_file), entry);
  const ProcessResult r = run_process({"objdump", "-d", "--no-show-raw-insn", object_file}, {}, {.timeout_s = 60});
  if (!r.ok())
    throw UsageError("objdump -d " + object_file + " failed (" + r.describe() +
                     "): install binutils for the code features");
  return instruction_mix(r.out);
}

}  // namespace kforge
