/* report.c — probe tables: every measurement beside the paper's value. Presentation only;
 * statistics and theory values come from measure/fit.c. Columns are found by name
 * (measure/probe.h), so any model's probe prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/report.h"
#include "measure/fit.h"

/* "1.234e-01 ± 5.6e-03" of values x[s·stride], s < S. */
static void print_ci(FILE *out, const double *x, size_t stride, int S)
{
    double mean, half;
    size_t n;
    fit_mean_ci(x, stride, (size_t)S, &mean, &half, &n);
    if (n == 0) fprintf(out, " %21s", "-");
    else if (isnan(half)) fprintf(out, " %10.3e %10s", mean, "");
    else fprintf(out, " %10.3e ±%8.1e", mean, half);
}

/* The row label: the layer, counted from 1 as the figures count it, with its stack in an
 * encoder–decoder ("dec 3", the decoder's third layer). */
static void print_row(FILE *out, const probe_axes_t *ax, int r)
{
    if (!ax->encdec) { fprintf(out, "%5d", r + 1); return; }
    int first = r;
    while (first > 0 && !strcmp(ax->stack[first - 1], ax->stack[r])) first--;
    fprintf(out, "%3s%2d", ax->stack[r], r - first + 1);
}

static void report_gradients(FILE *out, const probe_t *p, int all)
{
    const probe_axes_t *ax = &p->ax;
    int cols[64], ncols = 0;
    if (all) {
        for (int c = 0; c < ax->nparam && ncols < 64; c++) cols[ncols++] = c;
    } else {
        static const char *const MAIN[2] = {"w1", "w2"};
        for (int k = 0; k < 2; k++) {
            const int c = probe_axis_find(ax->param, ax->nparam, MAIN[k]);
            if (c >= 0) cols[ncols++] = c;
        }
    }
    const size_t LP = (size_t)ax->L * ax->nparam;
    fprintf(out, "\nExpected gradient ||E_batch dL/dW||_F, mean ± 95%% CI over %d seeds\n", p->S);
    fprintf(out, "layer");
    for (int c = 0; c < ncols; c++) fprintf(out, " %21s", ax->param[cols[c]]);
    fprintf(out, "\n");
    for (int l = 0; l < ax->L; l++) {
        print_row(out, ax, l);
        for (int c = 0; c < ncols; c++)
            print_ci(out, p->grad_fro + (size_t)l * ax->nparam + cols[c], LP, p->S);
        fprintf(out, "\n");
    }
    if (all) {
        for (int e = 0; e < ax->nextra; e++) {
            fprintf(out, ax->encdec ? "%-21s" : "%-16s", ax->extra[e]);
            print_ci(out, p->extra_grad_fro + e, (size_t)ax->nextra, p->S);
            fprintf(out, "\n");
        }
    }
}

/* Column q of the site axis named name (−1 if absent). */
static int site(const probe_axes_t *ax, const char *name)
{
    return probe_axis_find(ax->site, ax->nsite, name);
}

static void report_hidden(FILE *out, const config_t *cfg, const probe_t *p)
{
    const probe_axes_t *ax = &p->ax;
    const int d = cfg->model.d_model, dff = cfg->model.d_ff;
    const size_t LQ = (size_t)ax->L * ax->nsite;
    double *scaled = malloc(LQ * p->S * sizeof(double));
    if (!scaled) return;
    for (size_t i = 0; i < LQ * p->S; i++) scaled[i] = p->hidden_sqnorm[i] / d;
    // Lemma 2 is stated for Post-LN (x² = resid1, x⁵ = the last residual sum) and Pre-LN
    // (input and output, between bounds); other schemes get their input and output, no lemma
    const scheme_theory_t theory = scheme_of(cfg)->theory;
    const int post = theory == SCHEME_THEORY_POST;
    const int last = site(ax, ax->encdec ? "resid3" : "resid2") >= 0 && ax->encdec
                         ? site(ax, "resid3") : site(ax, "resid2");
    const int a = post ? site(ax, "resid1") : site(ax, "input");
    const int b = post ? last : site(ax, "output");
    if (theory == SCHEME_THEORY_NONE) {
        char label[64];
        scheme_label(cfg, label, sizeof label);
        fprintf(out, "\nHidden-state norms E||x||^2 / d, mean ± 95%% CI (Lemma 2 is stated for "
                     "Post-LN and Pre-LN, not for %s)\n", label);
        fprintf(out, "layer %21s %21s\n", "x_l / d", "x_{l+1} / d");
    } else {
        fprintf(out, "\nHidden-state norms E||x||^2 / d (Lemma 2), mean ± 95%% CI\n");
        if (post) fprintf(out, "layer %21s %21s %10s\n", "x^2 / d", "x^5 / d", "lemma x^5");
        else fprintf(out, "layer %21s %21s %21s\n", "x_l / d", "x_{l+1} / d", "lemma bounds x_{l+1}");
    }
    for (int l = 0; l < ax->L && a >= 0 && b >= 0; l++) {
        print_row(out, ax, l);
        print_ci(out, scaled + (size_t)l * ax->nsite + a, LQ, p->S);
        // the encoder's rows have no resid3: their x⁵ is resid2
        const int bl = post && isnan(scaled[(size_t)l * ax->nsite + b]) ? site(ax, "resid2") : b;
        print_ci(out, scaled + (size_t)l * ax->nsite + bl, LQ, p->S);
        if (theory == SCHEME_THEORY_NONE) {
            fprintf(out, "\n");
        } else if (post) {
            fprintf(out, " %10.4f\n", fit_lemma2_post(d, dff));
        } else {
            double lo, hi;
            fit_lemma2_pre_bounds(d, dff, l + 1, fit_input_sqnorm(), &lo, &hi);
            fprintf(out, "      [%6.3f, %6.3f]\n", lo, hi);
        }
    }
    free(scaled);
}

static void report_jacobians(FILE *out, const config_t *cfg, const probe_t *p)
{
    const probe_axes_t *ax = &p->ax;
    if (cfg->model.norm == NORM_NONE || !cfg->probe.jacobian || ax->nnorm == 0) return;
    const size_t LR = (size_t)ax->L * ax->nnorm;
    fprintf(out, "\n%s Jacobian ||J||_2 beside sqrt(d)/||x-mu|| (Lemma 3), mean over seeds\n",
            cfg->model.norm == NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
    fprintf(out, "layer");
    for (int k = 0; k < ax->nnorm; k++) {
        char head[32];
        snprintf(head, sizeof head, "%s ||J||_2", ax->norm[k]);
        fprintf(out, " %21s %12s", head, "sqrt(d)/|x|");
    }
    fprintf(out, "\n");
    for (int l = 0; l < ax->L; l++) {
        print_row(out, ax, l);
        for (int k = 0; k < ax->nnorm; k++) {
            double mean, half;
            size_t n;
            print_ci(out, p->jacobian_spec + (size_t)l * ax->nnorm + k, LR, p->S);
            fit_mean_ci(p->jacobian_bound + (size_t)l * ax->nnorm + k, LR, (size_t)p->S, &mean,
                        &half, &n);
            if (n) fprintf(out, " %12.4e", mean);
            else fprintf(out, " %12s", "-");
        }
        fprintf(out, "\n");
    }
    double mean, half, bound;
    size_t n;
    fit_mean_ci(p->final_jacobian + 0, PROBE_JACOBIAN_FIELDS, (size_t)p->S, &mean, &half, &n);
    if (n) {
        fit_mean_ci(p->final_jacobian + 4, PROBE_JACOBIAN_FIELDS, (size_t)p->S, &bound, &half, &n);
        fprintf(out, "final %10.3e %10s %12.4e\n", mean, "", bound);
    }
}

/* Liu et al. 2020's measure: the gradient reaching each sub-layer's output, per token. */
static void report_subout(FILE *out, const probe_t *p)
{
    const probe_axes_t *ax = &p->ax;
    if (ax->nsub == 0 || !p->subout_grad || isnan(p->subout_grad[0])) return;
    const size_t LX = (size_t)ax->L * ax->nsub;
    fprintf(out, "\nGradient at each sub-layer's output E_token ||dL/d out||, mean ± 95%% CI\n");
    fprintf(out, "layer");
    for (int x = 0; x < ax->nsub; x++) fprintf(out, " %21s", ax->sub[x]);
    fprintf(out, "\n");
    for (int l = 0; l < ax->L; l++) {
        print_row(out, ax, l);
        for (int x = 0; x < ax->nsub; x++) print_ci(out, p->subout_grad + (size_t)l * ax->nsub + x, LX, p->S);
        fprintf(out, "\n");
    }
}

/* ", RoPE, no biases, muP (base width 32)": what the block and the parametrization change from
 * the 2017 model (docs/design.md §6h, §6i); "" for the paper's. */
static void block_label(const config_t *cfg, char *buf, size_t len)
{
    int n = 0;
    buf[0] = '\0';
    if (cfg->model.positions == POS_ROPE) n += snprintf(buf + n, len - n, ", RoPE");
    if (cfg->model.positions == POS_NONE) n += snprintf(buf + n, len - n, ", no positions");
    if (!cfg->model.bias) n += snprintf(buf + n, len - n, ", no biases");
    if (cfg->init.parametrization == PARAM_MUP_SIMPLE)
        snprintf(buf + n, len - n, ", muP (base width %d)", cfg->init.base_width);
    if (cfg->init.parametrization == PARAM_MUP_TABLE3)
        snprintf(buf + n, len - n, ", muP Table 3 (base width %d)", cfg->init.base_width);
}

void report_config(FILE *out, const config_t *cfg)
{
    char p[64], b[96];   // "Post-LN", "Pre-LN", "deepnorm", "pre+dyt": the scheme's label
    scheme_label(cfg, p, sizeof p);
    block_label(cfg, b, sizeof b);
    if (cfg->model.arch == ARCH_ENCDEC)
        fprintf(out, "%s: %s encoder-decoder %d-%d, %s, %s, d=%d heads=%d d_ff=%d S=%d T=%d "
                "B=%d V=%d%s, task %s, seed %lu\n", cfg->name, p, cfg->model.layers,
                config_dec_layers(cfg), config_norm_name(cfg->model.norm),
                config_activation_name(cfg->model.activation), cfg->model.d_model,
                cfg->model.heads, cfg->model.d_ff, config_src_len(cfg), cfg->model.seq_len,
                cfg->data.batch, cfg->model.vocab, b, config_task_name(cfg->data.task),
                cfg->init.seed);
    else {
        // the attention mask and a vocabulary other than the task's, said: a non-causal
        // next-token LM trains on its own targets (measure/diagnose.h)
        const int bytes = cfg->data.task == TASK_TEXT ? 256 : cfg->data.task == TASK_MLM ? 257 : 0;
        char vnote[48] = "";
        if (bytes && cfg->model.vocab != bytes)
            snprintf(vnote, sizeof vnote, " (the task needs %d)", bytes);
        fprintf(out, "%s: %s, %s, %s, L=%d d=%d heads=%d d_ff=%d n=%d B=%d V=%d%s%s, %s, task %s, "
                "seed %lu\n", cfg->name, p, config_norm_name(cfg->model.norm),
                config_activation_name(cfg->model.activation), cfg->model.layers,
                cfg->model.d_model, cfg->model.heads, cfg->model.d_ff, cfg->model.seq_len,
                cfg->data.batch, cfg->model.vocab, vnote, b,
                cfg->model.causal ? "causal" : "bidirectional", config_task_name(cfg->data.task),
                cfg->init.seed);
    }
}

void report_probe(FILE *out, const config_t *cfg, const probe_t *p, int all)
{
    double mean, half;
    size_t n;
    fit_mean_ci(p->loss, 1, (size_t)p->S, &mean, &half, &n);
    fprintf(out, "loss at initialisation %.4f (ln V = %.4f)\n", mean, log((double)cfg->model.vocab));
    report_gradients(out, p, all);
    report_hidden(out, cfg, p);
    report_jacobians(out, cfg, p);
    if (all) report_subout(out, p);
}

/* ---------------------------------------------------------------- the scheme table */

static const char *const FAMILY_NAMES[] = {"post-like", "pre-like", "norm-free", "mixed",
                                           "of its placement"};
static const char *const NORMS_NAMES[] = {"any", "placed", "none"};
static const char *const THEORY_NAMES[] = {"none", "post", "pre"};

void report_scheme_table(FILE *out)
{
    fprintf(out, "name\tlabel\tfamily\tfinal_norm\tnorms\ttheory\tatlas_rank\tcolor\n");   // rank = row
    for (int i = 0; i < SCHEME_COUNT; i++) {
        const scheme_t *s = &SCHEMES[i];
        fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s->name, s->label,
                FAMILY_NAMES[s->family], s->final_norm ? "on" : "off", NORMS_NAMES[s->norms],
                THEORY_NAMES[s->theory], i, s->color);
    }
}

void report_scheme_of(FILE *out, const char *run, const config_t *cfg)
{
    char name[64], label[64];
    scheme_name(cfg, name, sizeof name);
    scheme_label(cfg, label, sizeof label);
    fprintf(out, "%s\t%s\t%d\t%s\t%s\n", run, name, scheme_rank(name),
            FAMILY_NAMES[scheme_family(cfg)], label);
}
