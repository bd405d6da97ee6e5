#pragma once
// oneDNN's matmul as a GEMM peer (row-major A (M,K) times B (K,N) into C (M,N), one data type
// for all three), shared by the gemm bench programs. The caller fills A and B; `impl` names the
// implementation oneDNN chose.
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

namespace kforge::bench {

struct DnnlMatmul {
  DnnlMatmul(int M, int N, int K, dnnl::memory::data_type type) : eng(dnnl::engine::kind::cpu, 0), strm(eng) {
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc a({M, K}, type, tag::ab), b({K, N}, type, tag::ab), c({M, N}, type, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
    impl = pd.impl_info_str();
    prim = dnnl::matmul(pd);
    A = dnnl::memory(a, eng), B = dnnl::memory(b, eng), C = dnnl::memory(c, eng);
  }
  void run() {
    prim.execute(strm, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_DST, C}});
    strm.wait();
  }
  dnnl::engine eng;
  dnnl::stream strm;
  dnnl::matmul prim;
  dnnl::memory A, B, C;
  std::string impl;
};

}  // namespace kforge::bench
