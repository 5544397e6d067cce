/* scheme.c — the table of normalisation schemes (config/scheme.h; docs/design.md §6c names the
 * paper and reference code of each row) and the lookups every other module uses. */
#include <stdio.h>
#include <string.h>
#include "config/config.h"

/* The paper's symbols of a single stack's sites input, resid1, resid2, output (§1). */
static const char *const POST_SITES[4] = {"x_l", "x^2_l", "x^5_l", "x_{l+1}"};
static const char *const PRE_SITES[4] = {"x_l", "x^3_l", "x_{l+1}", "x_{l+1}"};

#define BIT(p) (1u << (p))

/* The rows: placements in the enum's order, then the variants; the order is the atlas's. The
 * colours: Okabe & Ito's set and Tol's muted set, each scheme its own (report/plot_palette.h). */
const scheme_t SCHEMES[] = {
    {.name = "post", .label = "Post-LN", .family = SCHEME_POST_LIKE, .final_norm = 0,
     .norms = SCHEME_NORMS_ANY, .theory = SCHEME_THEORY_POST, .site_symbols = POST_SITES,
     .color = "#d55e00"},
    {.name = "pre", .label = "Pre-LN", .family = SCHEME_PRE_LIKE, .final_norm = 1,
     .norms = SCHEME_NORMS_ANY, .theory = SCHEME_THEORY_PRE, .site_symbols = PRE_SITES,
     .color = "#0072b2"},
    {.name = "peri", .label = "peri", .family = SCHEME_PRE_LIKE, .final_norm = 1,
     .norms = SCHEME_NORMS_PLACED, .color = "#56b4e9"},
    {.name = "deepnorm", .label = "deepnorm", .family = SCHEME_POST_LIKE, .final_norm = 0,
     .norms = SCHEME_NORMS_PLACED, .color = "#cc79a7"},
    {.name = "admin", .label = "admin", .family = SCHEME_POST_LIKE, .final_norm = 0,
     .norms = SCHEME_NORMS_PLACED, .color = "#e69f00"},
    {.name = "rezero", .label = "rezero", .family = SCHEME_NORM_FREE, .final_norm = 0,
     .norms = SCHEME_NORMS_NONE, .why_none = "replaces the norms by a learnable residual scale",
     .color = "#009e73"},
    {.name = "subln", .label = "subln", .family = SCHEME_PRE_LIKE, .final_norm = 1,
     .norms = SCHEME_NORMS_PLACED, .color = "#332288"},
    {.name = "mixln", .label = "mixln", .family = SCHEME_MIXED, .final_norm = 1,
     .norms = SCHEME_NORMS_PLACED, .own_key = "model.mix_ratio", .color = "#882255"},
    {.name = "b2t", .label = "b2t", .family = SCHEME_POST_LIKE, .final_norm = 0,
     .norms = SCHEME_NORMS_PLACED, .color = "#000000"},
    {.name = "normformer", .label = "normformer", .family = SCHEME_PRE_LIKE, .final_norm = 1,
     .norms = SCHEME_NORMS_PLACED, .color = "#44aa99"},
    // variants: DyT (model.norm = dyt on any placement; the atlas's row is pre+dyt), T-Fixup
    {.name = "pre+dyt", .label = "pre+dyt", .family = SCHEME_FAMILY_OF_PLACEMENT,
     .norms = SCHEME_NORMS_ANY, .by = SCHEME_BY_NORM, .value = NORM_DYT,
     .own_key = "model.dyt_alpha", .color = "#999933"},
    {.name = "tfixup", .label = "tfixup", .family = SCHEME_NORM_FREE, .norms = SCHEME_NORMS_NONE,
     .why_none = "is an initialisation for a model without norms", .by = SCHEME_BY_INIT,
     .value = INIT_TFIXUP, .placements = BIT(PLACEMENT_POST) | BIT(PLACEMENT_PRE),
     .color = "#aa4499"},
};
const int SCHEME_COUNT = (int)(sizeof SCHEMES / sizeof SCHEMES[0]);
_Static_assert(sizeof SCHEMES / sizeof SCHEMES[0] >= PLACEMENT_COUNT, "a row per placement");

const scheme_t *scheme_of_placement(int p)
{
    return p >= 0 && p < PLACEMENT_COUNT ? &SCHEMES[p] : NULL;
}

int scheme_selects(const scheme_t *s, const config_t *cfg)
{
    switch (s->by) {
    case SCHEME_BY_NORM: return (int)cfg->model.norm == s->value;
    case SCHEME_BY_INIT: return (int)cfg->init.scheme == s->value;
    case SCHEME_BY_PLACEMENT: break;
    }
    return s == scheme_of_placement((int)cfg->model.placement);
}

const scheme_t *scheme_of(const config_t *cfg)
{
    for (int i = PLACEMENT_COUNT; i < SCHEME_COUNT; i++)
        if (scheme_selects(&SCHEMES[i], cfg)) return &SCHEMES[i];
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
    if (s->by == SCHEME_BY_INIT) { snprintf(buf, len, "%s", s->name); return; }   // an init's
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

int scheme_rank(const char *name)
{
    const scheme_t *s = scheme_by_name(name);
    return s ? (int)(s - SCHEMES) : SCHEME_COUNT;
}

int scheme_base_name(const char *name, char *out, size_t len)
{
    static const char SUFFIX[] = "+rmsnorm";
    const size_t n = strlen(name), k = sizeof SUFFIX - 1;
    const int has = n > k && !strcmp(name + n - k, SUFFIX);
    snprintf(out, len, "%.*s", (int)(has ? n - k : n), name);
    return has;
}
