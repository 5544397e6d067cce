/* cdat.c — the update of CDAT (train/cdat.h). */
#include <math.h>
#include "train/cdat.h"

double cdat_update(train_t *t, double scheduled)
{
    model_t *m = t->s.model;
    const size_t n = m->num_params;
    double *theta = t->curv_theta, *u = t->cdat_u;
    for (size_t i = 0; i < n; i++) theta[i] = m->params[i];
    optim_update(&t->opt, m->params, m->grads, 1.0);   // the moments advance once, as at any η
    double neg_gu = 0.0;   // −gᵀu, the loss's first-order decrease along u (Roulet et al. Eq. 3)
    for (size_t i = 0; i < n; i++) {
        u[i] = (double)m->params[i] - theta[i];
        neg_gu -= (double)m->grads[i] * u[i];
    }
    const double uHu = curv_quad(t->curv, theta, u, &t->s.batch);
    const double rule = lrctl_cdat(&t->s.cfg, &t->ctl, neg_gu, uHu);
    const double lr = isnan(rule) ? scheduled : lrctl_apply(&t->ctl, scheduled, rule);
    for (size_t i = 0; i < n; i++) m->params[i] = (real)(theta[i] + lr * u[i]);
    return lr;
}
