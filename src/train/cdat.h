/* cdat.h — one update under CDAT (Roulet et al. 2024, arXiv 2407.06183; docs/design.md §6k).
 * Numerics only. */
#ifndef STABILITY_CDAT_H
#define STABILITY_CDAT_H

#include "train/train.h"

/* Update the model with the run's optimizer at the lr CDAT gives (lrctl_cdat), at most
 * scheduled: u = the optimizer's update at lr 1 from θ (so θ_new = θ + η·u: every optimizer of
 * optim.h is linear in η), −gᵀu with g = m->grads (after clipping), uᵀHu by one product on the
 * training batch t->s.batch (curv_quad, float64). Needs t->curv and t->cdat_u. Returns η. */
double cdat_update(train_t *t, double scheduled);

#endif
