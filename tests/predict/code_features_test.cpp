// Code features: the instruction mix of a disassembly (counted exactly on a hand-written one),
// a PTX module's per-entry mix, and `kforge features --code` on the cpu gemm, whose compiled
// object holds vector FMAs, and on the cuda gemm (its PTX, NVRTC without a GPU).
#include <gtest/gtest.h>

#include "kforge/predict.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

double value(const Features& f, const std::string& name) {
  for (std::size_t i = 0; i < f.names.size(); ++i)
    if (f.names[i] == name) return f.values[i];
  ADD_FAILURE() << "no feature " << name;
  return -1;
}

TEST(CodeFeatures, InstructionMixOfADisassembly) {
  const std::string text =
      "k.so:     file format elf64-x86-64\n\n"
      "Disassembly of section .plt:\n\n"
      "0000000000001020 <.plt>:\n"
      "    1020:\tpush   0x2fe2(%rip)        # 4008 <_GLOBAL_OFFSET_TABLE_+0x8>\n"
      "Disassembly of section .text:\n\n"
      "0000000000001100 <gemm>:\n"
      "    1100:\tvmovups (%rdi,%rax,4),%zmm1\n"
      "    1107:\tvfmadd231ps 0x40(%rsi),%zmm1,%zmm0\n"
      "    110e:\tvfmadd231ps %ymm2,%ymm3,%ymm4\n"
      "    1113:\tvmovups %zmm0,(%rdx)\n"
      "    1119:\tlea    0x10(%rax),%rax\n"
      "    111d:\tcmp    %rcx,%rax\n"
      "    1120:\tjne    1100 <gemm>\n"
      "    1122:\tcall   1030 <free@plt>\n"
      "    1127:\tvaddss %xmm1,%xmm0,%xmm0\n"
      "    112b:\tret\n";
  const Features f = instruction_mix(text);
  EXPECT_EQ(value(f, "code_instructions"), 10);  // the .plt's push is not the kernel's
  EXPECT_EQ(value(f, "code_vector_fma"), 2);
  EXPECT_EQ(value(f, "code_vector_instructions"), 5);
  EXPECT_EQ(value(f, "code_loads"), 2);   // vmovups from memory, the FMA's memory source
  EXPECT_EQ(value(f, "code_stores"), 1);  // vmovups to memory; lea touches none
  EXPECT_EQ(value(f, "code_branches"), 1);
  EXPECT_EQ(value(f, "code_calls"), 1);
  EXPECT_EQ(value(f, "code_zmm_instructions"), 3);
  EXPECT_EQ(value(f, "code_ymm_instructions"), 1);
  EXPECT_EQ(value(f, "code_xmm_instructions"), 1);
  EXPECT_EQ(value(f, "code_vector_width_bits"), 512);
  EXPECT_EQ(value(instruction_mix("Disassembly of section .text:\n    10:\tret\n"), "code_vector_width_bits"), 0);
}

// A PTX module of two entries: only the named entry's body counts (a predicated instruction
// too; directives, labels and braces do not); a name not in the module counts the whole module.
TEST(CodeFeatures, PtxInstructionMixOfOneEntry) {
  const std::string ptx =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry other(\n\t.param .u64 other_param_0\n)\n{\n\tfma.rn.f32 \t%f1, %f2, %f3, %f4;\n\tret;\n}\n"
      ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
      "\t.reg .f32 \t%f<5>;\n"
      "\tld.param.u64 \t%rd1, [k_param_0];\n"
      "$L__BB0_1:\n"
      "\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd1];\n"
      "\tfma.rn.f32 \t%f4, %f1, %f2, %f3;\n"
      "\tex2.approx.ftz.f32 \t%f4, %f4;\n"
      "\tst.shared.f32 \t[%r1], %f4;\n"
      "\tbar.sync \t0;\n"
      "\tld.shared.f32 \t%f1, [%r2];\n"
      "\tatom.global.add.f32 \t%f2, [%rd1], %f1;\n"
      "\t@%p1 bra \t$L__BB0_1;\n"
      "\tst.global.f32 \t[%rd1], %f1;\n"
      "\tret;\n}\n";
  const Features f = ptx_instruction_mix(ptx, "k");
  EXPECT_EQ(value(f, "ptx_instructions"), 11);
  EXPECT_EQ(value(f, "ptx_fma"), 1);
  EXPECT_EQ(value(f, "ptx_global_loads"), 1);
  EXPECT_EQ(value(f, "ptx_global_stores"), 1);
  EXPECT_EQ(value(f, "ptx_shared_loads"), 1);
  EXPECT_EQ(value(f, "ptx_shared_stores"), 1);
  EXPECT_EQ(value(f, "ptx_vector_accesses"), 1);
  EXPECT_EQ(value(f, "ptx_barriers"), 1);
  EXPECT_EQ(value(f, "ptx_branches"), 1);
  EXPECT_EQ(value(f, "ptx_special_functions"), 1);
  EXPECT_EQ(value(f, "ptx_atomics"), 1);
  EXPECT_EQ(value(f, "ptx_whole_module"), 0);
  const Features whole = ptx_instruction_mix(ptx, "absent");
  EXPECT_EQ(value(whole, "ptx_instructions"), 13);
  EXPECT_EQ(value(whole, "ptx_fma"), 2);
  EXPECT_EQ(value(whole, "ptx_whole_module"), 1);
}

#ifdef KFORGE_WITH_CUDA
// `features --code` of a cuda kernel compiles it with NVRTC (no GPU needed) and reads its PTX:
// the gemm's inner loop has FMAs and global loads, beside ptxas's registers.
TEST(CodeFeatures, FeaturesCodeOfTheCudaGemmReadsItsPtx) {
  const auto r = test::kforge_cli("features gemm --kernel-lang cuda --sizes M=64,N=64,K=64 --code --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = test::parse_or_fail(r);
  const auto& c = j["code_features"];
  EXPECT_GT(c.value("ptx_fma", 0.0), 0) << c.dump();
  EXPECT_GT(c.value("ptx_global_loads", 0.0), 0) << c.dump();
  EXPECT_EQ(c.value("ptx_whole_module", -1.0), 0) << c.dump();
  EXPECT_GT(c.value("compiler_registers", 0.0), 0) << c.dump();
}
#endif

TEST(CodeFeatures, FeaturesCodeOfTheCpuGemm) {
  const auto r = test::kforge_cli("features gemm --sizes M=64,N=64,K=64 --params VW=8 --code --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = test::parse_or_fail(r);
  ASSERT_TRUE(j.contains("code_features")) << j.dump();
  const auto& c = j["code_features"];
  EXPECT_GT(c["code_vector_fma"].get<double>(), 0) << c.dump();
  EXPECT_GT(c["code_loads"].get<double>(), 0);
  EXPECT_GE(c["code_vector_width_bits"].get<double>(), 256);
  // Without --code nothing is compiled and no code features appear.
  const auto plain = test::kforge_cli("features gemm --sizes M=64,N=64,K=64 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(test::parse_or_fail(plain).contains("code_features"));
}

}  // namespace
}  // namespace kforge
