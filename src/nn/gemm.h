/* gemm.h — every DGEMM of the model, on the step's pool, with exactly the bits OpenBLAS gives.
 *
 * The results of this program are compared bit for bit across versions at a given thread count,
 * and a DGEMM's bits depend on how OpenBLAS splits it: its threaded driver partitions the output
 * among its threads and blocks K its own way, and a partition boundary that is not a multiple of
 * its kernel's tile (or a K block of another size) sums some entries in another order. So a
 * GEMM's value is "what OpenBLAS computes at the process's thread count n".
 *
 * OpenBLAS's own threads are slow on the small GEMMs of small models (its threads hand over
 * packed panels through flags polled with sched_yield: at d = 64..256 two threads were barely
 * faster than one). gemm() therefore splits the output in rows or columns among the pool's
 * threads, each part a single-threaded OpenBLAS call — but only for a shape where it has checked,
 * once per process, that the split gives OpenBLAS's n-thread bits: it computes one product of
 * that shape on pseudo-random operands both ways and compares the bytes (the order of the
 * additions depends on the shape and the partition only, never on the values, and random operands
 * expose any difference in order). Otherwise the call goes to OpenBLAS's threads as before.
 * OpenBLAS's thread count is 1 except during those calls.
 */
#ifndef STABILITY_GEMM_H
#define STABILITY_GEMM_H

/* Row-major C (M,N) = α·op(A)·op(B) + β·C, op(X) = Xᵀ when the flag is set; lda, ldb, ldc as
 * cblas_dgemm's. Call from outside a pool part (the caller's thread is part 0 of the split). */
void gemm(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
          const double *B, int ldb, double beta, double *C, int ldc);

/* 1 when a product of this shape computed by one single-threaded call (gemm_serial) gives the
 * bits of gemm(): then such calls may run inside pool parts, side by side. */
int gemm_serial_ok(int ta, int tb, int M, int N, int K);

/* One single-threaded OpenBLAS call (inside a pool part, for a shape with gemm_serial_ok). */
void gemm_serial(int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc);

#endif
