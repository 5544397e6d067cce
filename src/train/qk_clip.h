/* qk_clip.h — MuonClip's QK-Clip (Kimi Team 2025, "Kimi K2", arXiv 2507.20534, §2.1) and the
 * norm-constrained optimizers' per-tensor statistics for /train (docs/design.md §6h). Numerics
 * only. */
#ifndef STABILITY_QK_CLIP_H
#define STABILITY_QK_CLIP_H

#include "measure/probe.h"
#include "train/optim.h"

/* After an update: for every attention and head h, S = the largest |q·k|·scale over the batch
 * of the forward just run (the statistic nn/attention.h keeps, after the update's own forward);
 * where S > tau, the head's columns of W_Q and W_K (and b_Q, b_K) are multiplied by √(tau/S),
 * so its logits on that batch would be scaled by tau/S. Returns the heads clipped. */
int qk_clip_apply(model_t *m, double tau);

/* The optimizer's statistics of the update just made, per layer tensor on the probes' (L,P)
 * axes (NaN where a tensor is absent or the value does not apply): rms the RMS of its direction
 * (optim_seg_t.sumsq), spec the spectral norm of the step applied, lr·s·σ_max(O), and sv_min,
 * sv_max the singular values of O (muon's hidden matrices with o->want_sv; else NaN). */
void qk_optim_stats(const probe_axes_t *ax, const model_t *m, const optim_t *o, double lr,
                    double *rms, double *spec, double *sv_min, double *sv_max);

#endif
