/* report.c — probe tables: every measurement beside the paper's value. Presentation only;
 * statistics and theory values come from fit.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

static void report_gradients(FILE *out, const probe_t *p, int all)
{
    static const int main_cols[] = {P_W1, P_W2};
    const int ncols = all ? P_NUM_LAYER_PARAMS : 2;
    const size_t LP = (size_t)p->L * P_NUM_LAYER_PARAMS;
    fprintf(out, "\nExpected gradient ||E_batch dL/dW||_F, mean ± 95%% CI over %d seeds\n", p->S);
    fprintf(out, "layer");
    for (int c = 0; c < ncols; c++)
        fprintf(out, " %21s", PROBE_PARAM_NAMES[all ? c : main_cols[c]]);
    fprintf(out, "\n");
    for (int l = 0; l < p->L; l++) {
        fprintf(out, "%5d", l);
        for (int c = 0; c < ncols; c++) {
            const int k = all ? c : main_cols[c];
            print_ci(out, p->grad_fro + (size_t)l * P_NUM_LAYER_PARAMS + k, LP, p->S);
        }
        fprintf(out, "\n");
    }
    if (all) {
        for (int e = 0; e < EXTRA_COUNT; e++) {
            fprintf(out, "%-16s", PROBE_EXTRA_NAMES[e]);
            print_ci(out, p->extra_grad_fro + e, EXTRA_COUNT, p->S);
            fprintf(out, "\n");
        }
    }
}

static void report_hidden(FILE *out, const config_t *cfg, const probe_t *p)
{
    const int d = cfg->model.d_model, dff = cfg->model.d_ff;
    const size_t LS = (size_t)p->L * SITE_COUNT;
    double *scaled = malloc(LS * p->S * sizeof(double));
    if (!scaled) return;
    for (size_t i = 0; i < LS * p->S; i++) scaled[i] = p->hidden_sqnorm[i] / d;
    fprintf(out, "\nHidden-state norms E||x||^2 / d (Lemma 2), mean ± 95%% CI\n");
    if (cfg->model.placement == PLACEMENT_POST) {
        fprintf(out, "layer %21s %21s %10s\n", "x^2 / d", "x^5 / d", "lemma x^5");
        for (int l = 0; l < p->L; l++) {
            fprintf(out, "%5d", l);
            print_ci(out, scaled + (size_t)l * SITE_COUNT + SITE_RESID1, LS, p->S);
            print_ci(out, scaled + (size_t)l * SITE_COUNT + SITE_RESID2, LS, p->S);
            fprintf(out, " %10.4f\n", fit_lemma2_post(d, dff));
        }
    } else {
        fprintf(out, "layer %21s %21s %21s\n", "x_l / d", "x_{l+1} / d", "lemma bounds x_{l+1}");
        for (int l = 0; l < p->L; l++) {
            double lo, hi;
            fit_lemma2_pre_bounds(d, dff, l + 1, fit_input_sqnorm(), &lo, &hi);
            fprintf(out, "%5d", l);
            print_ci(out, scaled + (size_t)l * SITE_COUNT + SITE_INPUT, LS, p->S);
            print_ci(out, scaled + (size_t)l * SITE_COUNT + SITE_OUTPUT, LS, p->S);
            fprintf(out, "      [%6.3f, %6.3f]\n", lo, hi);
        }
    }
    free(scaled);
}

static void report_jacobians(FILE *out, const config_t *cfg, const probe_t *p)
{
    if (cfg->model.norm == NORM_NONE || !cfg->probe.jacobian) return;
    const size_t LN = (size_t)p->L * PROBE_NORMS;
    fprintf(out, "\n%s Jacobian ||J||_2 beside sqrt(d)/||x-mu|| (Lemma 3), mean over seeds\n",
            cfg->model.norm == NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
    fprintf(out, "layer %21s %12s %21s %12s\n", "norm1 ||J||_2", "sqrt(d)/|x|", "norm2 ||J||_2",
            "sqrt(d)/|x|");
    for (int l = 0; l < p->L; l++) {
        fprintf(out, "%5d", l);
        for (int k = 0; k < PROBE_NORMS; k++) {
            double mean, half;
            size_t n;
            print_ci(out, p->jacobian_spec + (size_t)l * PROBE_NORMS + k, LN, p->S);
            fit_mean_ci(p->jacobian_bound + (size_t)l * PROBE_NORMS + k, LN, (size_t)p->S, &mean,
                        &half, &n);
            fprintf(out, " %12.4e", mean);
        }
        fprintf(out, "\n");
    }
    double mean, half, bound;
    size_t n;
    fit_mean_ci(p->final_jacobian + 0, 5, (size_t)p->S, &mean, &half, &n);
    if (n) {
        fit_mean_ci(p->final_jacobian + 4, 5, (size_t)p->S, &bound, &half, &n);
        fprintf(out, "final %10.3e %10s %12.4e\n", mean, "", bound);
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
}
