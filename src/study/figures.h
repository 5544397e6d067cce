/* figures.h — the table of figures `stability plot` draws (report/plot.h's plot_draw_all), and
 * the studies' figures in it. Each study's figures sit beside its analysis in study/ and read
 * the figure machinery of report/ (plot_internal.h, plot_band.h); report/ knows only the row
 * type plot_figure_t, never a study (docs/design.md §2). */
#ifndef STABILITY_STUDY_FIGURES_H
#define STABILITY_STUDY_FIGURES_H

#include "report/plot.h"

/* Every figure, in the order they are drawn, ending with a row whose fn is NULL. */
const plot_figure_t *study_figures(void);

/* The stability atlas's training grid (study/atlas_figure.c; docs/design.md §6d): final loss
 * against lr per scheme and depth, and the LR sensitivity per cell. */
int plot_fig_atlas_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_atlas_sensitivity(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
/* Every scheme side by side (study/atlas_schemes_figure.c): the gradient per layer at
 * initialisation, the output change vs depth, DeepNet's model update. */
int plot_fig_atlas_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_output_change(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_model_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The training dynamics (study/dynamics_figure.c; docs/dynamics.md): layer × update heat maps
 * of the gradient, the update ratio, the attention entropy and its largest logit; the lines of
 * the largest logit, the lowest entropy and the loss; the final loss against lr. */
int plot_fig_dyn_grad(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_update(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_entropy(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_logit(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_lines(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_dyn_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The size study of Wortsman et al. 2023 (study/proxies_figure.c; docs/proxies.md): final loss
 * against lr, LR sensitivity and best lr against width, the peak attention logit. */
int plot_fig_size_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_size_sensitivity(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_size_best_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_size_logit(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The curvature estimators (study/estimators_figure.c; docs/estimators.md): the SLQ density of
 * H by update (a panel per run) and the critical sharpness against the exact λ_max over
 * training (a panel per run, log y). */
int plot_fig_est_density(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
int plot_fig_est_critical(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The warm-up study's indicators against the atlas's outcome, a panel each (docs/curvature.md;
 * study/warmup_figure.c). */
int plot_fig_warmup_indicators(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The remedies study's failure boundary: log₂(η_max / linear warm-up's) per method and scheme ×
 * depth, a heat map (docs/design.md §6k; study/remedies_figure.c). Drawn when the set holds a run
 * with a remedy and both baselines. */
int plot_fig_remedies_boundary(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The precision study's curves against the update — max logit, largest ‖W‖₂, stagnation, loss —
 * a line and seed band per arm, a column per lr (issue 49; study/precision_figure.c). Drawn when
 * the set holds a bfloat16, bfloat16_pure or fp8 training run. */
int plot_fig_precision_lines(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

/* The precision study's final loss against the lr, a line per arm with its t-interval over the
 * seeds (the table's column). Drawn as precision_lines. */
int plot_fig_precision_lr(const plot_set_t *set, sbuf_t *s, char *name, size_t len);
/* The optimizers study's boundary: the share of seeds that train per lr × warm-up arm, a heat map
 * per optimizer × scheme × depth (docs/design.md §6h; study/optimizers_figure.c). Drawn when the
 * set holds a Muon, Lion or NSGD training run and runs without and with a linear warm-up. */
int plot_fig_optimizers_boundary(const plot_set_t *set, sbuf_t *s, char *name, size_t len);

#endif
