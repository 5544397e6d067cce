/* scheme.c — the table of normalisation schemes (config/scheme.h; docs/design.md §6c names the
 * paper and reference code of each row) and the lookups every other module uses. */
#include <stdio.h>
#include <string.h>
#include "config/config.h"

/* The paper's symbols of a single stack's sites input, resid1, resid2, output (§1). */
static const char *const POST_SITES[4] = {"x_l", "x^2_l", "x^5_l", "x_{l+1}"};
static const char *const PRE_SITES[4] = {"x_l", "x^3_l", "x_{l+1}", "x_{l+1}"};

#define ANY_NORM -1, -1, 0   /* a placement row: selected by model.placement alone */
#define BIT(p) (1u << (p))

const scheme_t SCHEMES[] = {
    // name       label      family            final  norms                 why_none
    {"post", "Post-LN", SCHEME_POST_LIKE, 0, SCHEME_NORMS_ANY, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_POST, POST_SITES, 0, "#c0392b"},
    {"pre", "Pre-LN", SCHEME_PRE_LIKE, 1, SCHEME_NORMS_ANY, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_PRE, PRE_SITES, 1, "#1f5fa8"},
    {"peri", "peri", SCHEME_PRE_LIKE, 1, SCHEME_NORMS_PLACED, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_NONE, NULL, 2, "#27ae60"},
    {"deepnorm", "deepnorm", SCHEME_POST_LIKE, 0, SCHEME_NORMS_PLACED, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_NONE, NULL, 3, "#8e44ad"},
    {"admin", "admin", SCHEME_POST_LIKE, 0, SCHEME_NORMS_PLACED, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_NONE, NULL, 4, "#e67e22"},
    {"rezero", "rezero", SCHEME_NORM_FREE, 0, SCHEME_NORMS_NONE,
     "replaces the norms by a learnable residual scale", ANY_NORM, NULL,
     SCHEME_THEORY_NONE, NULL, 5, "#16a085"},
    {"subln", "subln", SCHEME_PRE_LIKE, 1, SCHEME_NORMS_PLACED, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_NONE, NULL, 6, "#7f8c8d"},
    {"mixln", "mixln", SCHEME_MIXED, 1, SCHEME_NORMS_PLACED, NULL, ANY_NORM, "model.mix_ratio",
     SCHEME_THEORY_NONE, NULL, 7, "#d35400"},
    {"b2t", "b2t", SCHEME_POST_LIKE, 0, SCHEME_NORMS_PLACED, NULL, ANY_NORM, NULL,
     SCHEME_THEORY_NONE, NULL, 8, "#2c3e50"},
    // variants: DyT (model.norm = dyt on any placement; the atlas's row is pre+dyt), T-Fixup
    {"pre+dyt", "pre+dyt", SCHEME_FAMILY_OF_PLACEMENT, 0, SCHEME_NORMS_ANY, NULL, NORM_DYT, -1, 0,
     "model.dyt_alpha", SCHEME_THEORY_NONE, NULL, 9, "#f1c40f"},
    {"tfixup", "tfixup", SCHEME_NORM_FREE, 0, SCHEME_NORMS_NONE,
     "is an initialisation for a model without norms", -1, INIT_TFIXUP,
     BIT(PLACEMENT_POST) | BIT(PLACEMENT_PRE), NULL, SCHEME_THEORY_NONE, NULL, 10, "#e84393"},
};
const int SCHEME_COUNT = (int)(sizeof SCHEMES / sizeof SCHEMES[0]);
_Static_assert(sizeof SCHEMES / sizeof SCHEMES[0] >= PLACEMENT_COUNT, "a row per placement");

const scheme_t *scheme_of_placement(int p)
{
    return p >= 0 && p < PLACEMENT_COUNT ? &SCHEMES[p] : NULL;
}

const scheme_t *scheme_of(const config_t *cfg)
{
    for (int i = PLACEMENT_COUNT; i < SCHEME_COUNT; i++) {
        const scheme_t *s = &SCHEMES[i];
        if ((s->norm < 0 || (int)cfg->model.norm == s->norm) &&
            (s->init < 0 || (int)cfg->init.scheme == s->init))
            return s;
    }
    const scheme_t *p = scheme_of_placement((int)cfg->model.placement);
    return p ? p : &SCHEMES[0];
}

scheme_family_t scheme_family(const config_t *cfg)
{
    const scheme_t *s = scheme_of(cfg);
    if (s->family != SCHEME_FAMILY_OF_PLACEMENT) return s->family;
    const scheme_t *p = scheme_of_placement((int)cfg->model.placement);
    return p ? p->family : SCHEME_POST_LIKE;
}

void scheme_name(const config_t *cfg, char *buf, size_t len)
{
    const scheme_t *s = scheme_of(cfg), *p = scheme_of_placement((int)cfg->model.placement);
    if (s->init >= 0) { snprintf(buf, len, "%s", s->name); return; }   // an init's scheme
    // a norm other than LayerNorm is part of the name, unless the placement allows only none
    if (cfg->model.norm == NORM_LAYERNORM || (p && p->norms == SCHEME_NORMS_NONE))
        snprintf(buf, len, "%s", config_placement_name(cfg->model.placement));
    else
        snprintf(buf, len, "%s+%s", config_placement_name(cfg->model.placement),
                 config_norm_name(cfg->model.norm));
}

void scheme_label(const config_t *cfg, char *buf, size_t len)
{
    const scheme_t *s = scheme_of(cfg);
    if (s->theory != SCHEME_THEORY_NONE) { snprintf(buf, len, "%s", s->label); return; }
    scheme_name(cfg, buf, len);
    if (!strcmp(buf, s->name)) snprintf(buf, len, "%s", s->label);   // the row's own scheme
}

const scheme_t *scheme_by_name(const char *name)
{
    for (int i = 0; i < SCHEME_COUNT; i++)
        if (!strcmp(SCHEMES[i].name, name)) return &SCHEMES[i];
    return NULL;
}
