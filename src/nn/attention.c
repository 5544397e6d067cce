/* attention.c — multi-head scaled dot-product attention, forward and backward.
 * Each (batch, head) is three GEMMs on strided views of (B,T,C): no copies of q, k, v.
 *
 * Threads: the (batch, head) pairs are independent (each writes its own att block and its own
 * columns of ctx / dq, dk, dv), so they are split among the pool's threads (util/threads.h),
 * each pair computed exactly as in a serial loop, its GEMMs single-threaded calls
 * (gemm_serial: the bits gemm() gives at every thread count, nn/gemm.h). So a pair's bits do not
 * depend on the thread count or on which thread computes it. */
#include <math.h>
#include "nn/attention.h"
#include "nn/gemm.h"
#include "nn/round.h"
#include "util/lowp.h"
#include "util/threads.h"

typedef struct {
    real *ctx, *att, *dq, *dk, *dv, *datt;
    const real *q, *k, *v, *dctx, *catt;
    int B, Tq, Tk, C, H, causal;
    const int *key_len;
    const attention_opts_t *o;   /* NULL: the plain kernel */
} att_job_t;

/* One of a pair's GEMMs (β = 0): one single-threaded call; grad names a gradient operand
 * (nn/gemm.h: the fp8 emulation's E5M2), 0 in the forward. */
static void head_gemm(int grad, int ta, int tb, int M, int N, int K, double alpha, const real *A,
                      int lda, const real *B, int ldb, real *C, int ldc)
{
    gemm_serial_grad(grad, ta, tb, M, N, K, alpha, A, lda, B, ldb, 0.0, C, ldc);
}

/* Parts for the B·H pairs: the pool when the pairs are worth the start of a region. */
static int pair_threads(const att_job_t *j)
{
    return threads_for((double)j->B * j->H * j->Tq * j->Tk * (j->C / j->H) / 8.0);
}

/* Softmax of row (Tk) over its nk visible keys, max-subtracted; the others get probability 0.
 * With amax (a counted query) also its entropy (returned; 0·log 0 = 0: an entry whose
 * exponential underflows adds nothing) and *amax = max(*amax, max_j |s_j|). */
static double softmax_row(real *row, int nk, int Tk, double *amax)
{
    double mx = row[0];
    for (int c = 1; c < nk; c++) if (row[c] > mx) mx = row[c];
    double sum = 0.0, es = 0.0;
    if (amax) {
        double mn = row[0];
        for (int c = 1; c < nk; c++) if (row[c] < mn) mn = row[c];
        const double a = fmax(mx, -mn);
        if (a > *amax || isnan(a)) *amax = a;
        for (int c = 0; c < nk; c++) {
            const double s = row[c], e = exp(s - mx);
            row[c] = e;
            sum += e;
            es += e * (s - mx);   // H = log Σe − Σ e·(s − mx)/Σe  (docs/design.md §6g)
        }
    } else {
        for (int c = 0; c < nk; c++) { row[c] = exp(row[c] - mx); sum += row[c]; }
    }
    const double inv = 1.0 / sum;
    for (int c = 0; c < nk; c++) row[c] *= inv;
    for (int c = nk; c < Tk; c++) row[c] = 0.0;
    return amax ? log(sum) - es * inv : 0.0;
}

/* Flash attention's rounding of row (Tk) with Qiu & Yao 2025's fix (arXiv 2510.04212, §4, and
 * attention.py of their code, the `STABLE` branch of the forward): flash attention rounds
 * P̄ = exp(s − m) to bfloat16 before ·V and divides by ℓ = Σ P̄ after (Dao 2023, FlashAttention-2,
 * Alg. 1: ℓ from the float32 P̃), so a row whose max repeats holds entries at or next to 1 —
 * exactly 1, or within 2⁻⁹ of it and rounded up to 1 — whose errors do not average out.
 * Their change of m alone: when more than one score is within 10⁻³ of the row max mx, m = β·mx
 * (β = 2, their code's) if mx > 0 and m = 0 if mx < 0, so that no P̄ is at 1; otherwise m = mx.
 * fix = 2 keeps m = mx (flash's plain rounding, for the tests). The row is left as
 * bf16(P̄)/ℓ, the probabilities ·V and the backward see (the backward's convention is the
 * other roundings': the derivative at the stored probabilities, straight through the rounding);
 * softmax is shift-invariant, so the function is the unrounded softmax for any m. Entropy and
 * amax as softmax_row's; with bias, adds Σ_c (bf16(P̄_c)/ℓ − P̄_c/ℓ)·Σ_d V_cd (V (Tk,Dh) stride
 * C) to *bias: the row's part of pv_round_bias. */
static double flash_row(real *row, int nk, int Tk, double *amax, int fix, const real *V, int C,
                        int Dh, double *bias)
{
    double mx = row[0], mn = row[0];
    for (int c = 1; c < nk; c++) { mx = fmax(mx, row[c]); mn = fmin(mn, row[c]); }
    if (amax && (fmax(mx, -mn) > *amax || isnan(mx))) *amax = fmax(mx, -mn);
    double m = mx;
    if (fix == 1) {
        int close = 0;
        for (int c = 0; c < nk; c++) close += row[c] >= mx - 1e-3;
        if (close > 1 && mx > 0.0) m = 2.0 * mx;
        else if (close > 1 && mx < 0.0) m = 0.0;
    }
    double sum = 0.0, es = 0.0;
    for (int c = 0; c < nk; c++) {
        const double s = row[c], e = exp(s - m);
        row[c] = e;   // P̄ (float32, as flash's P̃)
        sum += e;
        es += e * (s - m);   // H = log ℓ − Σ P̄·(s − m)/ℓ, for any shift m (docs/design.md §6g)
    }
    const double inv = 1.0 / sum;
    for (int c = 0; c < nk; c++) {
        const double r = lowp_bf16((float)row[c]);
        if (bias) {
            double vs = 0.0;
            for (int d = 0; d < Dh; d++) vs += V[(size_t)c * C + d];
            *bias += (r - (double)row[c]) * inv * vs;
        }
        row[c] = r * inv;
    }
    for (int c = nk; c < Tk; c++) row[c] = 0.0;
    return amax ? log(sum) - es * inv : 0.0;
}

/* Soft-capping (Gemma 2) of a row's nk visible logits: s ← c·tanh(s/c), kept in capped (Tk;
 * 0 beyond nk) for the backward. */
static void softcap_row(real *row, real *capped, int nk, int Tk, double c)
{
    for (int k = 0; k < nk; k++) capped[k] = row[k] = c * tanh(row[k] / c);
    for (int k = nk; k < Tk; k++) capped[k] = 0.0;
}

/* The mean over the Tq×Dh entries of (bf16(P) − P)·V for one head, P (Tq,Tk), V (Tk,Dh)
 * stride C: Σ_j (Σ_i E_ij)(Σ_d V_jd) / (Tq·Dh), E = bf16(P) − P — a column sum of E and a row
 * sum of V, no product (Qiu & Yao 2025, arXiv 2510.04212: this bias, not the error's size,
 * grows the spectral norms). */
static double pv_round_bias(const real *P, const real *V, int Tq, int Tk, int Dh, int C)
{
    double sum = 0.0;
    for (int jk = 0; jk < Tk; jk++) {
        double e = 0.0, v = 0.0;
        for (int i = 0; i < Tq; i++) {
            const real p = P[(size_t)i * Tk + jk];
            e += (double)lowp_bf16((float)p) - (double)p;
        }
        for (int d = 0; d < Dh; d++) v += V[(size_t)jk * C + d];
        sum += e * v;
    }
    return sum / ((double)Tq * Dh);
}

static void forward_pairs(void *ctx, int t, int nt)
{
    const att_job_t *j = ctx;
    const int Tq = j->Tq, Tk = j->Tk, C = j->C, H = j->H, Dh = C / H;
    const double scale = j->o && j->o->scale > 0.0 ? j->o->scale : 1.0 / sqrt((double)Dh);
    size_t lo, hi;
    threads_part((size_t)j->B * H, t, nt, 1, &lo, &hi);
    for (size_t pair = lo; pair < hi; pair++) {
        const int b = (int)(pair / (size_t)H), h = (int)(pair % (size_t)H);
        const int nvalid = j->key_len ? j->key_len[b] : Tk;
        const real *qh = j->q + (size_t)b * Tq * C + (size_t)h * Dh;  // (Tq,Dh) stride C
        const real *kh = j->k + (size_t)b * Tk * C + (size_t)h * Dh;  // (Tk,Dh) stride C
        const real *vh = j->v + (size_t)b * Tk * C + (size_t)h * Dh;  // (Tk,Dh) stride C
        real *ah = j->att + ((size_t)b * H + h) * Tq * Tk;            // (Tq,Tk)
        real *ch = j->ctx + (size_t)b * Tq * C + (size_t)h * Dh;      // (Tq,Dh) stride C
        // scores (Tq,Tk) = q_h · k_hᵀ · scale (1/√Dh, or o->scale)
        head_gemm(0, 0, 1, Tq, Tk, Dh, scale, qh, C, kh, C, ah, Tk);
        const double cap = j->o ? j->o->softcap : 0.0;
        real *sh = cap > 0.0 ? j->o->capped + ((size_t)b * H + h) * Tq * Tk : NULL;
        const int nq = j->o && j->o->query_len ? j->o->query_len[b] : Tq;
        const int stats = j->o && (j->o->entropy || j->o->max_logit);
        double ent = 0.0, amax = 0.0, bias = 0.0;
        // bfloat16*, round_attn_probs with attn_fix: rounded in flash's form (flash_row)
        const int flash = round_policy()->attn_probs ? round_policy()->attn_fix : 0;
        double *pb = flash && j->o && j->o->round_bias ? &bias : NULL;
        for (int i = 0; i < Tq; i++) {
            int nk = j->causal ? i + 1 : Tk;
            if (nk > nvalid) nk = nvalid;
            if (sh) softcap_row(ah + (size_t)i * Tk, sh + (size_t)i * Tk, nk, Tk, cap);
            real *row = ah + (size_t)i * Tk;
            double *am = stats && i < nq ? &amax : NULL;
            const double hrow = flash ? flash_row(row, nk, Tk, am, flash, vh, C, Dh, pb)
                                      : softmax_row(row, nk, Tk, am);
            if (i < nq) ent += hrow;
        }
        if (pb) j->o->round_bias[pair] = bias / ((double)Tq * Dh);
        // bfloat16*, round_attn_probs: P stored rounded, for ·V and the backward (nn/round.h)
        if (round_policy()->attn_probs && !flash) {
            if (j->o && j->o->round_bias) j->o->round_bias[pair] = pv_round_bias(ah, vh, Tq, Tk, Dh, C);
            round_bf16(ah, (size_t)Tq * Tk);
        }
        if (j->o && j->o->entropy) j->o->entropy[pair] = ent;
        if (j->o && j->o->max_logit) j->o->max_logit[pair] = amax;
        // ctx_h (Tq,Dh) = att_h (Tq,Tk) · v_h (Tk,Dh)
        head_gemm(0, 0, 0, Tq, Dh, Tk, 1.0, ah, Tk, vh, C, ch, C);
    }
}

void attention_forward_opt(real *ctx, real *att, const real *q, const real *k,
                           const real *v, int B, int Tq, int Tk, int C, int H, int causal,
                           const int *key_len, const attention_opts_t *o)
{
    att_job_t j = {.ctx = ctx, .att = att, .q = q, .k = k, .v = v, .B = B, .Tq = Tq, .Tk = Tk,
                   .C = C, .H = H, .causal = causal, .key_len = key_len, .o = o};
    threads_run(pair_threads(&j), forward_pairs, &j);
}

void attention_forward(real *ctx, real *att, const real *q, const real *k,
                       const real *v, int B, int Tq, int Tk, int C, int H, int causal,
                       const int *key_len)
{
    attention_forward_opt(ctx, att, q, k, v, B, Tq, Tk, C, H, causal, key_len, NULL);
}

/* Softmax backward of a pair's Tq rows, in place: dscore_ij = a_ij·(datt_ij − Σ_j' a_ij'·datt_ij')
 * (masked entries have a_ij = 0, so they get no gradient). The dot products of ROWS rows run
 * together, each its own sum in its own order (the bits of one row at a time), so that ROWS
 * chains of additions are in flight instead of one. */
#define ROWS 4
static void softmax_backward(const real *att, real *datt, int Tq, int Tk)
{
    double dot[ROWS];
    for (int i = 0; i < Tq; i++) {
        const real *arow = att + (size_t)i * Tk;
        real *drow = datt + (size_t)i * Tk;
        const int k = i % ROWS;   // the row's place in its group
        if (k == 0 && i + ROWS <= Tq) {   // scalars: registers, not the stack
            const real *a1 = arow + Tk, *a2 = arow + 2 * Tk, *a3 = arow + 3 * Tk;
            const real *d1 = drow + Tk, *d2 = drow + 2 * Tk, *d3 = drow + 3 * Tk;
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (int c = 0; c < Tk; c++) {
                s0 += arow[c] * drow[c];
                s1 += a1[c] * d1[c];
                s2 += a2[c] * d2[c];
                s3 += a3[c] * d3[c];
            }
            dot[0] = s0, dot[1] = s1, dot[2] = s2, dot[3] = s3;
        } else if (i + ROWS - k > Tq) {   // a short last group: row by row
            dot[k] = 0.0;
            for (int c = 0; c < Tk; c++) dot[k] += arow[c] * drow[c];
        }
        for (int c = 0; c < Tk; c++) drow[c] = arow[c] * (drow[c] - dot[k]);
    }
}

static void backward_pairs(void *ctx, int t, int nt)
{
    const att_job_t *j = ctx;
    const int Tq = j->Tq, Tk = j->Tk, C = j->C, H = j->H, Dh = C / H;
    const double scale = j->o && j->o->scale > 0.0 ? j->o->scale : 1.0 / sqrt((double)Dh);
    size_t lo, hi;
    threads_part((size_t)j->B * H, t, nt, 1, &lo, &hi);
    for (size_t pair = lo; pair < hi; pair++) {
        const int b = (int)(pair / (size_t)H), h = (int)(pair % (size_t)H);
        const size_t oq = (size_t)b * Tq * C + (size_t)h * Dh;       // query-side offset
        const size_t ok = (size_t)b * Tk * C + (size_t)h * Dh;       // key-side offset
        const real *ah = j->catt + ((size_t)b * H + h) * Tq * Tk;  // (Tq,Tk)
        real *dah = j->datt + ((size_t)b * H + h) * Tq * Tk;       // (Tq,Tk)
        // datt (Tq,Tk) = dctx_h (Tq,Dh) · v_hᵀ (Dh,Tk)
        head_gemm(GEMM_GRAD_A, 0, 1, Tq, Tk, Dh, 1.0, j->dctx + oq, C, j->v + ok, C, dah, Tk);
        // dv_h (Tk,Dh) = att_hᵀ (Tk,Tq) · dctx_h (Tq,Dh)   (β = 0: linear.c)
        head_gemm(GEMM_GRAD_B, 1, 0, Tk, Dh, Tq, 1.0, ah, Tk, j->dctx + oq, C, j->dv + ok, C);
        softmax_backward(ah, dah, Tq, Tk);
        if (j->o && j->o->softcap > 0.0) {   // s' = c·tanh(s/c): ∂s'/∂s = 1 − (s'/c)²
            const double c = j->o->softcap;
            const real *sh = j->o->capped + ((size_t)b * H + h) * Tq * Tk;
            for (size_t e = 0; e < (size_t)Tq * Tk; e++) {
                const double th = sh[e] / c;
                dah[e] *= 1.0 - th * th;
            }
        }
        // dq_h (Tq,Dh) = dscore (Tq,Tk) · k_h (Tk,Dh) · scale
        head_gemm(GEMM_GRAD_A, 0, 0, Tq, Dh, Tk, scale, dah, Tk, j->k + ok, C, j->dq + oq, C);
        // dk_h (Tk,Dh) = dscoreᵀ (Tk,Tq) · q_h (Tq,Dh) · scale
        head_gemm(GEMM_GRAD_A, 1, 0, Tk, Dh, Tq, scale, dah, Tk, j->q + oq, C, j->dk + ok, C);
    }
}

void attention_backward_opt(real *dq, real *dk, real *dv, real *datt,
                            const real *dctx, const real *q, const real *k,
                            const real *v, const real *att, int B, int Tq, int Tk, int C,
                            int H, const attention_opts_t *o)
{
    att_job_t j = {.dq = dq, .dk = dk, .dv = dv, .datt = datt, .dctx = dctx, .q = q, .k = k,
                   .v = v, .catt = att, .B = B, .Tq = Tq, .Tk = Tk, .C = C, .H = H, .o = o};
    threads_run(pair_threads(&j), backward_pairs, &j);
}

void attention_backward(real *dq, real *dk, real *dv, real *datt,
                        const real *dctx, const real *q, const real *k,
                        const real *v, const real *att, int B, int Tq, int Tk, int C,
                        int H)
{
    attention_backward_opt(dq, dk, dv, datt, dctx, q, k, v, att, B, Tq, Tk, C, H, NULL);
}
