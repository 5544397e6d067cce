/* report.h — text tables of probe results (the `info` verb and the end of a probe run). */
#ifndef STABILITY_REPORT_H
#define STABILITY_REPORT_H

#include <stdio.h>
#include "config/config.h"
#include "measure/diagnose.h"
#include "measure/probe.h"

/* One line: the model and data of cfg (placement, norm, sizes, task, seed). */
void report_config(FILE *out, const config_t *cfg);

/* Per layer, mean ± 95 % CI over seeds: ‖E_batch ∇W‖_F of W¹ and W² (every tensor with all),
 * hidden-state norms / d beside Lemma 2, ‖J‖₂ beside √d/‖x−μ‖ (Lemma 3). */
void report_probe(FILE *out, const config_t *cfg, const probe_t *p, int all);

/* The scheme table (config/scheme.c) as tab-separated text with a header line: name, label,
 * family, final norm (auto), norms, theory line, atlas rank, colour. */
void report_scheme_table(FILE *out);

/* One tab-separated line for a run: its name, scheme (scheme_name), atlas rank (scheme_rank),
 * family and label. */
void report_scheme_of(FILE *out, const char *run, const config_t *cfg);

/* For a training run at prefix of f ("" or "/runs/NAME"): what went wrong, since when and
 * where, with the keys to set against it — divergence, a finite explosion, not learning, a
 * warm-up longer than the run, the unigram plateau, attention-logit growth, entropy collapse,
 * the lower layers' gradient collapse (measure/diagnose.h) — or one line saying it is healthy.
 * Nothing for a file without /train. cfg: the run's (a text run's plateau when the file
 * predates /train@unigram_entropy). */
struct h5io_file;
void report_diagnosis(FILE *out, struct h5io_file *f, const char *prefix, const config_t *cfg);

/* The diagnosis of the training run at prefix of f into d (cfg must outlive d; no axis names
 * are kept): its rows fed through measure/diagnose.h as the run fed them, then the file's
 * divergence and diagnose_finish. 0, or 1 when it is not a training run. */
int report_diagnose_run(struct h5io_file *f, const char *prefix, const config_t *cfg, diagnose_t *d);

/* The final loss of the training run at prefix (measure/outcome.h: NaN when it diverged, its
 * last validation loss, else the mean of its last tenth of training losses); NaN when it is no
 * training run. */
double report_final_loss(struct h5io_file *f, const char *prefix);

/* Muon's settings and routing in words: which tensors it orthogonalises and which go to AdamW
 * at which lr (docs/design.md §6h). */
void report_muon_routing(FILE *out, const config_t *c);

/* Two lines for a training run: what distinguishes it (optimizer, lr, schedule, warm-up,
 * updates, batch, precision, mitigations) and how it ended (status, final and validation
 * loss, time, ms/update, tokens/s). */
void report_train_header(FILE *out, struct h5io_file *f, const char *prefix, const config_t *cfg);

/* The line on the lr remedies (docs/design.md §6k) the run at prefix used; nothing without. */
void report_remedies(FILE *out, struct h5io_file *f, const char *prefix, const config_t *cfg);

/* Tokens of one training batch as the config fixes them (B·n of a single stack), or 0 when
 * rows vary in length (encdec). */
double report_tokens_per_update(const config_t *cfg);

#endif
