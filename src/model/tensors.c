/* tensors.c — the parameter registry (docs/design.md §5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/tensors.h"

/* The canonical order of the tensors inside a layer; also the probes' "param" axis. The first
 * sixteen are the single stack's, in the order files of arch = lm have always had. A probe
 * lists only the columns its model declares, so a group inserted here (w3 b3) moves no column
 * of a model without it. Every name a
 * layer's tensor can have is spelled here, once; the accessors below hand out these strings. */
static const char *const COLUMNS[] = {
    "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",                  // self-attention
    "cwq", "cbq", "cwk", "cbk", "cwv", "cbv", "cwo", "cbo",          // cross-attention
    "w1", "b1", "w2", "b2",                                          // FFN
    "w3", "b3",                                                      // SwiGLU's up projection
    "norm1.gamma", "norm1.beta", "norm2.gamma", "norm2.beta",        // the sub-layers' norms
    "norm3.gamma", "norm3.beta",
    "norm1.alpha", "norm2.alpha", "norm3.alpha",                     // DyT's α
    "norm1_out.gamma", "norm1_out.beta", "norm1_out.alpha",          // Peri-LN's output norms
    "norm2_out.gamma", "norm2_out.beta", "norm2_out.alpha",
    "norm3_out.gamma", "norm3_out.beta", "norm3_out.alpha",
    "norm1_inner.gamma", "norm1_inner.beta", "norm1_inner.alpha",    // Sub-LN's inner norms
    "norm2_inner.gamma", "norm2_inner.beta", "norm2_inner.alpha",
    "norm3_inner.gamma", "norm3_inner.beta", "norm3_inner.alpha",
    "omega1", "omega2", "omega3",                                    // Admin's ω
    "rezero_alpha",                                                  // ReZero's α
    "head_scale1", "head_scale2", "head_scale3",                     // NormFormer's per head
    "qnorm.gamma", "qnorm.beta", "knorm.gamma", "knorm.beta",        // QK-norm (self-attention)
    "cqnorm.gamma", "cqnorm.beta", "cknorm.gamma", "cknorm.beta",    // … of cross-attention
};
#define NCOLUMNS ((int)(sizeof COLUMNS / sizeof COLUMNS[0]))
/* Where each group of COLUMNS starts. */
enum { COL_SELF = 0, COL_CROSS = 8, COL_FFN = 16, COL_GLU = 20, COL_NORM = 22, COL_ALPHA = 28,
       COL_OUT = 31, COL_INNER = 40, COL_OMEGA = 49, COL_GATE = 52, COL_HEAD = 53, COL_QK = 56,
       COL_END = 64 };
_Static_assert(NCOLUMNS == COL_END, "COLUMNS and its groups disagree");

/* The names outside the layers, and a layer's prefix per stack kind (lm, encoder, decoder). */
static const char *const EMBED = "tok_embed", *const HEAD = "lm_head";
static const char *const STACK_PREFIX[3] = {"layers", "enc", "dec"};
static const char *const FINAL_NORM[3] = {"final_norm", "enc_final_norm", "dec_final_norm"};

int tensors_column_count(void) { return NCOLUMNS; }

const char *tensors_column_name(int c) { return c >= 0 && c < NCOLUMNS ? COLUMNS[c] : NULL; }

int tensors_column_index(const char *kind)
{
    for (int c = 0; c < NCOLUMNS; c++)
        if (!strcmp(COLUMNS[c], kind)) return c;
    return -1;
}

const char *tensors_embed_name(void) { return EMBED; }
const char *tensors_head_name(void) { return HEAD; }
const char *tensors_stack_prefix(int stack) { return STACK_PREFIX[stack]; }
const char *tensors_final_norm_name(int stack) { return FINAL_NORM[stack]; }

const char *const *tensors_branch_names(int sub_kind, int *n)
{
    static const int START[3] = {COL_SELF, COL_CROSS, COL_FFN};
    *n = sub_kind == 2 ? COL_GLU - COL_FFN : COL_CROSS - COL_SELF;
    return COLUMNS + START[sub_kind];
}

const char *tensors_site_param(int site, int K, int q)
{
    if (site == 0) return COLUMNS[q < 2 ? COL_NORM + 2 * (K - 1) + q : COL_ALPHA + K - 1];
    return COLUMNS[(site == 1 ? COL_OUT : COL_INNER) + 3 * (K - 1) + q];
}

void tensors_site_name(int site, int K, char *buf, size_t len)
{
    const char *p = tensors_site_param(site, K, 0);   // "norm2_out.gamma" -> "norm2_out"
    snprintf(buf, len, "%.*s", (int)strcspn(p, "."), p);
}

const char *tensors_param_suffix(int q)
{
    return strchr(tensors_site_param(0, 1, q), '.') + 1;   // "gamma", "beta", "alpha"
}

const char *tensors_glu_name(int q) { return COLUMNS[COL_GLU + q]; }
const char *tensors_omega_name(int K) { return COLUMNS[COL_OMEGA + K - 1]; }
const char *tensors_gate_name(void) { return COLUMNS[COL_GATE]; }
const char *tensors_head_scale_name(int K) { return COLUMNS[COL_HEAD + K - 1]; }
const char *tensors_qk_name(int cross, int key, int q) { return COLUMNS[COL_QK + 4 * cross + 2 * key + q]; }

int tensors_add(tensor_list_t *l, const char *name, const char *kind, size_t rows, size_t cols,
                int rank, int layer, tensor_init_t init, double value)
{
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 64;
        tensor_info_t *grown = realloc(l->t, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        l->t = grown;
        l->cap = cap;
    }
    tensor_info_t *t = &l->t[l->n];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind;
    t->offset = l->size;
    t->rows = rows;
    t->cols = cols;
    t->rank = rank;
    t->layer = layer;
    t->column = kind[0] ? tensors_column_index(kind) : -1;
    t->init = init;
    t->value = value;
    l->size += rows * cols;
    return l->n++;
}

int tensors_is_hidden(const tensor_info_t *t)
{
    return t->init == TENSOR_MATRIX && t->rank == 2 && t->layer >= 0;
}

void tensors_free(tensor_list_t *l)
{
    free(l->t);
    memset(l, 0, sizeof *l);
}

/* The block kind of each group of COLUMNS, by the group's first column (a column added to
 * COLUMNS gets its kind here: the assert below names this table when COL_END moves). */
static const struct { int first, kind; } BLOCK_GROUPS[] = {
    {COL_SELF, TENSOR_BLOCK_ATTN_QK}, {COL_SELF + 4, TENSOR_BLOCK_ATTN_VO},
    {COL_CROSS, TENSOR_BLOCK_ATTN_QK}, {COL_CROSS + 4, TENSOR_BLOCK_ATTN_VO},
    {COL_FFN, TENSOR_BLOCK_FFN}, {COL_NORM, TENSOR_BLOCK_NORM}, {COL_OMEGA, TENSOR_BLOCK_GAIN},
};
_Static_assert(COL_END == 64, "a new column: give its group a block kind in BLOCK_GROUPS");

int tensors_block_of(const tensor_info_t *t)
{
    if (t->column < 0)   // outside the layers: the embedding, lm_head, the final norms
        return strcmp(t->name, EMBED) && strcmp(t->name, HEAD) ? TENSOR_BLOCK_NORM
                                                                : TENSOR_BLOCK_EMBED;
    int kind = TENSOR_BLOCK_GAIN;
    for (size_t g = 0; g < sizeof BLOCK_GROUPS / sizeof BLOCK_GROUPS[0]; g++)
        if (t->column >= BLOCK_GROUPS[g].first) kind = BLOCK_GROUPS[g].kind;
    return kind;
}

static const char *const BLOCK_NAMES[TENSOR_BLOCKS] = {"embed", "attn_qk", "attn_vo", "ffn",
                                                        "norm", "gain"};

const char *tensors_block_name(int kind)
{
    return kind >= 0 && kind < TENSOR_BLOCKS ? BLOCK_NAMES[kind] : NULL;
}

const char *const *tensors_block_names(void) { return BLOCK_NAMES; }
