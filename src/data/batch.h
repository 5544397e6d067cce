/* batch.h — one encoder-decoder batch: source ids, decoder input, targets (int32, row-major).
 *
 * The caller owns the three buffers, sized for the largest batch it will be given; whoever
 * fills a batch writes B, S, T and the first B·S / B·T entries, with row stride S / T.
 */
#ifndef STABILITY_DATA_BATCH_H
#define STABILITY_DATA_BATCH_H

#include <stdint.h>

typedef struct {
    int B, S, T;        /* rows; source length; target length (this batch, ≤ the maxima) */
    int32_t *src;       /* (B,S) source ids, −1 = padding */
    int32_t *tokens;    /* (B,T) decoder input, −1 = padding */
    int32_t *targets;   /* (B,T) −1 = not scored */
} batch_t;

#endif
