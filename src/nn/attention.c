/* attention.c — multi-head scaled dot-product attention, forward and backward.
 * Each (batch, head) is three GEMMs on strided views of (B,T,C): no copies of q, k, v. */
#include <math.h>
#include <gsl/gsl_cblas.h>
#include "nn/attention.h"

void attention_forward(double *ctx, double *att, const double *q, const double *k,
                       const double *v, int B, int Tq, int Tk, int C, int H, int causal,
                       const int *key_len)
{
    const int Dh = C / H;
    const double scale = 1.0 / sqrt((double)Dh);
    for (int b = 0; b < B; b++) {
        const int nvalid = key_len ? key_len[b] : Tk;
        for (int h = 0; h < H; h++) {
            const double *qh = q + (size_t)b * Tq * C + (size_t)h * Dh;  // (Tq,Dh) stride C
            const double *kh = k + (size_t)b * Tk * C + (size_t)h * Dh;  // (Tk,Dh) stride C
            const double *vh = v + (size_t)b * Tk * C + (size_t)h * Dh;  // (Tk,Dh) stride C
            double *ah = att + ((size_t)b * H + h) * Tq * Tk;             // (Tq,Tk)
            double *ch = ctx + (size_t)b * Tq * C + (size_t)h * Dh;      // (Tq,Dh) stride C
            // scores (Tq,Tk) = q_h · k_hᵀ / √Dh
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dh,
                        scale, qh, C, kh, C, 0.0, ah, Tk);
            // softmax over the visible keys, max-subtracted; the others get probability 0
            for (int i = 0; i < Tq; i++) {
                double *row = ah + (size_t)i * Tk;
                int nk = causal ? i + 1 : Tk;
                if (nk > nvalid) nk = nvalid;
                double mx = row[0];
                for (int j = 1; j < nk; j++) if (row[j] > mx) mx = row[j];
                double sum = 0.0;
                for (int j = 0; j < nk; j++) { row[j] = exp(row[j] - mx); sum += row[j]; }
                const double inv = 1.0 / sum;
                for (int j = 0; j < nk; j++) row[j] *= inv;
                for (int j = nk; j < Tk; j++) row[j] = 0.0;
            }
            // ctx_h (Tq,Dh) = att_h (Tq,Tk) · v_h (Tk,Dh)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dh, Tk,
                        1.0, ah, Tk, vh, C, 0.0, ch, C);
        }
    }
}

void attention_backward(double *dq, double *dk, double *dv, double *datt,
                        const double *dctx, const double *q, const double *k,
                        const double *v, const double *att, int B, int Tq, int Tk, int C,
                        int H)
{
    const int Dh = C / H;
    const double scale = 1.0 / sqrt((double)Dh);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const size_t oq = (size_t)b * Tq * C + (size_t)h * Dh;       // query-side offset
            const size_t ok = (size_t)b * Tk * C + (size_t)h * Dh;       // key-side offset
            const double *ah = att + ((size_t)b * H + h) * Tq * Tk;      // (Tq,Tk)
            double *dah = datt + ((size_t)b * H + h) * Tq * Tk;           // (Tq,Tk)
            // datt (Tq,Tk) = dctx_h (Tq,Dh) · v_hᵀ (Dh,Tk)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dh,
                        1.0, dctx + oq, C, v + ok, C, 0.0, dah, Tk);
            // dv_h (Tk,Dh) = att_hᵀ (Tk,Tq) · dctx_h (Tq,Dh)   (β = 0: linear.c)
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dh, Tq,
                        1.0, ah, Tk, dctx + oq, C, 0.0, dv + ok, C);
            // softmax backward, in place: dscore_ij = a_ij·(datt_ij − Σ_j' a_ij'·datt_ij')
            // (masked entries have a_ij = 0, so they get no gradient)
            for (int i = 0; i < Tq; i++) {
                const double *arow = ah + (size_t)i * Tk;
                double *drow = dah + (size_t)i * Tk;
                double dot = 0.0;
                for (int j = 0; j < Tk; j++) dot += arow[j] * drow[j];
                for (int j = 0; j < Tk; j++) drow[j] = arow[j] * (drow[j] - dot);
            }
            // dq_h (Tq,Dh) = dscore (Tq,Tk) · k_h (Tk,Dh) / √Dh
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dh, Tk,
                        scale, dah, Tk, k + ok, C, 0.0, dq + oq, C);
            // dk_h (Tk,Dh) = dscoreᵀ (Tk,Tq) · q_h (Tq,Dh) / √Dh
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dh, Tq,
                        scale, dah, Tk, q + oq, C, 0.0, dk + ok, C);
        }
    }
}
