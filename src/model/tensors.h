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

#endif
