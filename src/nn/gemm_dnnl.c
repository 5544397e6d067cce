/* gemm_dnnl.c — bfloat16 products through oneDNN's matmul primitive (nn/gemm_dnnl.h).
 *
 * Each call packs op(A) (M,K) and op(B) (K,N) row-major into bfloat16 (nearest-even, the bits
 * of lowp_bf16_bits), runs one matmul primitive (bf16 source and weights, a packed float32
 * destination P) and writes C = α·P + β·C as sgemm does (β = 0: C's old values unread; C itself
 * is P when it is packed, α = 1 and β = 0, as in every forward product). The
 * primitive sees the shape alone: with C's stride and β as a sum post-op in it, a 256×1024×512
 * product cut in two column blocks (stride 1024) differed from the same blocks computed apart,
 * which is what nn/gemm.c's check compares.
 * oneDNN's OpenMP threads are set to 1 on the calling thread while the primitive is made and run
 * (and restored after): the pool's split (nn/gemm.c) shares a product instead, and a team of
 * oneDNN's own inside each of the pool's threads would oversubscribe the CPUs. oneDNN chooses
 * its blocking from the threads it may use; measured, its own split at 2 and 16 threads gave the
 * bits of one thread (16×16×8192, 64×64×4096, 512×256×256, 8×512×2048), but nothing promises
 * that of another version or ISA. Each thread keeps its stream, packing scratch and primitives (a small cache
 * by shape, as the model has few), freed when the thread ends.
 *
 * The result is not sgemm's on the rounded operands bit for bit: every product of two bfloat16
 * values is exact in float32 on both paths, but oneDNN's AVX512-BF16 kernel (vdpbf16ps) adds
 * the pairs k = 2i+1, 2i in turn into its accumulators, blocks K its own way, and flushes
 * subnormal inputs and results to zero; so each entry is another float32 sum of the same exact
 * terms, within Higham's γ_K·Σ|a_k b_k| of the exact sum as the emulation's is (docs/design.md,
 * "The fast bfloat16 path"; tests/test_precision.c measures the difference). */
#include "nn/gemm_dnnl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <omp.h>
#include "util/lowp.h"

#ifdef STAB_DNNL
#include <oneapi/dnnl/dnnl.h>

/* One primitive of a thread's cache: the shape it was made for. */
typedef struct {
    int used, M, N, K;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t a, b, c;
} entry_t;

#define CACHE 32

typedef struct {
    dnnl_stream_t stream;
    uint16_t *p[2];   /* packed op(A), op(B) */
    size_t cap[2];
    float *c;         /* packed product P */
    size_t ccap;
    entry_t cache[CACHE];
    int next;         /* the entry a new shape replaces (round robin) */
} dnnl_thread_t;

static dnnl_engine_t engine;
static int engine_ok;
static once_flag engine_once = ONCE_FLAG_INIT;
static tss_t thread_key;

static void thread_free(void *x)
{
    dnnl_thread_t *t = x;
    for (int i = 0; i < CACHE; i++)
        if (t->cache[i].used) dnnl_primitive_destroy(t->cache[i].prim);
    if (t->stream) dnnl_stream_destroy(t->stream);
    free(t->p[0]);
    free(t->p[1]);
    free(t->c);
    free(t);
}

static void engine_init(void)
{
    engine_ok = tss_create(&thread_key, thread_free) == thrd_success &&
                dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success;
}

/* This thread's state (NULL when out of memory or the library has no CPU engine). */
static dnnl_thread_t *thread_get(void)
{
    call_once(&engine_once, engine_init);
    if (!engine_ok) return NULL;
    dnnl_thread_t *t = tss_get(thread_key);
    if (t) return t;
    if (!(t = calloc(1, sizeof *t))) return NULL;
    if (dnnl_stream_create(&t->stream, engine, dnnl_stream_default_flags) != dnnl_success ||
        tss_set(thread_key, t) != thrd_success) {
        thread_free(t);
        return NULL;
    }
    return t;
}

/* op(X) (rows, cols) packed row-major into slot `slot` as bfloat16 bits; X is stored (rows,
 * cols) with leading dimension ld, or (cols, rows) when trans. NULL when out of memory. */
static const uint16_t *pack(dnnl_thread_t *t, int slot, const float *X, int ld, int trans,
                            int rows, int cols)
{
    const size_t n = (size_t)rows * (size_t)cols;
    if (n > t->cap[slot]) {
        uint16_t *p = realloc(t->p[slot], n * sizeof *p);
        if (!p) return NULL;
        t->p[slot] = p;
        t->cap[slot] = n;
    }
    uint16_t *out = t->p[slot];
    if (!trans) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                out[(size_t)r * cols + c] = lowp_bf16_bits(X[(size_t)r * ld + c]);
    } else {
        for (int c = 0; c < cols; c++)   // along X's stored rows
            for (int r = 0; r < rows; r++)
                out[(size_t)r * cols + c] = lowp_bf16_bits(X[(size_t)c * ld + r]);
    }
    return out;
}

/* A primitive for (M,N,K), made with one OpenMP thread (the caller has set it). */
static entry_t *primitive_of(dnnl_thread_t *t, int M, int N, int K)
{
    for (int i = 0; i < CACHE; i++) {
        entry_t *e = &t->cache[i];
        if (e->used && e->M == M && e->N == N && e->K == K) return e;
    }
    entry_t *e = &t->cache[t->next];
    t->next = (t->next + 1) % CACHE;
    if (e->used) dnnl_primitive_destroy(e->prim);
    e->used = 0;
    const dnnl_dims_t da = {M, K}, db = {K, N}, dc = {M, N};
    const dnnl_dims_t sa = {K, 1}, sb = {N, 1}, sc = {N, 1};
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    const int ok = dnnl_memory_desc_init_by_strides(&e->a, 2, da, dnnl_bf16, sa) == dnnl_success &&
                   dnnl_memory_desc_init_by_strides(&e->b, 2, db, dnnl_bf16, sb) == dnnl_success &&
                   dnnl_memory_desc_init_by_strides(&e->c, 2, dc, dnnl_f32, sc) == dnnl_success &&
                   dnnl_matmul_desc_init(&desc, &e->a, &e->b, NULL, &e->c) == dnnl_success &&
                   dnnl_primitive_desc_create(&pd, &desc, NULL, engine, NULL) == dnnl_success &&
                   dnnl_primitive_create(&e->prim, pd) == dnnl_success;
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (!ok) return NULL;
    e->used = 1;
    e->M = M;
    e->N = N;
    e->K = K;
    return e;
}

/* The product on this thread's state, its OpenMP threads already 1. */
static int run(dnnl_thread_t *t, int ta, int tb, int M, int N, int K, float alpha,
               const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    const uint16_t *a = pack(t, 0, A, lda, ta, M, K), *b = pack(t, 1, B, ldb, tb, K, N);
    const size_t nc = (size_t)M * (size_t)N;
    const int direct = ldc == N && alpha == 1.0f && beta == 0.0f;   // C = P: no copy
    if (!direct && nc > t->ccap) {
        float *c = realloc(t->c, nc * sizeof *c);
        if (!c) return 1;
        t->c = c;
        t->ccap = nc;
    }
    entry_t *e = a && b ? primitive_of(t, M, N, K) : NULL;
    if (!e) return 1;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL;
    int ok = dnnl_memory_create(&ma, &e->a, engine, (void *)a) == dnnl_success &&
             dnnl_memory_create(&mb, &e->b, engine, (void *)b) == dnnl_success &&
             dnnl_memory_create(&mc, &e->c, engine, direct ? C : t->c) == dnnl_success;
    if (ok) {
        const dnnl_exec_arg_t args[3] = {
            {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
        ok = dnnl_primitive_execute(e->prim, t->stream, 3, args) == dnnl_success &&
             dnnl_stream_wait(t->stream) == dnnl_success;
    }
    if (ma) dnnl_memory_destroy(ma);
    if (mb) dnnl_memory_destroy(mb);
    if (mc) dnnl_memory_destroy(mc);
    for (int i = 0; ok && !direct && i < M; i++) {   // C = α·P + β·C, rounded once per operation
        const float *p = t->c + (size_t)i * N;
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < N; j++)
            c[j] = beta == 0.0f ? alpha * p[j] : alpha * p[j] + beta * c[j];
    }
    return !ok;
}

int gemm_dnnl(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M < 1 || N < 1) return 0;
    dnnl_thread_t *t = thread_get();
    if (!t) return 1;
    if (K < 1) {   // no terms: C = β·C, as sgemm
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return 0;
    }
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const int rc = run(t, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    omp_set_num_threads(saved);
    return rc;
}

/* oneDNN's effective ISA (what its kernels dispatch to on this CPU). */
static dnnl_cpu_isa_t isa(void) { return dnnl_get_effective_cpu_isa(); }

int gemm_dnnl_available(void)
{
    static int known = -1;
    if (known < 0) {   // one tiny product: the library loads, has a CPU engine, runs bf16
        float a[2] = {1.5f, 2.0f}, b[2] = {3.0f, -1.0f}, c = 0.0f;
        known = gemm_dnnl(0, 0, 1, 1, 2, 1.0f, a, 2, b, 1, 0.0f, &c, 1) == 0 && c == 2.5f;
    }
    return known;
}

int gemm_dnnl_amx(void)
{
    return gemm_dnnl_available() && (isa() & dnnl_cpu_isa_avx512_core_amx) ==
                                        dnnl_cpu_isa_avx512_core_amx;
}

const char *gemm_dnnl_name(void)
{
    static char name[96];
    if (!gemm_dnnl_available()) return "onednn unavailable";
    if (!name[0]) {
        const dnnl_version_t *v = dnnl_version();
        const dnnl_cpu_isa_t i = isa();
        const char *kind = (i & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx
                               ? "avx512_core_amx"
                           : (i & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16
                               ? "avx512_core_bf16"
                           : (i & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core
                               ? "avx512_core"
                               : "avx2_or_older";
        snprintf(name, sizeof name, "onednn %d.%d.%d %s", v->major, v->minor, v->patch, kind);
    }
    return name;
}

#else   /* no oneDNN in this build */

int gemm_dnnl_available(void) { return 0; }
int gemm_dnnl_amx(void) { return 0; }
const char *gemm_dnnl_name(void) { return "onednn unavailable"; }

int gemm_dnnl(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B;
    (void)ldb, (void)beta, (void)C, (void)ldc;
    return 1;
}

#endif
