/* rope.c — rotary positions, forward and backward (nn/rope.h). Every output element depends on
 * one pair of its row, so rows are split among the pool's threads with the serial bits. */
#include <math.h>
#include "nn/rope.h"
#include "util/threads.h"

void rope_tables(real *cos_t, real *sin_t, int T, int Dh, double base)
{
    const int half = Dh / 2;
    for (int i = 0; i < half; i++) {
        const double freq = 1.0 / pow(base, (2.0 * i) / Dh);   // θ_i = base^(−2i/Dh)
        for (int t = 0; t < T; t++) {
            const double angle = t * freq;
            cos_t[(size_t)t * half + i] = cos(angle);
            sin_t[(size_t)t * half + i] = sin(angle);
        }
    }
}

typedef struct {
    real *out;
    const real *x, *cos_t, *sin_t;
    size_t rows;
    int T, C, H, sign;   /* sign +1: R·x (forward), −1: Rᵀ·x (backward) */
} rope_job_t;

static void rope_part(void *ctx, int t, int nt)
{
    const rope_job_t *j = ctx;
    const int C = j->C, half = C / j->H / 2;
    size_t lo, hi;
    threads_part(j->rows, t, nt, 1, &lo, &hi);
    for (size_t n = lo; n < hi; n++) {
        const real *cs = j->cos_t + (n % (size_t)j->T) * half;   // (Dh/2) of position n mod T
        const real *sn = j->sin_t + (n % (size_t)j->T) * half;
        const real *x = j->x + n * C;
        real *y = j->out + n * C;
        for (int c = 0; c < C; c += 2) {   // pair (c, c+1) is pair i = (c mod Dh)/2 of its head
            const int i = (c % (2 * half)) / 2;
            const double x0 = x[c], x1 = x[c + 1], co = cs[i], si = j->sign * sn[i];
            y[c] = x0 * co - x1 * si;
            y[c + 1] = x0 * si + x1 * co;
        }
    }
}

static void run(real *out, const real *x, const real *cos_t, const real *sin_t, size_t B, int T,
                int C, int H, int sign)
{
    const rope_job_t j = {.out = out, .x = x, .cos_t = cos_t, .sin_t = sin_t,
                          .rows = B * (size_t)T, .T = T, .C = C, .H = H, .sign = sign};
    threads_run(threads_for(3.0 * (double)j.rows * C), rope_part, (void *)&j);
}

void rope_forward(real *out, const real *x, const real *cos_t, const real *sin_t, size_t B,
                  int T, int C, int H)
{
    run(out, x, cos_t, sin_t, B, T, C, H, 1);
}

void rope_backward(real *dx, const real *dout, const real *cos_t, const real *sin_t, size_t B,
                   int T, int C, int H)
{
    // the rotation by −tθ_i is its transpose: (d0·c + d1·s, −d0·s + d1·c)
    run(dx, dout, cos_t, sin_t, B, T, C, H, -1);
}
