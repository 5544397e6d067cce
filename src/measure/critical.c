/* critical.c — the critical step η_c and the critical sharpness 2/η_c by a forward-only line
 * search: doubling, then bisection (measure/critical.h; Kalra et al. 2026). */
#include <math.h>
#include "measure/critical.h"

/* The loss rises at η (a loss that is not finite counts as a rise). */
static int rises(critical_loss_fn loss, void *ctx, double loss0, double eta, int *passes)
{
    const double L = loss(ctx, eta);
    (*passes)++;
    return !isfinite(L) || L > loss0;
}

void critical_search(critical_loss_fn loss, void *ctx, double loss0, double guess, double tol,
                     critical_result_t *out)
{
    *out = (critical_result_t){NAN, NAN, NAN, NAN, 0};
    if (!(guess > 0.0) || !isfinite(guess)) return;
    // the bracket: double while the loss falls, or halve while it rises
    double eta = guess;
    const int up = !rises(loss, ctx, loss0, eta, &out->passes);
    int found = 0;
    for (int k = 0; k < CRITICAL_MAX_DOUBLINGS && !found; k++) {
        eta = up ? 2.0 * eta : 0.5 * eta;
        const int r = rises(loss, ctx, loss0, eta, &out->passes);
        if (up && r) { out->lo = 0.5 * eta; out->hi = eta; found = 1; }
        if (!up && !r) { out->lo = eta; out->hi = 2.0 * eta; found = 1; }
    }
    if (!found) { out->lo = out->hi = NAN; return; }
    // bisection to the relative width tol
    while (1.0 - out->lo / out->hi > tol) {
        const double mid = 0.5 * (out->lo + out->hi);
        if (rises(loss, ctx, loss0, mid, &out->passes)) out->hi = mid;
        else out->lo = mid;
    }
    out->eta = 0.5 * (out->lo + out->hi);
    out->sharpness = 2.0 / out->eta;
}
