/* attention.c — multi-head scaled dot-product attention, forward and backward.
 * Each (batch, head) is three GEMMs on strided views of (B,T,C): no copies of q, k, v. */
#include <math.h>
#include <gsl/gsl_cblas.h>
#include "nn/attention.h"

void attention_forward(double *ctx, double *att, const double *q, const double *k,
                       const double *v, int B, int T, int C, int H, int causal)
{
    const int Dh = C / H;
    const double scale = 1.0 / sqrt((double)Dh);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const double *qh = q + (size_t)b * T * C + (size_t)h * Dh;   // (T,Dh) stride C
            const double *kh = k + (size_t)b * T * C + (size_t)h * Dh;   // (T,Dh) stride C
            const double *vh = v + (size_t)b * T * C + (size_t)h * Dh;   // (T,Dh) stride C
            double *ah = att + ((size_t)b * H + h) * T * T;               // (T,T)
            double *ch = ctx + (size_t)b * T * C + (size_t)h * Dh;       // (T,Dh) stride C
            // scores (T,T) = q_h · k_hᵀ / √Dh
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, Dh,
                        scale, qh, C, kh, C, 0.0, ah, T);
            // softmax over keys, max-subtracted; masked keys (j > i) get probability 0
            for (int i = 0; i < T; i++) {
                double *row = ah + (size_t)i * T;
                const int nk = causal ? i + 1 : T;
                double mx = row[0];
                for (int j = 1; j < nk; j++) if (row[j] > mx) mx = row[j];
                double sum = 0.0;
                for (int j = 0; j < nk; j++) { row[j] = exp(row[j] - mx); sum += row[j]; }
                const double inv = 1.0 / sum;
                for (int j = 0; j < nk; j++) row[j] *= inv;
                for (int j = nk; j < T; j++) row[j] = 0.0;
            }
            // ctx_h (T,Dh) = att_h (T,T) · v_h (T,Dh)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, Dh, T,
                        1.0, ah, T, vh, C, 0.0, ch, C);
        }
    }
}

void attention_backward(double *dq, double *dk, double *dv, double *datt,
                        const double *dctx, const double *q, const double *k,
                        const double *v, const double *att, int B, int T, int C, int H)
{
    const int Dh = C / H;
    const double scale = 1.0 / sqrt((double)Dh);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const size_t off = (size_t)b * T * C + (size_t)h * Dh;
            const double *ah = att + ((size_t)b * H + h) * T * T;        // (T,T)
            double *dah = datt + ((size_t)b * H + h) * T * T;             // (T,T)
            // datt (T,T) = dctx_h (T,Dh) · v_hᵀ (Dh,T)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, Dh,
                        1.0, dctx + off, C, v + off, C, 0.0, dah, T);
            // dv_h (T,Dh) += att_hᵀ (T,T) · dctx_h (T,Dh)
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, Dh, T,
                        1.0, ah, T, dctx + off, C, 1.0, dv + off, C);
            // softmax backward, in place: dscore_ij = a_ij·(datt_ij − Σ_j' a_ij'·datt_ij')
            // (masked entries have a_ij = 0, so they get no gradient)
            for (int i = 0; i < T; i++) {
                const double *arow = ah + (size_t)i * T;
                double *drow = dah + (size_t)i * T;
                double dot = 0.0;
                for (int j = 0; j < T; j++) dot += arow[j] * drow[j];
                for (int j = 0; j < T; j++) drow[j] = arow[j] * (drow[j] - dot);
            }
            // dq_h (T,Dh) += dscore (T,T) · k_h (T,Dh) / √Dh
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, Dh, T,
                        scale, dah, T, k + off, C, 1.0, dq + off, C);
            // dk_h (T,Dh) += dscoreᵀ (T,T) · q_h (T,Dh) / √Dh
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, Dh, T,
                        scale, dah, T, q + off, C, 1.0, dk + off, C);
        }
    }
}
