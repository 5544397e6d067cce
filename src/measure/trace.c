/* trace.c — Hutchinson's trace estimator with its standard error (measure/trace.h,
 * docs/design.md §10). Float64 only. */
#include <math.h>
#include <gsl/gsl_statistics_double.h>
#include "measure/slq.h"
#include "measure/trace.h"

void trace_hutchinson(lanczos_op_fn op, void *ctx, const unsigned char *support, size_t n,
                      int probes, gsl_rng *rng, double *z, double *Az, double *samples,
                      trace_result_t *out)
{
    for (int k = 0; k < probes; k++) {
        slq_draw(rng, 0, support, n, z);
        // the product along the unit ẑ = z/‖z‖ (a difference HVP steps h·ẑ), zᵀAz = ‖z‖²·ẑᵀAẑ
        double zz = 0.0, s = 0.0;
        for (size_t i = 0; i < n; i++) zz += z[i] * z[i];
        const double zn = sqrt(zz);
        for (size_t i = 0; i < n; i++) z[i] /= zn;
        op(ctx, z, Az);
        for (size_t i = 0; i < n; i++) s += z[i] * Az[i];   // ẑ is 0 off the support
        samples[k] = zz * s;
    }
    out->probes = probes;
    out->mean = gsl_stats_mean(samples, 1, (size_t)probes);
    out->se = probes > 1 ? gsl_stats_sd_m(samples, 1, (size_t)probes, out->mean) / sqrt(probes)
                         : NAN;
}
