/* optim.c — sgd (momentum), adam, adamw, radam, gi_adam, stableadamw over one flat buffer;
 * clipping; schedules. muon: optim_muon.c; lion, nsgd: optim_lion.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "train/optim.h"
#include "train/update_bound.h"
#include "nn/vec.h"
#include "util/threads.h"

/* Elements of a piece at most, and the grain of the update's parts (a multiple of VR_LANES in
 * both precisions): parts and pieces begin at its multiples, whatever the thread count. */
#define OPTIM_CHUNK ((size_t)4096)

/* The segments cut at multiples of OPTIM_CHUNK, into out (when not NULL); returns their count. */
static size_t cut_pieces(const optim_t *o, optim_piece_t *out)
{
    size_t n = 0;
    for (int s = 0; s < o->nseg; s++) {
        const size_t end = o->seg[s].offset + o->seg[s].size;
        for (size_t lo = o->seg[s].offset; lo < end; n++) {
            const size_t next = (lo / OPTIM_CHUNK + 1) * OPTIM_CHUNK, hi = next < end ? next : end;
            if (out) out[n] = (optim_piece_t){lo, hi, s};
            lo = hi;
        }
    }
    return n;
}

/* o->piece and o->piece_sum for the segments. 0 or 1 (OOM). */
static int make_pieces(optim_t *o)
{
    const size_t n = cut_pieces(o, NULL);
    free(o->piece);
    free(o->piece_sum);
    o->piece = malloc((n ? n : 1) * sizeof *o->piece);
    o->piece_sum = calloc(n ? n : 1, sizeof *o->piece_sum);
    if (!o->piece || !o->piece_sum) return 1;
    o->npiece = cut_pieces(o, o->piece);
    return 0;
}

/* nseg segments, lr_mult 1, clip 1, no sums yet. */
static int alloc_segments(optim_t *o, int nseg)
{
    free(o->seg);
    o->seg = calloc((size_t)(nseg ? nseg : 1), sizeof *o->seg);
    if (!o->seg) return 1;
    o->nseg = nseg;
    for (int s = 0; s < nseg; s++)
        o->seg[s] = (optim_seg_t){.lr_mult = 1.0, .clip = 1.0, .sumsq = NAN, .rows = 1,
                                  .sv_min = NAN, .sv_max = NAN};
    return 0;
}

int optim_init(optim_t *o, const config_t *cfg, size_t n)
{
    memset(o, 0, sizeof *o);
    o->kind = cfg->train.optimizer;
    o->beta1 = cfg->train.beta1;
    o->beta2 = cfg->train.beta2;
    o->eps = cfg->train.eps;
    o->weight_decay = cfg->train.weight_decay;
    o->momentum = cfg->train.momentum;
    o->floor_rel = cfg->probe.curvature_floor;
    o->ns_steps = cfg->train.muon_ns_steps;
    o->ns_a = cfg->train.muon_ns_a;
    o->ns_b = cfg->train.muon_ns_b;
    o->ns_c = cfg->train.muon_ns_c;
    o->muon_scale = cfg->train.muon_scale;
    o->adamw_ratio = cfg->train.muon_adamw_lr > 0 ? cfg->train.muon_adamw_lr / cfg->train.lr : 1.0;
    o->n = n;
    o->m = calloc(n ? n : 1, sizeof(real));
    // a second moment for the Adam family and muon's AdamW tensors; sgd, lion, nsgd have none
    const int has_v = o->kind != OPT_SGD && o->kind != OPT_LION && o->kind != OPT_NSGD;
    if (has_v) o->v = calloc(n ? n : 1, sizeof(real));
    if (!o->m || (has_v && !o->v) || alloc_segments(o, 1)) { optim_free(o); return 1; }
    o->seg[0].size = n;
    o->seg[0].cols = n;
    if (make_pieces(o)) { optim_free(o); return 1; }
    return 0;
}

int optim_set_tensors(optim_t *o, const model_t *m)
{
    if (alloc_segments(o, m->num_tensors)) return 1;
    size_t work = 0;
    for (int i = 0; i < m->num_tensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        o->seg[i].offset = t->offset;
        o->seg[i].size = model_tensor_size(t);
        o->seg[i].lr_mult = model_lr_scale(m, t);
        o->seg[i].hidden = tensors_is_hidden(t);
        o->seg[i].rows = t->rows;
        o->seg[i].cols = t->cols;
        const size_t w = optim_ns_work(t->rows, t->cols) + t->rows * t->cols;   // + u
        if (o->kind == OPT_MUON && o->seg[i].hidden && w > work) work = w;
    }
    free(o->work);
    o->work = work ? malloc(work * sizeof(real)) : NULL;
    if (work && !o->work) return 1;
    return make_pieces(o);
}

void optim_free(optim_t *o)
{
    free(o->m);
    free(o->v);
    free(o->seg);
    free(o->piece);
    free(o->piece_sum);
    free(o->work);
    o->work = NULL;
    o->m = o->v = NULL;
    o->seg = NULL;
    o->piece = NULL;
    o->piece_sum = NULL;
    o->nseg = 0;
    o->npiece = 0;
}

/* b ← μ·b + (g + λθ);  θ ← θ − α·b  over [lo, hi). VR_LANES elements at a time: each lane does
 * the scalar operations (nn/vec.h), so in float64 the result is the scalar loop's, bit for bit
 * (in float32 the tail evaluates in double; parts start at whole vectors, so the tail is always
 * the buffer's last elements, whatever the split). */
static void sgd_range(optim_t *o, real *params, const real *grads, double lr, size_t lo,
                      size_t hi)
{
    const double mu = o->momentum, wd = o->weight_decay;
    real *b = o->m;
    size_t i = lo;
    const vreal MU = vr_set1(mu), WD = vr_set1(wd), LR = vr_set1(lr);
    for (; i + VR_LANES <= hi; i += VR_LANES) {
        const vreal p = vr_load(params + i);
        const vreal g = vr_load(grads + i) + WD * p;
        const vreal bb = MU * vr_load(b + i) + g;
        vr_store(b + i, bb);
        vr_store(params + i, p - LR * bb);
    }
    for (; i < hi; i++) {
        const double g = grads[i] + wd * params[i];
        b[i] = mu * b[i] + g;
        params[i] -= lr * b[i];
    }
}

/* The Adam family shares the moments; its members differ in the decay, the step size and v's
 * start. rect: the RAdam rectifier rₜ (1 for the others); adaptive 0: RAdam's un-adapted
 * (momentum-SGD) step; gi_first: GI-Adam's first update, v₀ = g². */
typedef struct {
    double lr, rect, bc1, bc2;
    int decoupled, adaptive, gi_first;
} adam_step_t;

/* The constants of the vector kernel, and the lr-dependent ones of a block's lanes. */
typedef struct {
    vreal B1, B2, C1, C2, BC1, BC2, EPS, WD;
} adam_consts_t;
typedef struct {
    vreal lr, lrr, lrwd;   /* α', α'·rₜ, α'·λ with α' = α·lr_mult/c of the lane's tensor */
} adam_lanes_t;

/* The update of elements [i, i + VR_LANES) (nn/vec.h: each lane does the scalar loop's
 * operations, in the same order). Returns the lanes' (m̂/(√v̂ + ε))². */
static inline vreal adam_block(optim_t *o, real *params, const real *grads, const adam_step_t *a,
                               const adam_consts_t *k, const adam_lanes_t *c, size_t i)
{
    vreal p = vr_load(params + i), g = vr_load(grads + i);
    if (a->decoupled) p = p - c->lrwd * p;
    else g = g + k->WD * p;
    const vreal vprev = a->gi_first ? g * g : vr_load(o->v + i);
    const vreal mm = k->B1 * vr_load(o->m + i) + k->C1 * g;
    const vreal vv = k->B2 * vprev + k->C2 * g * g;
    vr_store(o->m + i, mm);
    vr_store(o->v + i, vv);
    const vreal mhat = mm / k->BC1, den = vr_sqrt(vv / k->BC2) + k->EPS;
    if (a->adaptive) p = p - c->lrr * mhat / den;
    else p = p - c->lr * mhat;
    vr_store(params + i, p);
    const vreal u = mhat / den;
    return u * u;
}

/* The same for element i alone at the lr α' of its tensor (the reference form; in float32 it
 * evaluates in double). Returns (m̂/(√v̂ + ε))². */
static double adam_scalar(optim_t *o, real *params, const real *grads, const adam_step_t *a,
                          double lr, size_t i)
{
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    double g = grads[i];
    if (a->decoupled) params[i] -= lr * wd * params[i];
    else g += wd * params[i];
    const double vprev = a->gi_first ? g * g : o->v[i];
    o->m[i] = b1 * o->m[i] + (1.0 - b1) * g;
    o->v[i] = b2 * vprev + (1.0 - b2) * g * g;
    const double mhat = o->m[i] / a->bc1, den = sqrt(o->v[i] / a->bc2) + eps;
    if (a->adaptive) params[i] -= lr * a->rect * mhat / den;
    else params[i] -= lr * mhat;
    const double u = mhat / den;
    return u * u;
}

/* α' of segment s: α·lr_mult/c (α itself when both are 1). */
static double seg_lr(const optim_t *o, int s, double lr)
{
    return lr * o->seg[s].lr_mult / o->seg[s].clip;
}

/* Lane j of c for a tensor at lr α'. */
static void set_lane(adam_lanes_t *c, int j, double lr, const adam_step_t *a, double wd)
{
    c->lr[j] = lr;
    c->lrr[j] = lr * a->rect;
    c->lrwd[j] = lr * wd;
}

/* The blocks (whole VR_LANES, at multiples of VR_LANES of the buffer) that start in piece k:
 * those inside it with its tensor's lanes; one that runs on into the next tensors lane by lane,
 * each lane with its own tensor's lr; the buffer's last n mod VR_LANES elements one by one.
 * (So every element is computed as by one pass over the whole buffer at a uniform lr, bit for
 * bit, in either precision.) Adds each element's (m̂/(√v̂ + ε))² to its piece's sum. */
static void adam_piece(optim_t *o, real *params, const real *grads, const adam_step_t *a,
                       const adam_consts_t *k, size_t q)
{
    const optim_piece_t *pc = &o->piece[q];
    const size_t V = (size_t)VR_LANES;
    size_t i = (pc->lo + V - 1) / V * V;
    adam_lanes_t c;
    const double lr = seg_lr(o, pc->seg, a->lr);
    for (int j = 0; j < VR_LANES; j++) set_lane(&c, j, lr, a, o->weight_decay);
    double sum = 0.0;
    for (; i + V <= pc->hi; i += V) {
        const vreal u2 = adam_block(o, params, grads, a, k, &c, i);
        for (int j = 0; j < VR_LANES; j++) sum += u2[j];
    }
    o->piece_sum[q] += sum;
    if (i >= pc->hi) return;
    size_t lane_piece[VR_LANES], r = q;
    double lane_lr[VR_LANES];
    const int lanes = i + V <= o->n ? VR_LANES : (int)(o->n - i);
    for (int j = 0; j < lanes; j++) {   // the piece of element i + j: q or one after it
        while (i + (size_t)j >= o->piece[r].hi) r++;
        lane_piece[j] = r;
        lane_lr[j] = seg_lr(o, o->piece[r].seg, a->lr);
        set_lane(&c, j, lane_lr[j], a, o->weight_decay);
    }
    if (lanes == VR_LANES) {
        const vreal u2 = adam_block(o, params, grads, a, k, &c, i);
        for (int j = 0; j < VR_LANES; j++) o->piece_sum[lane_piece[j]] += u2[j];
    } else {   // the buffer's tail: in double, with the lr in double, as the scalar loop
        for (int j = 0; j < lanes; j++)
            o->piece_sum[lane_piece[j]] += adam_scalar(o, params, grads, a, lane_lr[j],
                                                       i + (size_t)j);
    }
}

/* The first piece at or after element lo (a piece boundary). */
static size_t first_piece(const optim_t *o, size_t lo)
{
    size_t a = 0, b = o->npiece;
    while (a < b) {
        const size_t mid = (a + b) / 2;
        if (o->piece[mid].lo < lo) a = mid + 1;
        else b = mid;
    }
    return a;
}

/* StableAdamW's Σ g²/max(v̂, ε²) over piece q, v̂ the value this update will use. */
static double clip_piece(const optim_t *o, const real *grads, const adam_step_t *a, size_t q)
{
    const double b2 = o->beta2, eps2 = o->eps * o->eps;
    double sum = 0.0;
    for (size_t i = o->piece[q].lo; i < o->piece[q].hi; i++) {
        const double g = grads[i], vhat = (b2 * o->v[i] + (1.0 - b2) * g * g) / a->bc2;
        sum += g * g / (vhat > eps2 ? vhat : eps2);
    }
    return sum;
}

/* One pass over part t of nt of the buffer (whole chunks, so whole pieces): the update (sgd) or
 * the Adam family's, or StableAdamW's sums before it (clip_pass). */
typedef struct {
    optim_t *o;
    real *params;
    const real *grads;
    double lr;
    adam_step_t adam;
    const adam_consts_t *k;
    int sgd, clip_pass;
} update_job_t;

static void update_part(void *ctx, int t, int nt)
{
    const update_job_t *j = ctx;
    optim_t *o = j->o;
    size_t lo, hi;
    if (j->sgd) {
        threads_part(o->n, t, nt, VR_LANES, &lo, &hi);
        sgd_range(o, j->params, j->grads, j->lr, lo, hi);
        return;
    }
    threads_part(o->n, t, nt, OPTIM_CHUNK, &lo, &hi);
    for (size_t q = first_piece(o, lo); q < o->npiece && o->piece[q].lo < hi; q++) {
        if (j->clip_pass) o->piece_sum[q] = clip_piece(o, j->grads, &j->adam, q);
        else adam_piece(o, j->params, j->grads, &j->adam, j->k, q);
    }
}

static void sgd_update(optim_t *o, real *params, const real *grads, double lr)
{
    update_job_t j = {.o = o, .params = params, .grads = grads, .lr = lr, .sgd = 1};
    threads_run(threads_for(4.0 * (double)o->n), update_part, &j);
    for (int s = 0; s < o->nseg; s++) o->seg[s].sumsq = NAN;
}

/* StableAdamW: every tensor's c = max(1, √mean(g²/max(v̂, ε²))) (Wortsman et al. 2023b). */
static void stable_clip(optim_t *o, const real *grads, const adam_step_t *a)
{
    update_job_t j = {.o = o, .grads = grads, .adam = *a, .clip_pass = 1};
    threads_run(threads_for(6.0 * (double)o->n), update_part, &j);
    for (int s = 0; s < o->nseg; s++) o->seg[s].clip = 0.0;
    for (size_t q = 0; q < o->npiece; q++) o->seg[o->piece[q].seg].clip += o->piece_sum[q];
    for (int s = 0; s < o->nseg; s++) {   // max(1, √ms); a NaN gradient's NaN stays NaN
        const double ms = o->seg[s].size ? o->seg[s].clip / (double)o->seg[s].size : 0.0;
        o->seg[s].clip = isnan(ms) ? NAN : ms > 1.0 ? sqrt(ms) : 1.0;
    }
}

static void adam_update(optim_t *o, real *params, const real *grads, double lr,
                        int decoupled, double rect, int adaptive)
{
    const adam_step_t a = {lr, rect, 1.0 - pow(o->beta1, (double)o->t),
                           1.0 - pow(o->beta2, (double)o->t), decoupled, adaptive,
                           o->kind == OPT_GI_ADAM && o->t == 1};
    const double b1 = o->beta1, b2 = o->beta2;
    const adam_consts_t k = {vr_set1(b1), vr_set1(b2), vr_set1(1.0 - b1), vr_set1(1.0 - b2),
                             vr_set1(a.bc1), vr_set1(a.bc2), vr_set1(o->eps),
                             vr_set1(o->weight_decay)};
    if (o->kind == OPT_STABLEADAMW) stable_clip(o, grads, &a);
    update_job_t j = {.o = o, .params = params, .grads = grads, .lr = lr, .adam = a, .k = &k};
    memset(o->piece_sum, 0, o->npiece * sizeof *o->piece_sum);
    threads_run(threads_for(8.0 * (double)o->n), update_part, &j);
    for (int s = 0; s < o->nseg; s++) o->seg[s].sumsq = 0.0;
    for (size_t q = 0; q < o->npiece; q++) o->seg[o->piece[q].seg].sumsq += o->piece_sum[q];
}

double optim_radam_rect(double beta2, long t, double *rho)
{
    // variance of the adaptive lr is tractable only once ρₜ > 4 (Liu et al. 2020, Alg. 2)
    const double b2t = pow(beta2, (double)t);
    const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    *rho = rho_inf - 2.0 * (double)t * b2t / (1.0 - b2t);
    if (!(*rho > 4.0)) return NAN;
    return sqrt((*rho - 4.0) * (*rho - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * *rho));
}

void optim_update(optim_t *o, real *params, const real *grads, double lr)
{
    o->t++;
    switch (o->kind) {
    case OPT_SGD: sgd_update(o, params, grads, lr); break;
    case OPT_ADAM:
    case OPT_GI_ADAM: adam_update(o, params, grads, lr, 0, 1.0, 1); break;
    case OPT_ADAMW:
    case OPT_STABLEADAMW: adam_update(o, params, grads, lr, 1, 1.0, 1); break;
    case OPT_LAMB: update_bound_lamb(o, params, grads, lr); break;
    case OPT_RADAM: {
        double rho;
        const double r = optim_radam_rect(o->beta2, o->t, &rho);
        if (rho > 4.0) adam_update(o, params, grads, lr, 0, r, 1);
        else adam_update(o, params, grads, lr, 0, 0.0, 0);
        break;
    }
    case OPT_MUON: optim_muon_update(o, params, grads, lr); break;
    case OPT_LION: optim_lion_update(o, params, grads, lr); break;
    case OPT_NSGD: optim_nsgd_update(o, params, grads, lr); break;
    }
}

double optim_global_norm(const real *g, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += g[i] * g[i];
    return sqrt(s);
}

double optim_clip_factor(double norm, double max_norm)
{
    return max_norm > 0.0 && norm > max_norm ? max_norm / norm : 1.0;
}

double optim_clip(real *g, size_t n, double max_norm)
{
    const double norm = optim_global_norm(g, n);
    if (max_norm > 0.0 && norm > max_norm) {
        const double scale = optim_clip_factor(norm, max_norm);
        for (size_t i = 0; i < n; i++) g[i] *= scale;
    }
    return norm;
}

void optim_precond_clip(double *P, size_t n, double c)
{
    if (c == 1.0) return;
    for (size_t i = 0; i < n; i++) P[i] /= c;
}

double optim_lr(const config_t *cfg, long t)
{
    const double lr = cfg->train.lr;
    const long steps = cfg->train.steps;
    const long w = cfg->train.warmup > 1 ? cfg->train.warmup : 1;
    if (t <= w) return lr * (double)t / (double)w;   // w = 1: lr at t = 1, no warm-up
    switch (cfg->train.schedule) {
    case SCHED_INVERSE_SQRT: return lr * sqrt((double)w / (double)t);
    case SCHED_LINEAR:
        if (t >= steps) return 0.0;
        return lr * (double)(steps - t) / (double)(steps - w);
    case SCHED_COSINE: {   // Loshchilov & Hutter 2017, Eq. 5, one period from the warm-up's end
        const double floor = lr * cfg->train.min_lr_ratio, pi = 3.14159265358979323846;
        if (t >= steps) return floor;
        return floor + 0.5 * (lr - floor) * (1.0 + cos(pi * (double)(t - w) / (double)(steps - w)));
    }
    case SCHED_CONSTANT:
    case SCHED_AUTOWU: break;   // its lr is the run's state's (train/autowu.h)
    case SCHED_SUBOPTIMALITY: break;   // set from the loss by train/subopt.h
    }
    return lr;
}

size_t optim_precond(const optim_t *o, const real *params, const real *grads, double *P,
                     unsigned char *floored)
{
    const size_t n = o->n;
    if (floored) memset(floored, 0, n);
    if (o->kind == OPT_SGD) {
        for (size_t i = 0; i < n; i++) P[i] = 1.0;
        return 0;
    }
    // update t = o->t (the last one taken), or the first one (t = 1) from the gradient it takes
    const long t = o->t > 0 ? o->t : 1;
    const double bc1 = 1.0 - pow(o->beta1, (double)t), bc2 = 1.0 - pow(o->beta2, (double)t);
    double rho, rect = 1.0;
    if (o->kind == OPT_RADAM) rect = optim_radam_rect(o->beta2, t, &rho);
    const int adaptive = o->kind != OPT_RADAM || rho > 4.0;   // else θ ← θ − η·m̂ (RAdam)
    const int l2 = o->kind != OPT_ADAMW && o->kind != OPT_STABLEADAMW && o->weight_decay != 0.0;
    size_t nf = 0;
    for (int s = 0; s < o->nseg; s++) {
        // the tensor's step is η·lr_mult/c (μP's rate, StableAdamW's c; c = 1 at update 1)
        const optim_seg_t *g = &o->seg[s];
        const double mult = g->lr_mult / (o->t > 0 && o->kind == OPT_STABLEADAMW ? g->clip : 1.0);
        const size_t end = g->offset + g->size;
        if (!adaptive) {
            for (size_t i = g->offset; i < end; i++) P[i] = bc1 / mult;
            continue;
        }
        double sum = 0.0;   // Σ v̂ over the tensor; P holds √v̂ until the second pass
        for (size_t i = g->offset; i < end; i++) {
            double v = o->v[i];
            if (o->t == 0) {   // v₁ as optim_update will form it from the first gradient
                const double gi = l2 ? grads[i] + o->weight_decay * params[i] : grads[i];
                v = o->kind == OPT_GI_ADAM ? gi * gi   // GI-Adam: v₀ = g², so v₁ = g²
                                           : o->beta2 * v + (1.0 - o->beta2) * gi * gi;
            }
            sum += v / bc2;
            P[i] = sqrt(v / bc2);
        }
        // floored: √v̂ below max(ε, τ·RMS of √v̂ over the tensor) (design §10)
        const double rms = g->size ? sqrt(sum / (double)g->size) : 0.0;
        const double below = fmax(o->eps, o->floor_rel * rms);
        for (size_t i = g->offset; i < end; i++) {
            const double root = P[i];
            P[i] = bc1 * (root + o->eps) / (rect * mult);
            if (root < below) {
                nf++;
                if (floored) floored[i] = 1;
            }
        }
    }
    return nf;
}

double optim_threshold(const optim_t *o, double lr)
{
    if (!(lr > 0.0)) return INFINITY;
    if (o->kind == OPT_SGD) return 2.0 * (1.0 + o->momentum) / lr;
    return 2.0 * (1.0 + o->beta1) / ((1.0 - o->beta1) * lr);
}

void optim_bai_diag(const optim_t *o, const double *P, size_t n, double *D)
{
    const double s = 2.0 / optim_threshold(o, 1.0);   // lr·threshold does not depend on lr
    for (size_t i = 0; i < n; i++) D[i] = s / P[i];
}

int optim_direction(const optim_t *o, const real *params, const real *grads, double *u)
{
    const size_t n = o->n;
    optim_t c = *o;   // the copy: its own moments, segments and scratch; the pieces are shared
    c.m = malloc(n * sizeof(real));
    c.v = o->v ? malloc(n * sizeof(real)) : NULL;
    c.seg = malloc((size_t)o->nseg * sizeof *c.seg);
    c.piece_sum = malloc((o->npiece ? o->npiece : 1) * sizeof(double));
    real *p = malloc(n * sizeof(real));
    int rc = !c.m || (o->v && !c.v) || !c.seg || !c.piece_sum || !p;
    if (!rc) {
        memcpy(c.m, o->m, n * sizeof(real));
        if (o->v) memcpy(c.v, o->v, n * sizeof(real));
        memcpy(c.seg, o->seg, (size_t)o->nseg * sizeof *c.seg);
        memcpy(p, params, n * sizeof(real));
        optim_update(&c, p, grads, 1.0);
        for (size_t i = 0; i < n; i++) u[i] = (double)params[i] - (double)p[i];
    }
    free(c.m);
    free(c.v);
    free(c.seg);
    free(c.piece_sum);
    free(p);
    return rc;
}
