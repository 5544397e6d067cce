/* batch.h — one batch of token ids as the model consumes it (docs/design.md §6, §6b).
 * Rows are right-padded: id −1 marks padding in src and tokens, and "not scored" in targets.
 * The caller owns the buffers (capacity for the largest batch); B, S, T are this batch's. */
#ifndef STABILITY_BATCH_H
#define STABILITY_BATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int B, S, T;        /* rows; source length (0 for arch = lm); target length */
    int32_t *src;       /* (B,S) source ids, −1 = padding (arch = encdec; NULL for lm) */
    int32_t *tokens;    /* (B,T) the input (lm) or the decoder input (encdec), −1 = padding */
    int32_t *targets;   /* (B,T) −1 = not scored (may be NULL: no loss) */
} batch_t;

/* The largest batch a task makes (data_caps), which a model is built for (model_create). */
typedef struct {
    int B, T, S;             /* rows, target length, source length (0 for lm) */
    size_t tokens;           /* most target tokens B·T of one batch (≤ B·T_max) */
    size_t src_tokens;       /* most source tokens B·S of one batch */
} batch_caps_t;

#endif
