/* gemm_dnnl.h — bfloat16 products through oneDNN's matmul primitive (docs/design.md, "The fast
 * bfloat16 path"): bf16 operands, float32 accumulation and result, one single-threaded library
 * call per product, so nn/gemm.c splits the work among the pool as it does sgemm's.
 *
 * Which path computes train.precision = bfloat16's products (train.gemm_path): `onednn` here,
 * or `emulated` (the operands rounded to bfloat16, then float32 sgemm; nn/gemm.c). `auto` picks
 * oneDNN where the CPU has AMX (Intel Sapphire Rapids and later: 3.7–5.4× sgemm) and the
 * emulation elsewhere: with AVX512-BF16 only (AMD Zen 4) oneDNN's bf16 matmul runs at about
 * sgemm's rate, and a bfloat16 update is no faster than float32's (docs/performance.md,
 * "bfloat16"), so the exact emulation, whose bits every stored result has, stays. Without oneDNN in
 * the build (STAB_DNNL undefined) every function says so and the emulation runs.
 */
#ifndef STABILITY_GEMM_DNNL_H
#define STABILITY_GEMM_DNNL_H

/* 1 when oneDNN is in the build and runs a bf16 matmul on this CPU (AVX512-BF16, AMX or its
 * AVX-512 conversion kernels). */
int gemm_dnnl_available(void);

/* 1 when oneDNN's kernels on this CPU include AMX (its effective ISA, which counts the operating
 * system's permission): where auto chooses oneDNN. */
int gemm_dnnl_amx(void);

/* What computes the products, e.g. "onednn 2.6.3 avx512_core_bf16" (library, version, the ISA
 * its kernels dispatch to), or "onednn unavailable". */
const char *gemm_dnnl_name(void);

/* Row-major C (M,N) = α·bf16(op(A))·bf16(op(B)) + β·C (op(X) = Xᵀ when the flag is set;
 * float32 A, B, C with cblas_sgemm's leading dimensions, the operands rounded to nearest-even
 * as util/lowp.h's lowp_bf16), accumulated in float32: one oneDNN call on the calling thread,
 * with oneDNN's OpenMP threads held at 1 during it. 0 on success, 1 when out of memory or the
 * library refuses. */
int gemm_dnnl(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

#endif
