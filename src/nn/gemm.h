/* gemm.h — every GEMM of the model, on the step's pool, with bits that do not depend on the
 * thread count (docs/performance.md, "Same bits at every thread count").
 *
 * A product's value is defined by the program, not by the machine's threads: it is the value of
 * ONE single-threaded OpenBLAS call on the whole product (gemm_serial; what the code always gave
 * at one thread). OpenBLAS's own threads are never used: how its threaded driver partitions C
 * and blocks K depends on the thread count, and changes bits (a 512×512×512 product at 3 threads
 * differs from one thread in 1786 of its 262144 entries).
 *
 * The pool still shares a product: gemm() cuts C into at most one block per thread, of rows or
 * of columns, where the pinned kernel family (util/blascore.h) keeps every entry's order: in
 * multiples of its tiles (Haswell: float64 16 rows or columns, float32 12 rows and never
 * columns; SkylakeX: float64 12 rows or 16 columns, float32 16 of either, each block beyond
 * OpenBLAS's small-matrix size), each block one single-threaded call. Once per shape, type,
 * thread count and process,
 * before the first split, gemm() checks on pseudo-random operands that the blocks give the bytes
 * of the whole call (the order of the additions depends on the shape and the blocks only, never
 * on the values, and random operands expose any difference in order); a shape whose blocks do
 * not, or that is too large to check (over 512 MiB of operands), is one call on the caller. So
 * every entry of C has the bits of the one call at any thread count; at one thread every product
 * is that call. Under train.gemm_path = onednn (nn/round.h's policy) "one call" is one
 * single-threaded oneDNN bf16 matmul (nn/gemm_dnnl.h), split and checked the same way.
 */
#ifndef STABILITY_GEMM_H
#define STABILITY_GEMM_H

#include "util/real.h"

/* Row-major C (M,N) = α·op(A)·op(B) + β·C, op(X) = Xᵀ when the flag is set; lda, ldb, ldc as
 * cblas_dgemm's (cblas_sgemm's in the float32 core, util/real.h). The bytes of gemm_serial() on
 * the same arguments, at every thread count. Call from outside a pool part to share it (inside
 * one it is one call on that thread). */
void gemm(int ta, int tb, int M, int N, int K, double alpha, const real *A, int lda,
          const real *B, int ldb, double beta, real *C, int ldc);

/* The same product as one single-threaded OpenBLAS call on the calling thread (inside pool
 * parts: attention's (batch, head) pairs). */
void gemm_serial(int ta, int tb, int M, int N, int K, double alpha, const real *A, int lda,
                 const real *B, int ldb, double beta, real *C, int ldc);

/* Which operand of a backward product is a gradient (GEMM_GRAD_A, GEMM_GRAD_B; 0: none, a
 * forward product): train.precision = fp8 holds it in E5M2 and the other in E4M3 (nn/round.h);
 * every other precision ignores it. */
enum { GEMM_GRAD_A = 1, GEMM_GRAD_B = 2 };

/* gemm() and gemm_serial() of a backward product whose operand `grad` is a gradient. */
void gemm_grad(int grad, int ta, int tb, int M, int N, int K, double alpha, const real *A, int lda,
               const real *B, int ldb, double beta, real *C, int ldc);
void gemm_serial_grad(int grad, int ta, int tb, int M, int N, int K, double alpha, const real *A,
                      int lda, const real *B, int ldb, double beta, real *C, int ldc);

/* The blocks gemm() shares a product of this shape in among the pool at the current thread
 * count, at most one per thread (0: one call on the caller, because it is small, or its blocks
 * do not give the whole call's bytes). Checks the shape on first use, as gemm() does; for tests
 * and the benchmark. */
int gemm_blocks(int ta, int tb, int M, int N, int K);

#if !REAL_IS_FLOAT
/* The float32 core's three (build/f32/names.h renames them there), for the float64 build's
 * tests and benchmark. */
void gemm_f32(int ta, int tb, int M, int N, int K, double alpha, const float *A, int lda,
              const float *B, int ldb, double beta, float *C, int ldc);
void gemm_serial_f32(int ta, int tb, int M, int N, int K, double alpha, const float *A, int lda,
                     const float *B, int ldb, double beta, float *C, int ldc);
int gemm_blocks_f32(int ta, int tb, int M, int N, int K);
#endif

#endif
