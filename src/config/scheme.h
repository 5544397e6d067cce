/* scheme.h — the normalisation schemes (docs/design.md §1, §6c): every fact the program knows
 * about one lives in one row of one const table (scheme.c), beside the enum of model.placement.
 * How a scheme wires its sub-layers is its row of model/placement.c; everything else reads
 * this table: the config's names and rules, the final norm's default, labels, reports,
 * figures, the atlas and its table (`stability table atlas`; `stability info --schemes`).
 *
 * Rows 0 … PLACEMENT_COUNT − 1 are the placements, in the enum's order. The rows after them
 * are variants: a scheme selected by another key on top of a placement (DyT by model.norm,
 * T-Fixup by init.scheme). A configuration's scheme is the variant it selects, else its
 * placement's row.
 */
#ifndef STABILITY_SCHEME_H
#define STABILITY_SCHEME_H

#include <stddef.h>

/* Where the norms sit (model.placement): one row each in scheme.c and model/placement.c. */
typedef enum {
    PLACEMENT_POST = 0, PLACEMENT_PRE = 1, PLACEMENT_PERI = 2, PLACEMENT_DEEPNORM = 3,
    PLACEMENT_ADMIN = 4, PLACEMENT_REZERO = 5, PLACEMENT_SUBLN = 6, PLACEMENT_MIXLN = 7,
    PLACEMENT_B2T = 8, PLACEMENT_NORMFORMER = 9,
    PLACEMENT_COUNT
} placement_t;

/* Which side of Xiong et al.'s divide a scheme is on: its norms after the residual sum
 * (post-like), before the branch with the stream left unnormalised (pre-like), no norm at
 * all (norm-free), or both kinds of layer (mixed). Figures colour runs by it. */
typedef enum {
    SCHEME_POST_LIKE, SCHEME_PRE_LIKE, SCHEME_NORM_FREE, SCHEME_MIXED,
    SCHEME_FAMILY_OF_PLACEMENT   /* a variant: the family of the placement it modifies */
} scheme_family_t;

/* What model.norm may be: any kind, any but none (the scheme places norms), only none. */
typedef enum { SCHEME_NORMS_ANY, SCHEME_NORMS_PLACED, SCHEME_NORMS_NONE } scheme_norms_t;

/* Which line of Xiong et al. 2020 is stated for the scheme (Lemma 2's hidden-state norms,
 * Theorem 1's gradient bound, the site symbols x², x⁵ / x³): Post-LN's, Pre-LN's, or none. */
typedef enum { SCHEME_THEORY_NONE, SCHEME_THEORY_POST, SCHEME_THEORY_PRE } scheme_theory_t;

/* What selects a row: model.placement (the placements' rows), or for a variant model.norm or
 * init.scheme having the row's value. */
typedef enum { SCHEME_BY_PLACEMENT = 0, SCHEME_BY_NORM, SCHEME_BY_INIT } scheme_key_t;

/* One scheme. */
typedef struct {
    const char *name;            /* model.placement's value; a variant's name in the atlas */
    const char *label;           /* legends and reports ("Post-LN"; later schemes: the name) */
    scheme_family_t family;
    int final_norm;              /* model.final_norm = auto puts a norm after the last layer */
    scheme_norms_t norms;
    const char *why_none;        /* SCHEME_NORMS_NONE: why, for the error message */
    scheme_key_t by;             /* a variant: the key that selects it, */
    int value;                   /* and its value (norm_kind_t, init_scheme_t) */
    unsigned placements;         /* a variant: the placements it goes with (bits), 0 = any */
    const char *own_key;         /* "model.mix_ratio": a key only this scheme reads, or NULL */
    scheme_theory_t theory;
    const char *const *site_symbols;   /* the paper's names of the sites input, resid1,
                                          resid2, output of a single stack, or NULL */
    const char *color;           /* the scheme's colour in every atlas figure */
} scheme_t;

/* The table: SCHEME_COUNT rows, placements first (scheme.c); the rows' order is the atlas's
 * (docs/design.md §6d). */
extern const scheme_t SCHEMES[];
extern const int SCHEME_COUNT;

struct config;

/* The row of placement p, or NULL when p is not a placement. */
const scheme_t *scheme_of_placement(int p);

/* Whether cfg selects row s (its placement's row, or a variant by its key's value). */
int scheme_selects(const scheme_t *s, const struct config *cfg);

/* cfg's scheme: the variant row it selects, else its placement's row. */
const scheme_t *scheme_of(const struct config *cfg);

/* The family of cfg's scheme (a variant's is its placement's). */
scheme_family_t scheme_family(const struct config *cfg);

/* cfg's scheme by name, as the atlas lists it: "post", "deepnorm", "pre+dyt", "tfixup", and
 * "post+rmsnorm" for a placement with a norm other than LayerNorm. */
void scheme_name(const struct config *cfg, char *buf, size_t len);

/* What legends and reports call cfg's scheme: its row's label when the row has a line of the
 * paper ("Post-LN"; callers add the norm), else scheme_name. */
void scheme_label(const struct config *cfg, char *buf, size_t len);

/* The row named name (scheme_name's result), or NULL when no row has that name. */
const scheme_t *scheme_by_name(const char *name);

/* A scheme's place in the atlas (its row's index), SCHEME_COUNT for a name of no row. */
int scheme_rank(const char *name);
/* name without today's block's "+rmsnorm" ("post+rmsnorm" → "post", docs/design.md §6i) into
 * out; 1 when it had it. Figures rank and colour such a run as its scheme. */
int scheme_base_name(const char *name, char *out, size_t len);

#endif
