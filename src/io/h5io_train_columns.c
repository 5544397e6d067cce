/* h5io_train_columns.c — the /train datasets of a training run's file (docs/design.md §6): the
 * column table (name, row group, type, shape, description), a column's row shape and presence,
 * and the creation of every present column with its attributes. The writer: h5io_train.c.
 *
 *   /train/step lr loss grad_norm time       (S)       per update (step int64, the rest f64)
 *   /train/probe_step                        (P)       int64: update 1 and every probe.every
 *   /train/grad_fro                          (P,L,16)  ‖∇W‖_F per layer tensor (attr param)
 *   /train/extra_grad_fro                    (P,4)     tok_embed lm_head final_norm.{gamma,beta}
 *   /train/hidden_sqnorm                     (P,L,4)   sites input resid1 resid2 output
 *   /train/final_sqnorm, final_jacobian_spec (P)
 *   /train/jacobian_spec                     (P,L,2)   norm1 norm2
 *   /train/eval_step, val_loss               (E)       text task only
 *   /train/bleu_step, bleu                   (B)       with train.bleu_every only
 *   /train/update_rms                        (S,L)     the update's RMS per layer (Adam family)
 *   /train/update_rms_extra                  (S,E)     … of tok_embed lm_head final norms
 *   /train/radam_rho, radam_rect             (S)       train.optimizer = radam only
 *   /train/stagnation                        (S)       train.precision = bfloat16_pure only
 *   /train/weight_spec                       (P,L,16)  ‖W‖₂ per layer matrix      } probe.precision_
 *   /train/extra_weight_spec                 (P,4)     ‖W‖₂ of tok_embed, lm_head } measures (auto:
 *   /train/channel_amax, swiglu_cos          (P,L,C), (P,L,F)  max |x_c|; SwiGLU's gate/linear
 *                                                      cosines (swiglu only)  } bfloat16*, fp8)
 *   /train/pv_round_bias                     (P,L,H)   softmax·V's rounding bias }
 *   /train/curv_step, hessian_max, …         (C)       probe.curvature_every > 0 only: update 0
 *                                                      and every N (docs/design.md §10)
 *   /train/hessian_block_max, precond_block_max (C,L+1,6) layer rows + "outside" × block kind
 *   /train/density_nodes, density_weights, … (C,P,M)   the SLQ density [probe][m]
 *   /train/block_density_nodes, _weights  (C,L+1,6,P,M) every block's (probe.density_blocks)
 *   /train/qk_clip_heads                     (S)       train.qk_clip > 0 only
 *   /train/opt_update_rms                    (P,L,16)  muon, lion, nsgd only (docs/design.md §6h)
 *   /train/opt_update_spec, ortho_sv_min, ortho_sv_max (P,L,16) muon only
 * Every dataset has string attributes axes and description (and the names of its last axis).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/h5io_train_internal.h"

const int GROUP_CAP[G_COUNT] = {1024, 16, 64, 128, 16, 16};
const char *const GROUP_KEY[G_COUNT] = {"step", "probe_step", "eval_step", "update_step",
                                        "bleu_step", "curv_step"};
const char *const GROUP_AXIS[G_COUNT] = {"step", "probe", "eval", "update", "bleu", "curv"};

/* The HDF5 name of a probe axis (as in /probe). */
static const char *axis_label(probe_axis_id_t id) { return probe_axis_label(id); }

const column_t COLUMNS[NCOL] = {
    {"step", G_STEP, 1, 0, PA_NONE, "update index t (1-based); row i of every step dataset is update i+1"},
    {"lr", G_STEP, 0, 0, PA_NONE, "learning rate of the update"},
    {"loss", G_STEP, 0, 0, PA_NONE, "training-batch loss before the update"},
    {"grad_norm", G_STEP, 0, 0, PA_NONE, "||grad theta||_2 over all parameters, before clipping"},
    {"time", G_STEP, 0, 0, PA_NONE, "seconds since the run started (summed over resumes)"},
    {"probe_step", G_PROBE, 1, 0, PA_NONE, "update index of each probe row (1 and every probe.every)"},
    {"grad_fro", G_PROBE, 0, 1, PA_PARAM, "||grad W||_F of the update's gradient, before clipping"},
    {"extra_grad_fro", G_PROBE, 0, 0, PA_EXTRA, "||grad||_F of the tensors outside the layers (NaN where absent)"},
    {"hidden_sqnorm", G_PROBE, 0, 1, PA_SITE, "E_token ||x||^2 at each site in the update's forward"},
    {"final_sqnorm", G_PROBE, 0, 0, PA_NONE, "E_token ||x_final||^2"},
    {"jacobian_spec", G_PROBE, 0, 1, PA_NORM, "E_token ||J||_2 of each norm (NaN with probe.jacobian = off)"},
    {"final_jacobian_spec", G_PROBE, 0, 0, PA_NONE, "E_token ||J||_2 of the final norm (NaN without one)"},
    {"subout_grad", G_PROBE, 0, 1, PA_SUB, "E_token ||dL/d(sub-layer output)|| of the update (Liu et al. 2020)"},
    {"eval_step", G_EVAL, 1, 0, PA_NONE, "update index of each validation row (text, translation)"},
    {"val_loss", G_EVAL, 0, 0, PA_NONE, "mean loss on the fixed validation batches after the update"},
    {"update_step", G_UPDATE, 1, 0, PA_NONE, "update index of each model-update row (1..100, then every probe.every)"},
    {"model_update", G_UPDATE, 0, 0, PA_NONE, "E_token ||F(x,theta_t) - F(x,theta_0)|| on a fixed batch, F = the last hidden state (DeepNet)"},
    {"update_rel", G_UPDATE, 0, 1, PA_PARAM, "||W_t - W_(t-1)||_F / ||W_(t-1)||_F of the update"},
    {"bleu_step", G_BLEU, 1, 0, PA_NONE, "update index of each BLEU row (train.bleu_every and the last update)"},
    {"bleu", G_BLEU, 0, 0, PA_NONE, "BLEU (0-100) of greedy translations of the validation split after the update: NLTK corpus_bleu on detokenised text (docs/paper_training.md)"},
    // the dynamics (docs/design.md §6g); older files lack them (readers take NaN)
    {"max_attn_logit", G_STEP, 0, 0, PA_NONE, "max |attention logit| over every attention, head and visible (query, key) of the update's forward (after QK-norm and soft-capping)"},
    {"min_attn_entropy", G_STEP, 0, 0, PA_NONE, "lowest over attentions of the mean over heads of the attention entropy (nats)"},
    {"logz_mean_abs", G_STEP, 0, 0, PA_NONE, "mean over scored positions of |log Z|, log Z = logsumexp of the output logits"},
    {"z_loss", G_STEP, 0, 0, PA_NONE, "the z-loss term train.z_loss * mean (log Z)^2 added to the loss (0 when off; /train/loss is the cross-entropy)"},
    {"attn_entropy", G_PROBE, 0, 1, PA_HEAD, "attention entropy of each head, mean over the batch's queries (nats)"},
    {"attn_max_logit", G_PROBE, 0, 1, PA_HEAD, "max |attention logit| of each head"},
    {"resid_rms", G_PROBE, 0, 1, PA_NONE, "RMS of the residual stream after each layer"},
    {"logz_max_abs", G_PROBE, 0, 0, PA_NONE, "max over scored positions of |log Z|"},
    {"logit_max", G_PROBE, 0, 0, PA_NONE, "max over scored positions of max |output logit|"},
    // the optimizer's statistics (docs/design.md §6h); older files lack them (readers take NaN)
    {"update_rms", G_STEP, 0, 1, PA_NONE, "RMS over each layer's tensors of the update direction m_hat/(sqrt(v_hat)+eps) (Adam family, before lr and any rectifier or clipping; Wortsman et al. 2023b); NaN for sgd and a diverged step"},
    {"update_rms_extra", G_STEP, 0, 0, PA_EXTRA, "the same RMS over each tensor outside the layers (NaN where absent)"},
    {"radam_rho", G_STEP, 0, 0, PA_NONE, "RAdam's rho_t of the update (Liu et al. 2020): the adaptive step is on when rho_t > 4 (train.optimizer = radam only)"},
    {"radam_rect", G_STEP, 0, 0, PA_NONE, "RAdam's rectification r_t of the update; NaN where rho_t <= 4 (the un-adapted momentum step); beta2 and t only, never the model"},
    // the curvature (docs/design.md §10), with probe.curvature_every > 0 only
    {"curv_step", G_CURV, 1, 0, PA_NONE, "updates before each curvature row: 0 (at initialisation) and every probe.curvature_every"},
    {"hessian_max", G_CURV, 0, 0, PA_NONE, "lambda_max of the Hessian of the objective on the measurement batch (Lanczos, probe.curvature_iters steps)"},
    {"hessian_min", G_CURV, 0, 0, PA_NONE, "lambda_min of the Hessian"},
    {"precond_max", G_CURV, 0, 0, PA_NONE, "lambda_max(P^-1 H), P Adam's preconditioner of the last update (update 0: of update 1); sgd: lambda_max(H)"},
    {"precond_max_active", G_CURV, 0, 0, PA_NONE, "lambda_max(P^-1 H) with the eps-floored coordinates (sqrt(v_hat) < eps) left out"},
    {"precond_eps_share", G_CURV, 0, 0, PA_NONE, "share (sum of squares) of the unit top eigenvector of P^-1/2 H P^-1/2 on eps-floored coordinates"},
    {"stability_threshold", G_CURV, 0, 0, PA_NONE, "the optimizer's largest stable sharpness at the next update's lr: adam 2(1+beta1)/((1-beta1) lr), sgd 2(1+momentum)/lr (inf at lr 0)"},
    {"hessian_max_residual", G_CURV, 0, 0, PA_NONE, "residual bound |beta_K s_K| of the Ritz pair of hessian_max"},
    {"hessian_min_residual", G_CURV, 0, 0, PA_NONE, "residual bound of the Ritz pair of hessian_min"},
    {"precond_max_residual", G_CURV, 0, 0, PA_NONE, "residual bound of the Ritz pair of precond_max"},
    {"precond_max_active_residual", G_CURV, 0, 0, PA_NONE, "residual bound of the Ritz pair of precond_max_active"},
    {"curv_h", G_CURV, 0, 0, PA_NONE, "the smallest central-difference step a Hessian-vector product of the row used (1e-6, divided by 10 while a ReLU unit switched)"},
    {"curv_kinked", G_CURV, 0, 0, PA_NONE, "products at which a ReLU unit switched even at h = 1e-9: the Lanczos values they entered are NaN"},
    {"curv_passes", G_CURV, 0, 0, PA_NONE, "forward+backward passes the row took"},
    {"hessian_block_max", G_CURV, 0, 2, PA_KIND, "lambda_max of each diagonal block of the Hessian, layer x kind (last row: the tensors outside the layers), probe.curvature_block_iters Lanczos steps; NaN where a layer has no such kind"},
    {"precond_block_max", G_CURV, 0, 2, PA_KIND, "lambda_max of each diagonal block of P^-1/2 H P^-1/2 with its eps-floored coordinates left out"},
    // the norm-constrained optimizers (docs/design.md §6h)
    {"qk_clip_heads", G_STEP, 0, 0, PA_NONE, "attention heads whose W_Q, W_K columns QK-Clip scaled by sqrt(tau/S) after the update (Kimi K2; train.qk_clip = tau only)"},
    {"opt_update_rms", G_PROBE, 0, 1, PA_PARAM, "RMS of each layer tensor's update direction before the lr, after the update (muon: s*O on hidden matrices, AdamW's m_hat/(sqrt(v_hat)+eps) elsewhere; lion: sign(c); nsgd: b/||b||_F); NaN where absent"},
    {"opt_update_spec", G_PROBE, 0, 1, PA_PARAM, "spectral norm of the step Muon applied to each hidden matrix, lr*s*sigma_max(O) (NaN for AdamW's tensors)"},
    {"ortho_sv_min", G_PROBE, 0, 1, PA_PARAM, "smallest singular value of Muon's O = NS(u) among those >= 1e-3 sigma_max (u's null space stays null); NaN for AdamW's tensors"},
    {"ortho_sv_max", G_PROBE, 0, 1, PA_PARAM, "largest singular value of Muon's O = NS(u) (Newton-Schulz gives about 0.7-1.2, not 1)"},
    // low precision (docs/design.md, "Low precision, emulated"): stagnation with bfloat16_pure,
    // the others with probe.precision_measures
    {"stagnation", G_STEP, 0, 0, PA_NONE, "share of the parameters with a non-zero float32 update whose stored bfloat16 value did not change (the update lost to rounding; train.precision = bfloat16_pure only); NaN when no update was non-zero"},
    {"weight_spec", G_PROBE, 0, 1, PA_PARAM, "largest singular value ||W||_2 of each weight matrix after the forward/backward of the probe step (30 power iterations on W^T W; NaN for vectors)"},
    {"extra_weight_spec", G_PROBE, 0, 0, PA_EXTRA, "||W||_2 of tok_embed and lm_head (NaN for vectors and absent tensors)"},
    {"channel_amax", G_PROBE, 0, 1, PA_CHANNEL, "max |x_c| over the batch's positions of each channel of each layer's output (the residual stream after the layer): the outliers a per-tensor scale must cover (Fishman et al. 2025)"},
    {"swiglu_cos", G_PROBE, 0, 1, PA_UNIT, "cosine between each SwiGLU unit's gate and linear weight vectors W1[:,j], W3[:,j] (Fishman et al. 2025); model.activation = swiglu only"},
    {"pv_round_bias", G_PROBE, 0, 1, PA_HEAD, "mean over the batch and the head's outputs of (bf16(P) - P).V, the bias bfloat16 rounding of the attention probabilities adds to softmax.V (Qiu & Yao 2025); NaN with train.round_attn_probs = off"},
    // the estimators (docs/design.md §10): the trace with probe.trace_probes > 0, the density
    // with probe.density_probes > 0
    {"hessian_trace", G_CURV, 0, 0, PA_NONE, "Hutchinson's estimate of tr(H) on the measurement batch, probe.trace_probes Rademacher probes"},
    {"hessian_trace_stderr", G_CURV, 0, 0, PA_NONE, "its standard error s/sqrt(N) over the probes"},
    {"hessian_block_trace", G_CURV, 0, 2, PA_KIND, "Hutchinson's estimate of the trace of each diagonal block of H, layer x kind (as hessian_block_max); NaN where a layer has no such kind"},
    {"density_nodes", G_CURV, 0, 3, PA_NONE, "SLQ nodes of H [probe][m]: the eigenvalues of each probe's Lanczos tridiagonal (probe.density_probes Rademacher probes, probe.density_iters steps); NaN past an invariant space"},
    {"density_weights", G_CURV, 0, 3, PA_NONE, "SLQ weights [probe][m]: the squared first components of the tridiagonal's unit eigenvectors (each probe's sum to 1)"},
    {"precond_density_nodes", G_CURV, 0, 3, PA_NONE, "SLQ nodes of P^-1/2 H P^-1/2 without its eps-floored coordinates (the active P^-1 H; sgd: H)"},
    {"precond_density_weights", G_CURV, 0, 3, PA_NONE, "their weights"},
    // with probe.density_blocks = on
    {"block_density_nodes", G_CURV, 0, 4, PA_KIND, "SLQ nodes of each diagonal block of H [layer][kind][probe][m] (the blocks of hessian_block_max; block b's probes from the stream of its hessian_block_trace); NaN where a layer has no such kind and past an invariant space"},
    {"block_density_weights", G_CURV, 0, 4, PA_KIND, "their weights (each probe's sum to 1)"},
    // the critical sharpness (docs/design.md §10), with probe.critical_sharpness = on only
    {"critical_sharpness", G_CURV, 0, 0, PA_NONE, "2/eta_c, eta_c the smallest step scale at which the measurement batch's loss rises along the update the optimizer is about to take (forward passes: doubling, then bisection to 1/16; Kalra et al. 2026)"},
    {"update_curvature", G_CURV, 0, 0, PA_NONE, "u^T H u / u^T u along that update u (one Hessian-vector product)"},
    {"critical_quadratic", G_CURV, 0, 0, PA_NONE, "u^T H u / g^T u, g the measurement batch's gradient: the critical sharpness of the local quadratic model (what critical_sharpness estimates; u^T H u / u^T u when u = g)"},
    {"grad_precond_curvature", G_CURV, 0, 0, PA_NONE, "g^T H_hat g / g^T g on the same gradient, H_hat = (1-beta1)/(1+beta1) P^-1 H = (1-beta1)/((1+beta1)(1-beta1^t)) diag(1/(sqrt(v_hat)+eps)) H (Bai et al. 2025; sgd: H/(1+momentum)); their spike threshold 2/lr"},
    {"critical_passes", G_CURV, 0, 0, PA_NONE, "forward passes critical_sharpness took: the loss at theta, the doubling and the bisection (its cost; the gradient's forward+backward pass not counted)"},
};
_Static_assert(sizeof COLUMNS / sizeof COLUMNS[0] == NCOL, "NCOL and COLUMNS disagree");

/* Inner dims of a column's row; returns their count (0..4). */
int h5io_tw_row_dims(const h5io_train_t *w, const column_t *c, hsize_t *d)
{
    int n = 0;
    if (c->layered == 3 || c->layered == 4) {   // [layer][kind] and the density's [probe][m]
        if (c->layered == 4) {
            d[n++] = (hsize_t)w->ax.L + 1;
            d[n++] = (hsize_t)probe_axis_len(&w->ax, c->axis);
        }
        d[n++] = (hsize_t)w->density_probes;
        d[n++] = (hsize_t)w->density_iters;
        return n;
    }
    if (c->layered) d[n++] = (hsize_t)w->ax.L + (c->layered == 2);
    if (c->axis != PA_NONE) d[n++] = (hsize_t)probe_axis_len(&w->ax, c->axis);
    return n;
}

size_t h5io_tw_row_size(const h5io_train_t *w, const column_t *c)
{
    hsize_t d[4];
    size_t n = 1;
    for (int i = 0, r = h5io_tw_row_dims(w, c, d); i < r; i++) n *= (size_t)d[i];
    return n;
}

/* Column k exists: validation columns with validation data, and no empty axis (e.g. the norm
 * axis of a model without norms: HDF5 cannot chunk a zero-length dimension). */
int h5io_tw_column_present(const h5io_train_t *w, int k)
{
    if (COLUMNS[k].group == G_EVAL && !w->text) return 0;
    if (COLUMNS[k].group == G_BLEU && !w->bleu) return 0;
    if (!strncmp(COLUMNS[k].name, "radam_", 6) && !w->radam) return 0;
    if (COLUMNS[k].group == G_CURV && !w->curv) return 0;
    if (!strcmp(COLUMNS[k].name, "qk_clip_heads") && !w->qk_clip) return 0;
    if (!strcmp(COLUMNS[k].name, "opt_update_rms") && !w->norm_opt) return 0;
    if ((!strcmp(COLUMNS[k].name, "opt_update_spec") || !strncmp(COLUMNS[k].name, "ortho_sv_", 9)) &&
        w->norm_opt != 2)
        return 0;
    if (!strcmp(COLUMNS[k].name, "stagnation") && !w->pure) return 0;
    if ((strstr(COLUMNS[k].name, "weight_spec") || !strcmp(COLUMNS[k].name, "pv_round_bias") ||
         !strcmp(COLUMNS[k].name, "channel_amax") || !strcmp(COLUMNS[k].name, "swiglu_cos")) &&
        !w->lowp)
        return 0;
    if (!strcmp(COLUMNS[k].name, "swiglu_cos") && !w->swiglu) return 0;
    if (COLUMNS[k].group == G_CURV && k >= h5io_tw_col("critical_sharpness") && !w->critical)
        return 0;   // the critical sharpness's columns, the last of the table
    if (!strncmp(COLUMNS[k].name, "hessian_trace", 13) || !strcmp(COLUMNS[k].name, "hessian_block_trace"))
        return w->curv && w->trace;
    if (COLUMNS[k].layered == 3) return w->curv && w->density_probes > 0;
    if (COLUMNS[k].layered == 4) return w->curv && w->density_probes > 0 && w->density_blocks;
    return COLUMNS[k].axis == PA_NONE || probe_axis_len(&w->ax, COLUMNS[k].axis) > 0;
}

/* Column index by name (the table is fixed: a miss is a programming error). */
int h5io_tw_col(const char *name)
{
    for (int k = 0; k < NCOL; k++)
        if (!strcmp(COLUMNS[k].name, name)) return k;
    abort();
}

/* Axis names and labels of a column. */
static int column_attrs(h5io_train_t *w, const column_t *c, const char *path)
{
    const char *axes[5] = {GROUP_AXIS[c->group]};
    int n = 1, rc = 0;
    if (c->layered == 4) {   // every block's density [layer][kind][probe][m]
        axes[n++] = "layer";
        axes[n++] = axis_label(c->axis);
        axes[n++] = "probe";
        axes[n++] = "node";
    } else if (c->layered == 3) {   // the density's [probe][m]
        axes[n++] = "probe";
        axes[n++] = "node";
    } else if (c->layered) {
        axes[n++] = "layer";
    }
    if (c->layered == 4) {
        rc |= h5io_write_attr_strings(&w->f, path, axis_label(c->axis),
                                      (const char *const *)probe_axis_names(&w->ax, c->axis),
                                      (size_t)probe_axis_len(&w->ax, c->axis));
    } else if (c->axis != PA_NONE) {
        axes[n++] = axis_label(c->axis);
        rc |= h5io_write_attr_strings(&w->f, path, axis_label(c->axis),
                                      (const char *const *)probe_axis_names(&w->ax, c->axis),
                                      (size_t)probe_axis_len(&w->ax, c->axis));
    }
    if (c->layered == 2 || c->layered == 4) {   // the layer rows' stacks, then "outside"
        const char **rows = malloc(((size_t)w->ax.L + 1) * sizeof *rows);
        if (!rows) return 1;
        for (int i = 0; i < w->ax.L; i++) rows[i] = w->ax.stack[i];
        rows[w->ax.L] = "outside";
        rc |= h5io_write_attr_strings(&w->f, path, "stack", rows, (size_t)w->ax.L + 1);
        free(rows);
    } else if (c->layered == 1 && w->ax.encdec) {   // which stack each layer row belongs to
        rc |= h5io_write_attr_strings(&w->f, path, "stack", (const char *const *)w->ax.stack,
                                      (size_t)w->ax.L);
    }
    rc |= h5io_write_attr_strings(&w->f, path, "axes", axes, (size_t)n);
    rc |= h5io_write_attr_string(&w->f, path, "description", c->description);
    return rc;
}

/* Every present column's dataset (extendible, chunked by its group's rows) with its attributes.
 * 0; 1 when an attribute could not be written; −1 when a dataset could not be created. */
int h5io_tw_create_columns(h5io_train_t *w)
{
    int rc = 0;
    for (int k = 0; k < NCOL && !rc; k++) {
        if (!h5io_tw_column_present(w, k)) continue;
        const column_t *c = &COLUMNS[k];
        hsize_t dims[5] = {0}, maxd[5] = {H5S_UNLIMITED}, chunk[5] = {(hsize_t)GROUP_CAP[c->group]};
        const int r = 1 + h5io_tw_row_dims(w, c, dims + 1);
        for (int i = 1; i < r; i++) maxd[i] = chunk[i] = dims[i];
        hid_t space = H5Screate_simple(r, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, r, chunk);
        char path[64];
        snprintf(path, sizeof path, "/train/%s", c->name);
        hid_t ds = H5Dcreate2(w->f.id, path, c->is_int ? H5T_STD_I64LE : H5T_IEEE_F64LE, space,
                              H5P_DEFAULT, dcpl, H5P_DEFAULT);
        H5Pclose(dcpl);
        H5Sclose(space);
        if (ds < 0) return -1;
        H5Dclose(ds);
        rc |= column_attrs(w, c, path);
    }
    return rc;
}
