/* figures.c — the table of figures (figures.h): the paper's and the measures' figures of
 * report/, then each study's. A new figure adds its row here. */
#include "report/plot_internal.h"
#include "study/figures.h"

static const plot_figure_t FIGURES[] = {
    {plot_fig_grad_vs_layer, 1}, {plot_fig_grad_vs_depth, 1}, {plot_fig_grad_vs_width, 1},
    {plot_fig_grad_ratio, 1},
    {plot_fig_jacobian, 1}, {plot_fig_hidden_norms, 1}, {plot_fig_loss, 0},
    {plot_fig_grad_vs_layer_encdec, 0}, {plot_fig_subout, 1}, {plot_fig_val_loss, 0}, {plot_fig_bleu, 0},
    {plot_fig_atlas_lr, 0}, {plot_fig_atlas_sensitivity, 0}, {plot_fig_atlas_grad, 0},
    {plot_fig_output_change, 0}, {plot_fig_model_update, 0}, {plot_fig_mlm, 0},
    {plot_fig_dyn_grad, 0}, {plot_fig_dyn_update, 0}, {plot_fig_dyn_entropy, 0},
    {plot_fig_dyn_logit, 0}, {plot_fig_dyn_lines, 0}, {plot_fig_dyn_lr, 0},
    {plot_fig_size_lr, 0}, {plot_fig_size_sensitivity, 0}, {plot_fig_size_best_lr, 0},
    {plot_fig_size_logit, 0}, {plot_fig_warmup_indicators, 0},
    {plot_fig_remedies_boundary, 0}, {plot_fig_precision_lines, 0},
    {plot_fig_precision_lr, 0}, {plot_fig_optimizers_boundary, 0},
    {plot_fig_curv_lens, 0}, {plot_fig_curv_init_depth, 0}, {plot_fig_curv_blocks, 0},
    {plot_fig_est_density, 0}, {plot_fig_est_critical, 0},
    {NULL, 0},
};

const plot_figure_t *study_figures(void) { return FIGURES; }
