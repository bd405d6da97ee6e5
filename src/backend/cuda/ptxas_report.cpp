#include "backend/cuda/ptxas_report.hpp"

#include <regex>
#include <sstream>

namespace kforge::cuda {
namespace {

// ptxas's lines for one entry, in order:
//   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
//   ptxas info    : Function properties for NAME
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
// Other functions (non-inlined device functions) have their own "Function properties".
const std::regex kEntry(R"(Compiling entry function '([^']+)')");
const std::regex kProperties(R"(Function properties for (\S+))");
const std::regex kFrame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
const std::regex kRegisters(R"(Used (\d+) registers)");
const std::regex kBarriers(R"(used (\d+) barriers)");
const std::regex kShared(R"((\d+) bytes smem)");

bool is_ptxas_line(const std::string& line) {
  return line.rfind("ptxas info", 0) == 0 || line.rfind("ptxas         .", 0) == 0;
}

}  // namespace

PtxasReport parse_ptxas_report(const std::string& log, const std::string& entry,
                               const std::string& arch) {
  PtxasReport out;
  std::istringstream in(log);
  std::string line, compiling, properties_of;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!is_ptxas_line(line)) {
      if (!out.rest.empty()) out.rest += '\n';
      out.rest += line;
      continue;
    }
    if (std::regex_search(line, m, kEntry)) {
      compiling = m[1];
      properties_of.clear();
    } else if (std::regex_search(line, m, kProperties)) {
      properties_of = m[1];
    }
    CompilerResources& r = out.entry;
    if (properties_of == entry && std::regex_search(line, m, kFrame)) {
      r.stack_bytes = std::stoll(m[1]);
      r.spill_store_bytes = std::stoll(m[2]);
      r.spill_load_bytes = std::stoll(m[3]);
    }
    // The "Used" line belongs to the entry being compiled (device functions' come with their
    // own "Compiling" line only when they are entries too).
    if (compiling == entry && std::regex_search(line, m, kRegisters)) {
      r.reported_by = "ptxas " + arch;
      r.registers = std::stoi(m[1]);
      r.barriers = std::regex_search(line, m, kBarriers) ? std::stoi(m[1]) : 0;
      r.shared_bytes = std::regex_search(line, m, kShared) ? std::stoll(m[1]) : 0;
    }
  }
  return out;
}

}  // namespace kforge::cuda
