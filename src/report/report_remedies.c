/* report_remedies.c — `stability info`'s line on the lr remedies a run used (docs/design.md
 * §6k): the controller and its keys, how many updates it held the lr below the schedule, the
 * catapult lr, the relative-update cap. */
#include <math.h>
#include <stdio.h>
#include "io/h5io.h"
#include "report/report.h"

void report_remedies(FILE *out, struct h5io_file *f, const char *prefix, const config_t *cfg)
{
    const lr_control_t ctl = cfg->train.lr_control;
    const int catapult = cfg->train.warmup_start == WARMUP_START_CATAPULT;
    const int autowu = cfg->train.schedule == SCHED_AUTOWU;
    if (ctl == LR_CONTROL_NONE && !catapult && cfg->train.update_ratio_cap == 0.0 &&
        cfg->train.spectral_bound == 0.0 && !autowu)
        return;
    char tr[512];
    snprintf(tr, sizeof tr, "%s/train", prefix);
    fprintf(out, "remedies:");
    const char *sep = " ";
    if (ctl == LR_CONTROL_CURVATURE)
        fprintf(out, " lr capped at %g x 2(1+beta1)/((1-beta1) lambda), lambda the active "
                "preconditioned sharpness every %d updates", cfg->train.curvature_cap,
                cfg->train.lr_control_every);
    else if (ctl == LR_CONTROL_CDAT)
        fprintf(out, " CDAT lr, sigma %g, EMA %g, at most the schedule's", cfg->train.cdat_sigma,
                cfg->train.cdat_ema);
    double held;
    if (ctl != LR_CONTROL_NONE) {
        if (h5io_read_attr_double(f, tr, "lr_held_below", &held) == 0)
            fprintf(out, " (below the schedule at %.0f updates)", held);
        sep = "; ";
    }
    double eta;
    if (catapult) {
        if (h5io_read_attr_double(f, tr, "catapult_lr", &eta) == 0)
            fprintf(out, "%scatapult lr %.3g (2/lr %.3g), warm-up from %.3g to %g", sep, eta,
                    2.0 / eta, fmin(eta, cfg->train.lr), cfg->train.lr);
        else
            fprintf(out, "%scatapult warm-up (no catapult_lr in the file)", sep);
        sep = "; ";
    }
    if (cfg->train.update_ratio_cap > 0.0) {
        fprintf(out, "%s|dW|/|W| <= %g per tensor", sep, cfg->train.update_ratio_cap);
        sep = "; ";
    }
    if (cfg->train.spectral_bound > 0.0)
        fprintf(out, "%ssigma1(dW) <= %g sigma1(W) per matrix (AdamW2's lr bound)", sep,
                cfg->train.spectral_bound);
    double ws, wl;
    if (autowu) {
        if (h5io_read_attr_double(f, tr, "autowu_switch_step", &ws) == 0 &&
            h5io_read_attr_double(f, tr, "autowu_switch_lr", &wl) == 0)
            fprintf(out, "%sAutoWU warmed up for %.0f updates to lr %.3g, then cosine decay", sep,
                    ws, wl);
        else
            fprintf(out, "%sAutoWU still warming up", sep);
    }
    fprintf(out, "\n");
}
