/* gemm.c — the model's GEMMs on the step's pool, each with the bits of one single-threaded call
 * (nn/gemm.h).
 *
 * The plan of a shape (which side of C is cut, in blocks of how many, and whether the blocks
 * give the whole call's bytes) is written for any element type: a type is its size, its BLAS
 * call and its pseudo-random fill (gemm_type_t): DOUBLE (cblas_dgemm) in the float64 core,
 * FLOAT (cblas_sgemm) in the float32 one (util/real.h); where C may be cut is the kernel
 * family's, per type (cuts_t). Both share the layout, the check, the cache and the split
 * below, and each build's plans are its own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <threads.h>
#include <gsl/gsl_cblas.h>
#include "nn/gemm.h"
#include "nn/gemm_dnnl.h"
#include "nn/round.h"
#include "util/blascore.h"
#include "util/lowp.h"
#include "util/threads.h"

typedef struct gemm_type gemm_type_t;

/* One product C (M,N) = α·op(A)·op(B) + β·C, row-major, in the element type of `type`. */
typedef struct {
    const gemm_type_t *type;
    int ta, tb, M, N, K;
    double alpha, beta;
    const void *A, *B;
    void *C;
    int lda, ldb, ldc;
} call_t;

/* How one kernel family's GEMM of one type may be cut (measured: docs/performance.md, "Where
 * a product may be cut"): blocks of C in multiples of `rows` rows or `cols` columns (0: never
 * that side), each block at least `min_call` multiply-adds. */
typedef struct {
    int rows, cols;
    double min_call;
} cuts_t;

struct gemm_type {
    int id;                                 /* the cache's key */
    size_t size;                            /* bytes per element */
    int family_cuts;                        /* which of a family's cuts (CUTS_DOUBLE, CUTS_FLOAT) */
    void (*call)(const call_t *c);          /* one single-threaded BLAS call */
    void (*fill)(void *x, size_t n, size_t first, uint64_t seed);   /* values first.. of a stream */
};

enum { CUTS_DOUBLE, CUTS_FLOAT, CUTS_ONEDNN };

/* Value i of the pseudo-random stream `seed`, in [−1, 1) (splitmix64 of the counter: any value
 * of the stream can be made again without the ones before it). */
static double stream_value(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

#if !REAL_IS_FLOAT
/* ------------------------------------------------------------------------------------------
 * float64 */

static void call_double(const call_t *c)
{
    cblas_dgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans,
                c->M, c->N, c->K, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
}

static void fill_double(void *x, size_t n, size_t first, uint64_t seed)
{
    double *d = x;
    for (size_t i = 0; i < n; i++) d[i] = stream_value(seed, first + i);
}

static const gemm_type_t DOUBLE = {0, sizeof(double), CUTS_DOUBLE, call_double, fill_double};
#define REAL_TYPE DOUBLE

#else
/* ------------------------------------------------------------------------------------------
 * float32 (the same stream, rounded to float) */

static void call_float(const call_t *c)
{
    cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans,
                c->M, c->N, c->K, (float)c->alpha, c->A, c->lda, c->B, c->ldb, (float)c->beta,
                c->C, c->ldc);
}

static void fill_float(void *x, size_t n, size_t first, uint64_t seed)
{
    float *f = x;
    for (size_t i = 0; i < n; i++) f[i] = (float)stream_value(seed, first + i);
}

static const gemm_type_t FLOAT = {1, sizeof(float), CUTS_FLOAT, call_float, fill_float};
#define REAL_TYPE FLOAT

/* train.gemm_path = onednn (nn/gemm_dnnl.h; docs/design.md, "The fast bfloat16 path"): float32
 * operands, rounded to bfloat16 as oneDNN packs them, one single-threaded matmul per call. */
static void call_onednn(const call_t *c)
{
    if (gemm_dnnl(c->ta, c->tb, c->M, c->N, c->K, (float)c->alpha, c->A, c->lda, c->B, c->ldb,
                  (float)c->beta, c->C, c->ldc))
        abort();   // out of memory in a step: nowhere to report it
}

static const gemm_type_t ONEDNN = {2, sizeof(float), CUTS_ONEDNN, call_onednn, fill_float};

/* train.precision = bfloat16*, round_gemm (nn/round.h; docs/design.md, "Low precision,
 * emulated"): the product of the operands rounded to bfloat16, accumulated by sgemm in float32
 * — what a bf16 GEMM with float32 accumulation computes, but for the order of the additions.
 * Each thread rounds into scratch of its own (attention's pairs call gemm_serial in parallel),
 * kept for the next product and freed when the thread ends (a C11 thread-specific key). */
typedef struct {
    float *p[2];
    size_t cap[2];
} scratch_t;

static tss_t scratch_key;
static once_flag scratch_once = ONCE_FLAG_INIT;

static void scratch_free(void *x)
{
    scratch_t *s = x;
    free(s->p[0]);
    free(s->p[1]);
    free(s);
}

static void scratch_key_create(void) { tss_create(&scratch_key, scratch_free); }

/* This thread's scratch (NULL when out of memory). */
static scratch_t *scratch_get(void)
{
    call_once(&scratch_once, scratch_key_create);
    scratch_t *s = tss_get(scratch_key);
    if (!s && (s = calloc(1, sizeof *s)) && tss_set(scratch_key, s) != thrd_success) {
        free(s);
        s = NULL;
    }
    return s;
}

/* The stored block of an operand (rows × cols of leading dimension ld) rounded into scratch
 * slot `slot`, packed (leading dimension cols): to bfloat16, or (fp8 ≥ 0, a lowp_fp8_t) through
 * that format with the block's own scale from its current amax (util/lowp.h) and back to its
 * range; NULL when out of memory. */
static const float *rounded_operand(int slot, const float *X, int rows, int cols, int ld, int fp8)
{
    const size_t n = (size_t)rows * (size_t)cols;
    scratch_t *s = scratch_get();
    if (!s) return NULL;
    if (n > s->cap[slot]) {
        float *p = realloc(s->p[slot], n * sizeof(float));
        if (!p) return NULL;
        s->p[slot] = p;
        s->cap[slot] = n;
    }
    float *out = s->p[slot];
    for (int r = 0; r < rows; r++) {
        const float *src = X + (size_t)r * ld;
        float *dst = out + (size_t)r * cols;
        if (fp8 >= 0) memcpy(dst, src, (size_t)cols * sizeof(float));
        else lowp_bf16_round(src, dst, (size_t)cols);
    }
    if (fp8 >= 0) {
        const lowp_fp8_t f = (lowp_fp8_t)fp8;
        lowp_fp8_round(out, out, n, f, lowp_fp8_scale(out, n, f));
    }
    return out;
}

/* c with both operands rounded (round_gemm): bfloat16, or under fp8 E4M3 for a forward value
 * and E5M2 for the gradient `grad` names (Micikevicius et al. 2022, §4); 1 when out of memory. */
static int round_operands(call_t *c, int grad)
{
    const round_policy_t *p = round_policy();
    if (!p->gemm || c->M < 1 || c->N < 1 || c->K < 1) return 0;
    if (p->onednn && !p->fp8) {   // oneDNN rounds as it packs
        c->type = &ONEDNN;
        return 0;
    }
    const int ar = c->ta ? c->K : c->M, ac = c->ta ? c->M : c->K;   // A as stored
    const int br = c->tb ? c->N : c->K, bc = c->tb ? c->K : c->N;   // B as stored
    const int fa = !p->fp8 ? -1 : grad == GEMM_GRAD_A ? LOWP_E5M2 : LOWP_E4M3;
    const int fb = !p->fp8 ? -1 : grad == GEMM_GRAD_B ? LOWP_E5M2 : LOWP_E4M3;
    const float *A = rounded_operand(0, c->A, ar, ac, c->lda, fa);
    const float *B = rounded_operand(1, c->B, br, bc, c->ldb, fb);
    if (!A || !B) return 1;
    c->A = A;
    c->lda = ac;
    c->B = B;
    c->ldb = bc;
    return 0;
}
#endif

/* ------------------------------------------------------------------------------------------
 * The cuts of each kernel family (util/blascore.h), measured on random operands at the
 * model's shapes (docs/performance.md, "Where a product may be cut"). A block that breaks a
 * kernel's tile, or that OpenBLAS sends down another path than the whole product, sums some
 * entries in another order; the check below still guards every layout. */

/* Haswell (and Zen, the same kernels): DGEMM tiles of 4 × 8, so blocks of 16 rows or columns;
 * the SGEMM keeps the whole call's bits for rows cut in multiples of 12 (3 of its 4-column
 * tiles, what OpenBLAS's driver hands the kernel at once) and for no column cut at all (on
 * tests/test_gemm.c's shapes and 1276 model-sized ones, with 4 rows only 168 pass). */
static const cuts_t HASWELL[2] = {{16, 16, 0}, {12, 0, 0}};

/* SkylakeX (and Cooperlake, the same kernels): OpenBLAS 0.3.21 sends a product of at most
 * 100³ multiply-adds down its small-matrix kernels, which sum otherwise, so every block is
 * larger than that. The DGEMM's 16 × 2 kernel does the last (N mod 16) columns of C in strips
 * of 12, 10, ... rows: rows are cut in multiples of 12, columns of 16 (exact when N is a
 * multiple of 16; the check refuses the rest). The SGEMM's 16 × 4 kernel keeps any cut in
 * multiples of 4: 16 on both sides. */
static const cuts_t SKYLAKEX[2] = {{12, 16, 1e6 + 1}, {16, 16, 1e6 + 1}};

/* oneDNN's bf16 matmul (one thread, nn/gemm_dnnl.c), whatever OpenBLAS's family: its kernel sums
 * each entry over K in an order of K alone, so rows or columns in multiples of its 16-wide
 * tiles (the check below still guards every shape). */
static const cuts_t ONEDNN_CUTS = {16, 16, 0};

/* The cuts of type ty under the kernels OpenBLAS runs (fixed for the process; other
 * families get Haswell's, under the same check). */
static const cuts_t *cuts_of(const gemm_type_t *ty)
{
    static const cuts_t *family = NULL;
    if (!family) {
        const char *name = blascore_name();
        family = !strcasecmp(name, "SkylakeX") || !strcasecmp(name, "Cooperlake") ? SKYLAKEX
                                                                                   : HASWELL;
    }
    return ty->family_cuts == CUTS_ONEDNN ? &ONEDNN_CUTS : &family[ty->family_cuts];
}

/* ------------------------------------------------------------------------------------------
 * The layout: blocks from the shape alone */

enum { SIDE_NONE, SIDE_ROWS, SIDE_COLS };

/* A block is at least this many multiply-adds (a call costs about a microsecond beyond its work,
 * ≈ 30 µs here). */
#define BLOCK_MIN_WORK 262144.0

typedef struct {
    int side;   /* SIDE_*: rows or columns of C, or one call (SIDE_NONE) */
    int bs;     /* rows (columns) per block; the last block runs to the end of C */
    int nb;     /* blocks */
} layout_t;

/* The blocks of a shape for nt threads: the longer side of C the family's cuts allow, in at
 * most nt blocks (bs ≥ ⌈len/nt⌉), one per thread (more would only add calls: each block is one
 * single-threaded call, and fewer, larger calls run closer to the kernel's peak), each of at
 * least BLOCK_MIN_WORK and min_call (a last block short of min_call joins the one before);
 * fewer than two blocks is one call. */
static layout_t layout_of(const cuts_t *cu, int M, int N, int K, int nt)
{
    const layout_t one = {SIDE_NONE, 0, 1};
    int side = M >= N ? SIDE_ROWS : SIDE_COLS;
    if (side == SIDE_ROWS && !cu->rows) side = SIDE_COLS;
    if (side == SIDE_COLS && !cu->cols) side = cu->rows ? SIDE_ROWS : SIDE_NONE;
    if (side == SIDE_NONE || nt < 2) return one;
    const long len = side == SIDE_ROWS ? M : N, other = side == SIDE_ROWS ? N : M;
    const long align = side == SIDE_ROWS ? cu->rows : cu->cols;
    if (len < 2 * align || other < 1 || K < 1) return one;
    const double least = BLOCK_MIN_WORK > cu->min_call ? BLOCK_MIN_WORK : cu->min_call;
    const long by_count = (len + nt - 1) / nt;
    const long by_work = (long)(least / ((double)other * K)) + 1;
    long bs = by_count > by_work ? by_count : by_work;
    bs = (bs + align - 1) / align * align;
    long nb = (len + bs - 1) / bs;
    if (nb >= 2 && (double)(len - (nb - 1) * bs) * other * K < cu->min_call) nb--;
    if (nb < 2) return one;
    return (layout_t){side, (int)bs, (int)nb};
}

/* Block b of c under layout l: the same product on C's rows [lo, hi) (op(A)'s rows) or columns
 * (op(B)'s columns). */
static call_t block_of(const call_t *c, layout_t l, int b)
{
    call_t p = *c;
    const size_t sz = c->type->size, lo = (size_t)b * l.bs;
    const size_t len = (size_t)(l.side == SIDE_ROWS ? c->M : c->N);
    const size_t hi = b == l.nb - 1 ? len : lo + l.bs;
    if (l.side == SIDE_ROWS) {
        p.M = (int)(hi - lo);
        p.A = (const char *)c->A + (c->ta ? lo : lo * (size_t)c->lda) * sz;
        p.C = (char *)c->C + lo * (size_t)c->ldc * sz;
    } else {
        p.N = (int)(hi - lo);
        p.B = (const char *)c->B + (c->tb ? lo * (size_t)c->ldb : lo) * sz;
        p.C = (char *)c->C + lo * sz;
    }
    return p;
}

/* ------------------------------------------------------------------------------------------
 * The check: do the blocks give the whole call's bytes? */

/* Operands and whole result of a check at most (bytes; the blocks add one block per thread):
 * a paper-size logit product, 4096 tokens × 10⁴ words × d = 512, needs 367 MiB. */
#define CHECK_MAX ((size_t)512 << 20)

enum { SEED_A = 1, SEED_B = 2, SEED_C = 3 };

typedef struct {
    const call_t *whole;     /* the product on random operands, whole call's result in C */
    layout_t l;
    char *scratch;           /* one block per part */
    size_t blk;              /* elements per block at most */
    int differ[THREADS_MAX]; /* per part: a block differed */
} check_job_t;

/* Part t of nt: each of its blocks computed alone, from the same C₀, into the part's scratch,
 * and compared with the whole call's rows (columns). */
static void check_part(void *ctx, int t, int nt)
{
    check_job_t *j = ctx;
    const call_t *w = j->whole;
    const size_t sz = w->type->size, N = (size_t)w->N;
    char *s = j->scratch + (size_t)t * j->blk * sz;
    size_t b0, b1;
    threads_part((size_t)j->l.nb, t, nt, 1, &b0, &b1);
    for (size_t b = b0; b < b1 && !j->differ[t]; b++) {
        call_t p = block_of(w, j->l, (int)b);
        const size_t lo = b * (size_t)j->l.bs, rows = (size_t)p.M, cols = (size_t)p.N;
        const size_t ld = j->l.side == SIDE_ROWS ? N : cols;   // the block alone
        const size_t r0 = j->l.side == SIDE_ROWS ? lo : 0, c0 = j->l.side == SIDE_ROWS ? 0 : lo;
        for (size_t i = 0; i < rows; i++)   // C₀'s values of these entries
            w->type->fill(s + i * ld * sz, cols, (r0 + i) * N + c0, SEED_C);
        p.C = s;
        p.ldc = (int)ld;
        w->type->call(&p);
        for (size_t i = 0; i < rows && !j->differ[t]; i++)
            j->differ[t] = memcmp(s + i * ld * sz, (const char *)w->C + ((r0 + i) * N + c0) * sz,
                                  cols * sz) != 0;
    }
}

/* 1 when the blocks of layout l give, for this shape in this type, the bytes of one call on
 * random operands (α = 1, β = 1 onto random C₀); 0 otherwise or when too large to check. The
 * blocks run on the pool (their split among threads does not change the answer). */
static int blocks_exact(const gemm_type_t *ty, int ta, int tb, int M, int N, int K, layout_t l)
{
    const size_t MK = (size_t)M * K, KN = (size_t)K * N, MN = (size_t)M * N;
    const size_t last = (size_t)(l.side == SIDE_ROWS ? M : N) - (size_t)(l.nb - 1) * l.bs;
    const size_t widest = last > (size_t)l.bs ? last : (size_t)l.bs;   // the last may be longer
    const size_t blk = widest * (size_t)(l.side == SIDE_ROWS ? N : M);
    const int nt = threads_ready(l.nb);   // a layout has at most one block per thread
    if ((MK + KN + MN) * ty->size > CHECK_MAX) return 0;
    char *A = malloc(MK * ty->size), *B = malloc(KN * ty->size), *C = malloc(MN * ty->size);
    check_job_t j = {.l = l, .blk = blk, .scratch = malloc((size_t)nt * blk * ty->size)};
    int ok = 0;
    if (A && B && C && j.scratch) {
        ty->fill(A, MK, 0, SEED_A);
        ty->fill(B, KN, 0, SEED_B);
        ty->fill(C, MN, 0, SEED_C);
        const call_t whole = {ty, ta, tb, M, N, K, 1.0, 1.0, A, B, C, ta ? M : K, tb ? K : N, N};
        ty->call(&whole);
        j.whole = &whole;
        threads_run(nt, check_part, &j);
        ok = 1;
        for (int t = 0; t < nt; t++) ok &= !j.differ[t];
    }
    free(A);
    free(B);
    free(C);
    free(j.scratch);
    return ok;
}

/* ------------------------------------------------------------------------------------------
 * The plans, once per shape, type and thread count (an open-addressed table, emptied when three
 * quarters full: shapes are few, but a corpus batched by length has one per batch shape) */

typedef struct {
    int used, type, nt, ta, tb, M, N, K;
    layout_t l;   /* side SIDE_NONE: one call */
} plan_t;

#define PLANS 4096
static plan_t plans[PLANS];
static int nplans = 0;

static const plan_t *plan_of(const gemm_type_t *ty, int nt, int ta, int tb, int M, int N, int K)
{
    uint64_t h = (uint64_t)ty->id * 0x9E3779B97F4A7C15ULL;
    const int key[6] = {nt, ta, tb, M, N, K};
    for (int i = 0; i < 6; i++) h = (h ^ (uint64_t)(unsigned)key[i]) * 0x100000001B3ULL;
    size_t i = (size_t)(h % PLANS);
    for (;; i = (i + 1) % PLANS) {
        const plan_t *p = &plans[i];
        if (!p->used) break;
        if (p->type == ty->id && p->nt == nt && p->ta == ta && p->tb == tb && p->M == M &&
            p->N == N && p->K == K)
            return p;
    }
    if (nplans >= PLANS * 3 / 4) {   // start over (the slot found above may move)
        memset(plans, 0, sizeof plans);
        nplans = 0;
        i = (size_t)(h % PLANS);
    }
    layout_t l = layout_of(cuts_of(ty), M, N, K, nt);
    if (l.side != SIDE_NONE && !blocks_exact(ty, ta, tb, M, N, K, l))
        l = (layout_t){SIDE_NONE, 0, 1};
    plans[i] = (plan_t){1, ty->id, nt, ta, tb, M, N, K, l};
    nplans++;
    return &plans[i];
}

/* ------------------------------------------------------------------------------------------
 * The product */

typedef struct {
    const call_t *c;
    layout_t l;
} split_t;

/* Part t of nt: its whole blocks, one call each. */
static void split_part(void *ctx, int t, int nt)
{
    const split_t *s = ctx;
    size_t b0, b1;
    threads_part((size_t)s->l.nb, t, nt, 1, &b0, &b1);
    for (size_t b = b0; b < b1; b++) {
        const call_t p = block_of(s->c, s->l, (int)b);
        s->c->type->call(&p);
    }
}

/* c on the pool in its shape's blocks, or as one call (one thread, inside a part, small or
 * unchecked shapes). */
static void product(const call_t *c)
{
    const int n = threads_get();
    if (n <= 1 || threads_in_part() || c->M < 1 || c->N < 1) {
        c->type->call(c);
        return;
    }
    const plan_t *p = plan_of(c->type, n, c->ta, c->tb, c->M, c->N, c->K);
    if (p->l.side == SIDE_NONE) {
        c->type->call(c);
        return;
    }
    const split_t s = {c, p->l};
    threads_run(p->l.nb, split_part, (void *)&s);   // nb <= n: one block per thread at most
}

void gemm_grad(int grad, int ta, int tb, int M, int N, int K, double alpha, const real *A,
               int lda, const real *B, int ldb, double beta, real *C, int ldc)
{
    call_t c = {&REAL_TYPE, ta, tb, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc};
#if REAL_IS_FLOAT
    if (round_operands(&c, grad)) abort();   // out of memory in a step: nowhere to report it
#else
    (void)grad;
#endif
    product(&c);
}

void gemm_serial_grad(int grad, int ta, int tb, int M, int N, int K, double alpha, const real *A,
                      int lda, const real *B, int ldb, double beta, real *C, int ldc)
{
    call_t c = {&REAL_TYPE, ta, tb, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc};
#if REAL_IS_FLOAT
    if (round_operands(&c, grad)) abort();
#else
    (void)grad;
#endif
    c.type->call(&c);
}

void gemm(int ta, int tb, int M, int N, int K, double alpha, const real *A, int lda,
          const real *B, int ldb, double beta, real *C, int ldc)
{
    gemm_grad(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_serial(int ta, int tb, int M, int N, int K, double alpha, const real *A, int lda,
                 const real *B, int ldb, double beta, real *C, int ldc)
{
    gemm_serial_grad(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int gemm_blocks(int ta, int tb, int M, int N, int K)
{
    if (M < 1 || N < 1) return 0;
    const gemm_type_t *ty = &REAL_TYPE;
#if REAL_IS_FLOAT
    const round_policy_t *rp = round_policy();
    if (rp->gemm && rp->onednn && !rp->fp8) ty = &ONEDNN;   // the type gemm() would run
#endif
    const plan_t *p = plan_of(ty, threads_get(), ta, tb, M, N, K);
    return p->l.side == SIDE_NONE ? 0 : p->l.nb;
}
