/* dynamics.h — training-time instabilities as measures (docs/design.md §6g): the attention's
 * entropy and largest logit per layer and head (Dehghani et al. 2023; Zhai et al. 2023), the
 * output's log Z (Chowdhery et al. 2022) and the residual stream's RMS, read from the
 * statistics the last forward left in the model (nn/attention.h, nn/loss.h). Numerics only.
 */
#ifndef STABILITY_DYNAMICS_H
#define STABILITY_DYNAMICS_H

#include "measure/probe.h"

/* The cheap scalars of every update. */
typedef struct {
    double max_logit;        /* max over every attention, head and (query, visible key) of |s| */
    double min_entropy;      /* min over attentions of the mean over heads of the entropy */
    double logz_mean_abs;    /* mean over scored positions of |log Z| */
    double z_term;           /* c·mean (log Z)² (train.z_loss; 0 when off) */
} dynamics_scalars_t;

/* The scalars of the last forward of m (its batch's scored targets; NaN when none). */
void dynamics_scalars(const model_t *m, dynamics_scalars_t *d);

/* The per-layer measures of the last forward: entropy and max |logit| (L,nhead) of every
 * attention's heads (NaN where a layer has no such attention), the residual stream's RMS after
 * each layer (L) over non-padding positions, and out[3] = mean |log Z|, max |log Z|, max
 * |output logit| over scored positions. */
void dynamics_layers(const probe_axes_t *ax, const model_t *m, double *entropy,
                     double *max_logit, double *rms, double *out);

#endif
