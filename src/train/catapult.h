/* catapult.h — the catapult-chosen first lr of the warm-up (Kalra & Barkeshli 2024, arXiv
 * 2406.09405; docs/design.md §6k). Numerics only. */
#ifndef STABILITY_CATAPULT_H
#define STABILITY_CATAPULT_H

#include <stddef.h>
#include "train/train.h"

/* η_c of the run at θ₀ into t->ctl.catapult_lr: the smallest lr whose one update of the run's
 * optimizer (fresh state, the gradient of the measurement batch after clipping) raises that
 * batch's loss (lrctl_catapult_search from lr·2^−10). The batch comes from the stream
 * init.seed + CURV_BATCH_OFFSET (the curvature's), the data's position kept; θ₀ is restored
 * bit for bit and dropout is off. Returns 0 or 1 (out of memory; err set). */
int catapult_find(train_t *t, char *err, size_t errlen);

#endif
