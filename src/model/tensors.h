/* tensors.h — the parameter registry: every tensor of the one parameter buffer, by name, in
 * buffer order (docs/design.md §5, §6b). Checkpoints, dumps, gradcheck, probes and the
 * optimizer see the model only through this list.
 *
 * Inside a layer, tensors are ordered by the canonical column list (tensors_column_name):
 * the self-attention's, the cross-attention's, the FFN's, then the norm sites and the
 * schemes' scalars. Probes use the same list as the names of their "param" axis.
 */
#ifndef STABILITY_TENSORS_H
#define STABILITY_TENSORS_H

#include <stddef.h>

/* How model_init fills a tensor. */
typedef enum {
    TENSOR_EMBED,    /* N(0, 1/d): tok_embed, lm_head */
    TENSOR_MATRIX,   /* init.scheme (Xavier normal/uniform, normal) times the tensor's gain */
    TENSOR_CONST,    /* every entry = the tensor's value (biases 0, γ 1, DyT α, ...) */
} tensor_init_t;

/* One named parameter tensor. */
typedef struct {
    char name[48];          /* "tok_embed", "layers/03/w1", "dec/01/cwq", "final_norm.gamma" */
    const char *kind;       /* the name inside its layer ("w1", "norm2.gamma"); "" outside */
    size_t offset;          /* into params/grads */
    size_t rows, cols;      /* 2-D tensors (rows = in); 1-D tensors have rows = 1 */
    int rank;               /* 1 or 2 */
    int layer;              /* row of the probes' layer axis (encoder, then decoder), or −1 */
    int column;             /* index of kind in the canonical layer columns, or −1 */
    tensor_init_t init;
    double value;           /* TENSOR_MATRIX: gain; TENSOR_CONST: the value */
} tensor_info_t;

/* The list under construction (model_create) and after. */
typedef struct {
    tensor_info_t *t;
    int n, cap;
    size_t size;            /* doubles in all */
} tensor_list_t;

/* Append a tensor at the end of the buffer (rows = 1 for a vector). kind must be a literal
 * of the canonical column list or "". Returns its index, or −1 when out of memory. */
int tensors_add(tensor_list_t *l, const char *name, const char *kind, size_t rows, size_t cols,
                int rank, int layer, tensor_init_t init, double value);

/* Free the list. */
void tensors_free(tensor_list_t *l);

/* Number of canonical layer columns, and the name of column c. */
int tensors_column_count(void);
const char *tensors_column_name(int c);

/* Index of a layer column name, or −1. */
int tensors_column_index(const char *kind);

/* The registry of names (docs/design.md §5): every tensor name is spelled once, in tensors.c;
 * params, probe axes and the HDF5 files take them from here. Outside the layers: */
const char *tensors_embed_name(void);            /* "tok_embed" */
const char *tensors_head_name(void);             /* "lm_head" (untied output) */
const char *tensors_stack_prefix(int stack);     /* a layer's tensors are PREFIX/NN/column:
                                                    "layers", "enc", "dec" by stack_kind_t */
const char *tensors_final_norm_name(int stack);  /* "final_norm", "enc_final_norm", … */

/* Inside a layer (columns): the branch tensors of a sub-layer of sublayer_kind_t sub_kind in
 * buffer order, weight then bias (attention q, k, v, o; FFN W¹, W²), *n of them. */
const char *const *tensors_branch_names(int sub_kind, int *n);

/* SwiGLU's up projection (docs/design.md §6i): q = 0 its weight "w3" (C,F), 1 its bias "b3"
 * (F). They follow the FFN's w1 b1 w2 b2 in a layer. */
const char *tensors_glu_name(int q);

/* Parameter q (0 γ, 1 β, 2 DyT's α) of norm site `site` (0 normK: before or after the branch,
 * 1 normK_out: on its output, 2 normK_inner: inside it) of the K-th sub-layer (1-based):
 * "norm2_out.gamma". */
const char *tensors_site_param(int site, int K, int q);

/* The site's own name, "norm2_out", into buf. */
void tensors_site_name(int site, int K, char *buf, size_t len);

/* The name of parameter q of any norm: "gamma", "beta", "alpha" (a final norm's are
 * FINAL.gamma, …). */
const char *tensors_param_suffix(int q);

/* Admin's ω of the K-th sub-layer ("omega2"); ReZero's α of a layer ("rezero_alpha"). */
const char *tensors_omega_name(int K);
const char *tensors_gate_name(void);

/* NormFormer's scale per head of the K-th sub-layer's attention ("head_scale1"). */
const char *tensors_head_scale_name(int K);

/* QK-norm's parameter q (0 γ, 1 β) of the query (key = 0) or key (key = 1) side of the
 * self-attention (cross = 0: "qnorm.gamma") or the cross-attention (cross = 1: "cknorm.beta"). */
const char *tensors_qk_name(int cross, int key, int q);

/* 1 when t is a hidden matrix: a weight matrix inside a layer (W_Q W_K W_V W_O, the
 * cross-attention's, W¹ W² W³: the TENSOR_MATRIX draws), the tensors Muon orthogonalises and μP
 * rescales (docs/design.md §6h); 0 for embeddings, lm_head, norms, biases and gains. */
int tensors_is_hidden(const tensor_info_t *t);

/* The kinds of parameter blocks the curvature measure takes the Hessian's diagonal blocks of
 * (docs/design.md §10), decided here for every tensor of the registry: the embedding (tok_embed,
 * lm_head), attention Q/K (wq bq wk bk and the cross-attention's), attention V/O (wv bv wo bo,
 * cwv …), the FFN (w1 b1 w2 b2), norms (every norm site's γ, β and DyT's α, the final norms) and
 * gains (the schemes' and mitigations' learnable scales: Admin's ω, ReZero's α, NormFormer's
 * head scales, QK-norm's γ and β). */
enum { TENSOR_BLOCK_EMBED, TENSOR_BLOCK_ATTN_QK, TENSOR_BLOCK_ATTN_VO, TENSOR_BLOCK_FFN,
       TENSOR_BLOCK_NORM, TENSOR_BLOCK_GAIN, TENSOR_BLOCKS };

/* The kind of a tensor (TENSOR_BLOCK_*). */
int tensors_block_of(const tensor_info_t *t);

/* The name of a kind: "embed", "attn_qk", "attn_vo", "ffn", "norm", "gain"; all TENSOR_BLOCKS. */
const char *tensors_block_name(int kind);
const char *const *tensors_block_names(void);

#endif
