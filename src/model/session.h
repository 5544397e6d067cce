/* session.h — what every verb that runs the model needs, built one way: the config's data,
 * its model (sized for the data's largest batch), the two random streams and one batch.
 * Used by the probe, training, dump, gradcheck and the tests (docs/design.md §4).
 *
 * Streams: rng_init = seed (model_init, perturbations), rng_data = seed + DATA_SEED_OFFSET
 * (batches, then each batch's dropout masks), so batches never reuse the initialisation's
 * random numbers and a run is reproducible from init.seed alone.
 */
#ifndef STABILITY_SESSION_H
#define STABILITY_SESSION_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "config/config.h"
#include "data/data.h"
#include "model/model.h"

typedef struct {
    config_t cfg;                /* a copy */
    data_t data;
    model_t *model;
    gsl_rng *rng_init, *rng_data;
    batch_t batch;               /* the current batch; buffers of the model's capacity */
    char error[256];             /* why session_next_batch refused its batch */
} session_t;

/* Open cfg's data and build its model (not initialised: session_init) after checking the
 * memory it needs against this machine's. Returns 0, 1 (out of memory) or 2 (err set: the
 * data task rejects cfg, or the model does not fit). */
int session_open(session_t *s, const config_t *cfg, char *err, size_t errlen);

/* 1 when cfg's bfloat16 products go through oneDNN (train.gemm_path = onednn, or auto on a CPU
 * with AMX; docs/design.md, "The fast bfloat16 path"), 0 when they are emulated or there are none
 * (float32, float64, fp8, round_gemm off). */
int session_gemm_onednn(const config_t *cfg);

/* Free what session_open allocated (s may be half-open). */
void session_close(session_t *s);

/* Admin's profiling batch comes from a stream of its own: seed + this. */
#define SESSION_PROFILE_OFFSET 0x2545F491UL

/* Seed rng_init with seed and rng_data with seed + DATA_SEED_OFFSET, then initialise the
 * model from rng_init (placement = admin: and set its ω by the profiling pass on one batch
 * of the stream seed + SESSION_PROFILE_OFFSET). */
void session_init(session_t *s, unsigned long seed);

/* Draw the next batch from rng_data into s->batch, then its dropout masks; check every id
 * against the model (model_check_batch: ids index the embedding). Returns 0, or 2 with
 * s->error set (a data task that produced ids outside the vocabulary: a bug, never a crash). */
int session_next_batch(session_t *s);

/* This machine's physical memory in bytes (0 when unknown): what an estimate is refused against. */
double session_physical_bytes(void);

/* Bytes session_open would allocate for cfg (the model's buffers; the data's are small). */
double session_memory_bytes(const config_t *cfg);

#endif
