/* test_config.c — config: defaults, every key, --set, round-trip through config_to_ini,
 * and every class of bad input with its exact "FILE:LINE: key:" prefix.
 * Runs with cwd = tests/ (Makefile `unit`), so fixtures are "configs/NAME.ini". */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "tests.h"

/* Index of a key in config_t.src_line. */
#define K(section, name) config_key_index(section, name)

static char err[CONFIG_ERR_MAX];

#define assert_prefix(s, prefix) \
    ck_assert_msg(strncmp((s), (prefix), strlen(prefix)) == 0, "got \"%s\", want prefix \"%s\"", (s), (prefix))

/* config_load must fail with exit code 2 and an error starting with prefix. */
static void expect_fail(const char *path, const char *const *sets, int nsets, const char *prefix)
{
    config_t c;
    err[0] = '\0';
    int rc = config_load(&c, path, sets, nsets, err, sizeof err);
    ck_assert_msg(rc == 2, "%s: rc %d, want 2 (err \"%s\")", path ? path : "(none)", rc, err);
    assert_prefix(err, prefix);
}

static void expect_set_fail(const char *assignment, const char *prefix)
{
    const char *sets[] = {assignment};
    expect_fail("configs/good_minimal.ini", sets, 1, prefix);
}

static void load_ok(config_t *c, const char *path, const char *const *sets, int nsets)
{
    err[0] = '\0';
    int rc = config_load(c, path, sets, nsets, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: rc %d: %s", path ? path : "(none)", rc, err);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

#define EQ_INT(f) ck_assert_msg(a->f == b->f, #f ": %ld != %ld", (long)a->f, (long)b->f)
#define EQ_DBL(f) ck_assert_msg(same_bits(a->f, b->f), #f ": %.17g != %.17g", a->f, b->f)
#define EQ_STR(f) ck_assert_str_eq(a->f, b->f)

/* Every configuration field equal (doubles bit for bit); final_norm compared as resolved
 * when resolved is set (config_to_ini writes auto as on/off). Not path, name, src_line. */
static void assert_same(const config_t *a, const config_t *b, int resolved)
{
    EQ_INT(model.layers); EQ_INT(model.d_model); EQ_INT(model.heads); EQ_INT(model.d_ff);
    EQ_INT(model.vocab); EQ_INT(model.seq_len); EQ_INT(model.placement); EQ_INT(model.norm);
    EQ_DBL(model.norm_eps); EQ_INT(model.activation); EQ_INT(model.causal); EQ_INT(model.tie_embeddings);
    if (resolved)
        ck_assert_int_eq(config_has_final_norm(a), config_has_final_norm(b));
    else
        EQ_INT(model.final_norm);
    EQ_DBL(model.dropout);
    EQ_INT(init.scheme); EQ_DBL(init.std); EQ_INT(init.zero_qk);
    ck_assert_msg(a->init.seed == b->init.seed, "init.seed: %lu != %lu", a->init.seed, b->init.seed);
    EQ_INT(data.task); EQ_STR(data.path); EQ_INT(data.batch); EQ_DBL(data.label_smoothing); EQ_DBL(data.zipf);
    EQ_INT(train.steps); EQ_INT(train.optimizer); EQ_DBL(train.lr); EQ_INT(train.warmup);
    EQ_INT(train.schedule); EQ_DBL(train.beta1); EQ_DBL(train.beta2); EQ_DBL(train.eps);
    EQ_DBL(train.weight_decay); EQ_DBL(train.clip); EQ_DBL(train.momentum);
    EQ_INT(train.checkpoint_every); EQ_INT(train.eval_every); EQ_INT(train.resume);
    EQ_INT(probe.seeds); EQ_INT(probe.batches); EQ_INT(probe.every); EQ_INT(probe.jacobian);
    EQ_STR(output.file); EQ_INT(output.plots); EQ_INT(output.overwrite);
}

/* Write text to a fresh temporary file; returns its path in path (caller unlinks). */
static void write_temp(char *path, size_t n, const char *text, size_t len)
{
    snprintf(path, n, "/tmp/stability_test_config_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* config_to_ini(a) -> temp file -> config_load -> b; b must equal a, and write the same text. */
static void roundtrip(const config_t *a, config_t *b)
{
    size_t n = config_to_ini(a, NULL, 0);
    char *text = malloc(n + 1), *text2 = malloc(n + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(text2);
    ck_assert_uint_eq(config_to_ini(a, text, n + 1), n);
    ck_assert_uint_eq(strlen(text), n);
    char path[64];
    write_temp(path, sizeof path, text, n);
    err[0] = '\0';
    int rc = config_load(b, path, NULL, 0, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == 0, "reloading config_to_ini output: %s\n%s", err, text);
    assert_same(a, b, 1);
    ck_assert_int_ne(b->model.final_norm, FINAL_NORM_AUTO);
    ck_assert_uint_eq(config_to_ini(b, text2, n + 1), n);
    ck_assert_str_eq(text, text2);
    free(text);
    free(text2);
}

/* ---------------------------------------------------------------- defaults and names */

START_TEST(test_defaults)
{
    config_t c;
    config_defaults(&c);
    ck_assert_int_eq(c.model.layers, 6);
    ck_assert_int_eq(c.model.d_model, 512);
    ck_assert_int_eq(c.model.heads, 4);
    ck_assert_int_eq(c.model.d_ff, 1024);
    ck_assert_int_eq(c.model.vocab, 1000);
    ck_assert_int_eq(c.model.seq_len, 64);
    ck_assert_int_eq(c.model.placement, PLACEMENT_POST);
    ck_assert_int_eq(c.model.norm, NORM_LAYERNORM);
    ck_assert(c.model.norm_eps == 1e-5);
    ck_assert_int_eq(c.model.activation, ACT_RELU);
    ck_assert_int_eq(c.model.causal, 0);
    ck_assert_int_eq(c.model.tie_embeddings, 1);
    ck_assert_int_eq(c.model.final_norm, FINAL_NORM_AUTO);
    ck_assert(c.model.dropout == 0.0);
    ck_assert_int_eq(c.init.scheme, INIT_XAVIER_NORMAL);
    ck_assert(c.init.std == 0.02);
    ck_assert_int_eq(c.init.zero_qk, 0);
    ck_assert_uint_eq(c.init.seed, 1);
    ck_assert_int_eq(c.data.task, TASK_RANDOM);
    ck_assert_str_eq(c.data.path, "");
    ck_assert_int_eq(c.data.batch, 8);
    ck_assert(c.data.label_smoothing == 0.0);
    ck_assert(c.data.zipf == 0.0);
    ck_assert_int_eq(c.train.steps, 0);
    ck_assert_int_eq(c.train.optimizer, OPT_ADAM);
    ck_assert(c.train.lr == 5e-4);
    ck_assert_int_eq(c.train.warmup, 4000);
    ck_assert_int_eq(c.train.schedule, SCHED_INVERSE_SQRT);
    ck_assert(c.train.beta1 == 0.9);
    ck_assert(c.train.beta2 == 0.98);
    ck_assert(c.train.eps == 1e-8);
    ck_assert(c.train.weight_decay == 0.0);
    ck_assert(c.train.clip == 0.0);
    ck_assert(c.train.momentum == 0.9);
    ck_assert_int_eq(c.train.checkpoint_every, 0);
    ck_assert_int_eq(c.train.eval_every, 100);
    ck_assert_int_eq(c.train.resume, 0);
    ck_assert_int_eq(c.probe.seeds, 10);
    ck_assert_int_eq(c.probe.batches, 10);
    ck_assert_int_eq(c.probe.every, 100);
    ck_assert_int_eq(c.probe.jacobian, 1);
    ck_assert_str_eq(c.output.file, "");
    ck_assert_int_eq(c.output.plots, 0);
    ck_assert_int_eq(c.output.overwrite, 0);
    ck_assert_str_eq(c.name, "default");
    ck_assert_str_eq(c.path, "");
    for (int i = 0; i < CONFIG_MAX_KEYS; i++) ck_assert_int_eq(c.src_line[i], 0);
    /* the defaults are valid, and config_load without a file gives them */
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 0);
    config_t d;
    load_ok(&d, NULL, NULL, 0);
    assert_same(&c, &d, 0);
    ck_assert_str_eq(d.name, "default");
}
END_TEST

START_TEST(test_names)
{
    ck_assert_str_eq(config_placement_name(PLACEMENT_POST), "post");
    ck_assert_str_eq(config_placement_name(PLACEMENT_PRE), "pre");
    ck_assert_str_eq(config_norm_name(NORM_LAYERNORM), "layernorm");
    ck_assert_str_eq(config_norm_name(NORM_RMSNORM), "rmsnorm");
    ck_assert_str_eq(config_norm_name(NORM_NONE), "none");
    ck_assert_str_eq(config_activation_name(ACT_RELU), "relu");
    ck_assert_str_eq(config_activation_name(ACT_GELU), "gelu");
    ck_assert_str_eq(config_task_name(TASK_RANDOM), "random");
    ck_assert_str_eq(config_task_name(TASK_COPY), "copy");
    ck_assert_str_eq(config_task_name(TASK_REVERSE), "reverse");
    ck_assert_str_eq(config_task_name(TASK_TEXT), "text");
    ck_assert_str_eq(config_optimizer_name(OPT_ADAM), "adam");
    ck_assert_str_eq(config_optimizer_name(OPT_ADAMW), "adamw");
    ck_assert_str_eq(config_optimizer_name(OPT_SGD), "sgd");
    ck_assert_str_eq(config_optimizer_name(OPT_RADAM), "radam");
    ck_assert_str_eq(config_schedule_name(SCHED_INVERSE_SQRT), "inverse_sqrt");
    ck_assert_str_eq(config_schedule_name(SCHED_LINEAR), "linear");
    ck_assert_str_eq(config_schedule_name(SCHED_CONSTANT), "constant");
    ck_assert_str_eq(config_init_name(INIT_XAVIER_NORMAL), "xavier_normal");
    ck_assert_str_eq(config_init_name(INIT_XAVIER_UNIFORM), "xavier_uniform");
    ck_assert_str_eq(config_init_name(INIT_NORMAL), "normal");
    ck_assert_str_eq(config_placement_name((placement_t)99), "?");
    ck_assert_str_eq(config_placement_name(PLACEMENT_B2T), "b2t");
    ck_assert_str_eq(config_norm_name(NORM_DYT), "dyt");
    ck_assert_str_eq(config_task_name((task_t)-1), "?");
}
END_TEST

START_TEST(test_has_final_norm)
{
    static const struct { placement_t p; norm_kind_t n; final_norm_t f; int want; } t[] = {
        {PLACEMENT_POST, NORM_LAYERNORM, FINAL_NORM_AUTO, 0}, {PLACEMENT_PRE, NORM_LAYERNORM, FINAL_NORM_AUTO, 1},
        {PLACEMENT_POST, NORM_RMSNORM, FINAL_NORM_ON, 1},     {PLACEMENT_PRE, NORM_RMSNORM, FINAL_NORM_OFF, 0},
        {PLACEMENT_PRE, NORM_NONE, FINAL_NORM_AUTO, 0},       {PLACEMENT_POST, NORM_NONE, FINAL_NORM_ON, 0},
        {PLACEMENT_PRE, NORM_RMSNORM, FINAL_NORM_AUTO, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        config_t c;
        config_defaults(&c);
        c.model.placement = t[i].p;
        c.model.norm = t[i].n;
        c.model.final_norm = t[i].f;
        ck_assert_msg(config_has_final_norm(&c) == t[i].want, "case %zu", i);
    }
}
END_TEST

/* ---------------------------------------------------------------- parsing */

START_TEST(test_parse_every_key)
{
    config_t c;
    load_ok(&c, "configs/good_full.ini", NULL, 0);
    ck_assert_str_eq(c.path, "configs/good_full.ini");
    ck_assert_str_eq(c.name, "good_full");
    ck_assert_int_eq(c.model.layers, 3);
    ck_assert_int_eq(c.model.d_model, 16);
    ck_assert_int_eq(c.model.heads, 2);
    ck_assert_int_eq(c.model.d_ff, 24);
    ck_assert_int_eq(c.model.vocab, 50);
    ck_assert_int_eq(c.model.seq_len, 7);
    ck_assert_int_eq(c.model.placement, PLACEMENT_PRE);
    ck_assert_int_eq(c.model.norm, NORM_RMSNORM);
    ck_assert(c.model.norm_eps == 1e-6);
    ck_assert_int_eq(c.model.activation, ACT_GELU);
    ck_assert_int_eq(c.model.causal, 1);
    ck_assert_int_eq(c.model.tie_embeddings, 0);
    ck_assert_int_eq(c.model.final_norm, FINAL_NORM_OFF);
    ck_assert(c.model.dropout == 0.1);
    ck_assert_int_eq(c.init.scheme, INIT_NORMAL);
    ck_assert(c.init.std == 0.05);
    ck_assert_int_eq(c.init.zero_qk, 1);
    ck_assert(c.init.seed == 4294967290UL);
    ck_assert_int_eq(c.data.task, TASK_REVERSE);
    ck_assert_str_eq(c.data.path, "data/corpus.txt");
    ck_assert_int_eq(c.data.batch, 3);
    ck_assert(c.data.label_smoothing == 0.1);
    ck_assert(c.data.zipf == 1.1);
    ck_assert_int_eq(c.train.steps, 250);
    ck_assert_int_eq(c.train.optimizer, OPT_SGD);
    ck_assert(c.train.lr == 1e-3);
    ck_assert_int_eq(c.train.warmup, 500);
    ck_assert_int_eq(c.train.schedule, SCHED_LINEAR);
    ck_assert(c.train.beta1 == 0.85);
    ck_assert(c.train.beta2 == 0.995);
    ck_assert(c.train.eps == 1e-9);
    ck_assert(c.train.weight_decay == 0.01);
    ck_assert(c.train.clip == 1.5);
    ck_assert(c.train.momentum == 0.5);
    ck_assert_int_eq(c.train.checkpoint_every, 50);
    ck_assert_int_eq(c.train.eval_every, 25);
    ck_assert_int_eq(c.train.resume, 1);
    ck_assert_int_eq(c.probe.seeds, 3);
    ck_assert_int_eq(c.probe.batches, 4);
    ck_assert_int_eq(c.probe.every, 10);
    ck_assert_int_eq(c.probe.jacobian, 0);
    ck_assert_str_eq(c.output.file, "results/good_full.h5");
    ck_assert_int_eq(c.output.plots, 1);
    ck_assert_int_eq(c.output.overwrite, 1);
    /* the keys of the file are in table order there, so their lines increase */
    for (int i = 0, prev = 0; i < CONFIG_MAX_KEYS; i++) {
        if (c.src_line[i] == 0) continue;
        ck_assert_int_gt(c.src_line[i], prev);
        prev = c.src_line[i];
    }
    ck_assert_int_eq(c.src_line[K("model", "layers")], 5);
    ck_assert_int_eq(c.src_line[K("model", "heads")], 7);    /* with an inline comment */
}
END_TEST

START_TEST(test_value_syntax)
{
    static const struct { const char *set; int ok; } t[] = {
        {"model.layers=+6", 1}, {"model.layers= 6 ", 1}, {"model.layers=6.0", 0}, {"model.layers=0x10", 0},
        {"model.layers=", 0}, {"model.layers=2147483648", 0}, {"model.layers=2147483647", 1},
        {"model.layers=-1", 0}, {"model.layers=6 6", 0},
        {"train.lr=.5", 1}, {"train.lr=5.", 1}, {"train.lr=1E-3", 1}, {"train.lr=1,5", 0}, {"train.lr=-inf", 0},
        {"train.lr=1e999", 0}, {"train.lr=NaN", 0}, {"train.lr=", 0}, {"train.lr=1e-400", 0},
        /* subnormal doubles are doubles (strtod's ERANGE with a nonzero value) */
        {"model.norm_eps=1e-320", 1}, {"train.lr=4.9e-324", 1}, {"model.norm_eps=2e-324", 0},
        {"train.beta1=0", 1}, {"train.beta1=1", 0}, {"train.beta2=0.999999", 1}, {"train.clip=0", 1},
        {"train.weight_decay=-0.1", 0}, {"data.zipf=0", 1}, {"data.zipf=-1", 0},
        {"model.causal=true", 1}, {"model.causal=FALSE", 1}, {"model.causal=On", 1}, {"model.causal=off", 1},
        {"model.causal=yes", 1}, {"model.causal=no", 1}, {"model.causal=1", 1}, {"model.causal=0", 1},
        {"model.causal=2", 0}, {"model.causal=", 0},
        {"model.placement=pre", 1}, {"model.placement=PRE", 0}, {"model.placement=peri", 1},
        {"model.placement=sandwich", 0}, {"model.norm=dyt", 1}, {"init.scheme=tfixup", 1},
        {"train.optimizer=adamw", 1}, {"train.optimizer=Adam", 0}, {"train.resume=auto", 1},
        {"train.resume=off", 1}, {"train.resume=on", 0}, {"train.resume=true", 0},
        {"probe.jacobian=on", 1}, {"probe.jacobian=off", 1}, {"probe.jacobian=auto", 0},
        {"init.seed=0", 1}, {"init.seed=4294967295", 1}, {"init.seed=4294967296", 0},
        {"init.seed=18446744073709551615", 0}, {"init.seed=18446744073709551616", 0},
        {"init.seed=-1", 0}, {"init.seed=+1", 0}, {"init.seed=1.0", 0}, {"init.seed=", 0},
        {"data.path=", 1}, {"data.path=a ;b", 0}, {"data.path=a;b", 1},
        {"train.eval_every=0", 1}, {"train.eval_every=-1", 0}, {"train.checkpoint_every=0", 1}, {"probe.every=0", 0},
        {"train.steps=0", 1}, {"train.warmup=0", 1}, {"model.d_model=1", 0}, {"model.vocab=1", 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        config_t c;
        config_defaults(&c);
        err[0] = '\0';
        int rc = config_set(&c, t[i].set, err, sizeof err);
        ck_assert_msg(rc == (t[i].ok ? 0 : 2), "%s: rc %d (%s)", t[i].set, rc, err);
        if (!t[i].ok) assert_prefix(err, "--set ");
    }
    config_t c;
    config_defaults(&c);
    ck_assert_int_eq(config_set(&c, "init.seed=4294967295", err, sizeof err), 0);
    ck_assert(c.init.seed == 4294967295UL);
    ck_assert_int_eq(config_set(&c, "model.layers=  +7  ", err, sizeof err), 0);
    ck_assert_int_eq(c.model.layers, 7);
    ck_assert_int_eq(config_set(&c, "data.path=a;b", err, sizeof err), 0);
    ck_assert_str_eq(c.data.path, "a;b");
    ck_assert_int_eq(config_set(&c, "model.norm_eps=1e-320", err, sizeof err), 0);
    ck_assert(c.model.norm_eps == 1e-320 && c.model.norm_eps > 0);
}
END_TEST

START_TEST(test_crlf_bom_colon)
{
    static const char text[] = "\xEF\xBB\xBF; BOM, CRLF\r\n[model]\r\nlayers : 4\r\n\r\n[train]\r\nlr = 2e-4 ; c\r\n";
    char path[64];
    write_temp(path, sizeof path, text, sizeof text - 1);
    config_t c;
    err[0] = '\0';
    int rc = config_load(&c, path, NULL, 0, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(c.model.layers, 4);
    ck_assert(c.train.lr == 2e-4);
    ck_assert_int_eq(c.src_line[K("model", "layers")], 3);
}
END_TEST

START_TEST(test_empty_file)
{
    char path[64];
    write_temp(path, sizeof path, "", 0);
    config_t c, d;
    err[0] = '\0';
    int rc = config_load(&c, path, NULL, 0, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err);
    config_defaults(&d);
    assert_same(&c, &d, 0);
}
END_TEST

/* ---------------------------------------------------------------- lookup in configs/ */

START_TEST(test_lookup_configs_dir)
{
    /* cwd is tests/: a bare name is found in (tests/)configs/, with or without .ini */
    config_t c;
    load_ok(&c, "good_full", NULL, 0);
    ck_assert_str_eq(c.path, "configs/good_full.ini");
    ck_assert_str_eq(c.name, "good_full");
    ck_assert_int_eq(c.model.layers, 3);
    load_ok(&c, "good_full.ini", NULL, 0);
    ck_assert_str_eq(c.path, "configs/good_full.ini");
    ck_assert_str_eq(c.name, "good_full");
    /* errors name the file actually read */
    expect_fail("bad_heads", NULL, 0, "configs/bad_heads.ini:6: model.heads: must divide model.d_model (512)");
    /* a path with a slash is taken as it is */
    expect_fail("configs/good_full", NULL, 0, "configs/good_full: cannot open: ");
    expect_fail("./good_full.ini", NULL, 0, "./good_full.ini: cannot open: ");
}
END_TEST

START_TEST(test_lookup_precedence)
{
    /* In a scratch directory: x.ini exists in cwd and in configs/ -> cwd wins;
     * y.ini only in configs/ -> configs/y.ini; configs/ is relative to the cwd. */
    char old[4096], dir[] = "/tmp/stability_test_lookup_XXXXXX";
    ck_assert_ptr_nonnull(getcwd(old, sizeof old));
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chdir(dir), 0);
    int ok = mkdir("configs", 0700) == 0;
    FILE *f;
    if ((f = fopen("x.ini", "w"))) { fputs("[model]\nlayers = 2\n", f); fclose(f); } else ok = 0;
    if ((f = fopen("configs/x.ini", "w"))) { fputs("[model]\nlayers = 3\n", f); fclose(f); } else ok = 0;
    if ((f = fopen("configs/y.ini", "w"))) { fputs("[model]\n\nlayers = 4\n", f); fclose(f); } else ok = 0;
    config_t cx, cy, cz, cw;
    char ex[CONFIG_ERR_MAX], ey[CONFIG_ERR_MAX], ez[CONFIG_ERR_MAX], ew[CONFIG_ERR_MAX];
    int rx = config_load(&cx, "x.ini", NULL, 0, ex, sizeof ex);
    int ry = config_load(&cy, "y", NULL, 0, ey, sizeof ey);
    int rz = config_load(&cz, "z", NULL, 0, ez, sizeof ez);
    int rw = config_load(&cw, "x", NULL, 0, ew, sizeof ew);   /* no x in cwd -> configs/x.ini */
    unlink("x.ini");
    unlink("configs/x.ini");
    unlink("configs/y.ini");
    rmdir("configs");
    int back = chdir(old);
    rmdir(dir);
    ck_assert_int_eq(back, 0);
    ck_assert(ok);
    ck_assert_msg(rx == 0, "%s", ex);
    ck_assert_str_eq(cx.path, "x.ini");
    ck_assert_int_eq(cx.model.layers, 2);
    ck_assert_msg(ry == 0, "%s", ey);
    ck_assert_str_eq(cy.path, "configs/y.ini");
    ck_assert_str_eq(cy.name, "y");
    ck_assert_int_eq(cy.model.layers, 4);
    ck_assert_int_eq(cy.src_line[K("model", "layers")], 3);
    ck_assert_int_eq(rz, 2);
    ck_assert_str_eq(ez, "z: cannot open: No such file or directory (also tried configs/z, configs/z.ini)");
    ck_assert_msg(rw == 0, "%s", ew);
    ck_assert_str_eq(cw.path, "configs/x.ini");
    ck_assert_int_eq(cw.model.layers, 3);
}
END_TEST

START_TEST(test_missing_file)
{
    expect_fail("configs/does_not_exist.ini", NULL, 0, "configs/does_not_exist.ini: cannot open: ");
    ck_assert_str_eq(err, "configs/does_not_exist.ini: cannot open: No such file or directory");
    expect_fail("does_not_exist", NULL, 0, "does_not_exist: cannot open: No such file or directory");
    expect_fail("configs", NULL, 0, "configs: cannot open: Is a directory");
}
END_TEST

/* ---------------------------------------------------------------- --set */

START_TEST(test_set_overrides)
{
    const char *sets[] = {"model.heads=4", " train.lr = 1e-3 ", "probe.jacobian=off", "model.layers=5",
                          "model.layers=7", "data.task=copy", "model.final_norm=on"};
    config_t c;
    load_ok(&c, "configs/good_minimal.ini", sets, 7);
    ck_assert_int_eq(c.model.heads, 4);          /* overrides line 5 of the file */
    ck_assert(c.train.lr == 1e-3);
    ck_assert_int_eq(c.probe.jacobian, 0);
    ck_assert_int_eq(c.model.layers, 7);         /* the last --set wins */
    ck_assert_int_eq(c.data.task, TASK_COPY);
    ck_assert_int_eq(c.model.final_norm, FINAL_NORM_ON);
    ck_assert_int_eq(c.model.d_model, 8);        /* untouched keys keep the file's value */
    ck_assert_int_eq(c.src_line[K("model", "layers")], -1);   /* --set */
    ck_assert_int_eq(c.src_line[K("model", "d_model")], 4);   /* line 4 */
    ck_assert_int_eq(c.src_line[K("model", "norm")], 0);      /* default */
    /* config_set alone does not check contradictions; config_validate does */
    config_t d;
    config_defaults(&d);
    ck_assert_int_eq(config_set(&d, "model.heads=5", err, sizeof err), 0);
    ck_assert_int_eq(config_validate(&d, err, sizeof err), 2);
    ck_assert_str_eq(err, "--set model.heads: must divide model.d_model (512)");
}
END_TEST

/* What a task implies for keys left unset (docs/design.md §4), and the leak refused: a
 * next-token text LM is causal with V = 256 unless set; causal = false there is an error; a
 * stored config is read as it was (info flags it). */
START_TEST(test_task_defaults_and_leak)
{
    config_t c;
    const char *text[] = {"data.task=text", "data.path=configs/tiny.ini"};
    load_ok(&c, NULL, text, 2);
    ck_assert_int_eq(c.model.causal, 1);
    ck_assert_int_eq(c.model.vocab, 256);
    const char *mlm[] = {"data.task=mlm", "data.path=configs/tiny.ini"};
    load_ok(&c, NULL, mlm, 2);
    ck_assert_int_eq(c.model.causal, 0);
    ck_assert_int_eq(c.model.vocab, 257);
    const char *vset[] = {"data.task=text", "data.path=configs/tiny.ini", "model.vocab=300"};
    load_ok(&c, NULL, vset, 3);
    ck_assert_int_eq(c.model.vocab, 300);   // a vocabulary the user set is theirs
    load_ok(&c, NULL, NULL, 0);   // the random task keeps the paper's bidirectional default
    ck_assert_int_eq(c.model.causal, 0);
    ck_assert_int_eq(c.model.vocab, 1000);
    const char *leak[] = {"data.task=text", "data.path=configs/tiny.ini", "model.causal=false"};
    expect_fail(NULL, leak, 3, "--set model.causal: must be true for data.task = text");
    // a stored config (every key written) is read as it was
    config_t d;
    config_defaults(&d);
    ck_assert_int_eq(config_set(&d, "data.task=text", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&d, "data.path=configs/tiny.ini", err, sizeof err), 0);
    ck_assert_int_eq(config_set(&d, "model.vocab=256", err, sizeof err), 0);
    static char ini[16384];
    ck_assert(config_to_ini(&d, ini, sizeof ini) < sizeof ini);
    ck_assert_int_eq(config_parse_string(&c, ini, "stored", err, sizeof err), 0);
    ck_assert_int_eq(c.model.causal, 0);
}
END_TEST

START_TEST(test_set_errors)
{
    expect_set_fail("model.heads", "--set model.heads: expected section.key=value");
    expect_set_fail("heads=2", "--set heads: expected section.key=value");
    expect_set_fail("model.nope=1", "--set model.nope: unknown key");
    expect_set_fail("modle.heads=2", "--set modle.heads: unknown section");
    expect_set_fail("model.seed=2", "--set model.seed: unknown key (seed belongs in [init])");
    expect_set_fail("model.heads=two", "--set model.heads: not an integer: 'two'");
    expect_set_fail("model.heads=0", "--set model.heads: must be an integer >= 1 (got 0)");
    expect_set_fail("train.lr=nan", "--set train.lr: must be finite");
    expect_set_fail("model.placement=middle", "--set model.placement: must be post, pre, peri, deepnorm, admin, rezero, subln, mixln, b2t or normformer (got 'middle')");
    /* contradictions introduced by --set name the --set */
    expect_set_fail("model.heads=3", "--set model.heads: must divide model.d_model (8)");
    expect_set_fail("model.d_model=9", "--set model.d_model: must be a multiple of model.heads (2)");
    expect_set_fail("data.task=text", "--set data.task: text needs data.path");
    /* the first bad --set is reported */
    const char *sets[] = {"model.layers=3", "model.layers=x", "model.nope=1"};
    expect_fail("configs/good_minimal.ini", sets, 3, "--set model.layers: not an integer: 'x'");
    /* file errors come before --set errors */
    const char *sets2[] = {"model.nope=1"};
    expect_fail("configs/bad_duplicate.ini", sets2, 1, "configs/bad_duplicate.ini:6: model.heads: duplicate key");
    /* a --set can repair a file's contradiction: validation runs after all overrides */
    const char *sets3[] = {"model.heads=8"};
    config_t c;
    load_ok(&c, "configs/bad_heads.ini", sets3, 1);
    ck_assert_int_eq(c.model.heads, 8);
}
END_TEST

/* The scheme table's rules (config/scheme.c, docs/design.md §6c), each naming the key to change:
 * a scheme that needs norm = none, a variant's placements, a placement that places norms, and
 * the keys only one scheme reads. */
START_TEST(test_scheme_rules)
{
    static const struct { const char *sets[3]; int n; const char *want; } t[] = {
        {{"model.placement=rezero"}, 1, "--set model.placement: rezero replaces the norms by a "
         "learnable residual scale: needs model.norm = none"},
        {{"init.scheme=tfixup"}, 1, "--set init.scheme: tfixup is an initialisation for a model "
         "without norms: needs model.norm = none"},
        {{"model.norm=none", "model.placement=peri", "init.scheme=tfixup"}, 3,
         "--set model.placement: tfixup goes with placement post or pre, not peri"},
        {{"model.norm=none", "model.placement=deepnorm"}, 2, "--set model.norm: deepnorm places "
         "norms; model.norm = none removes them (use post, pre or rezero)"},
        {{"model.mix_ratio=0.5"}, 1, "--set model.mix_ratio: only applies to model.placement = "
         "mixln (got post)"},
        {{"model.dyt_alpha=1"}, 1, "--set model.dyt_alpha: only applies to model.norm = dyt "
         "(got layernorm)"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        expect_fail("configs/good_minimal.ini", t[i].sets, t[i].n, t[i].want);
        ck_assert_str_eq(err, t[i].want);
    }
    static const char *const ok[][2] = {{"model.placement=mixln", "model.mix_ratio=0.5"},
                                        {"model.norm=dyt", "model.dyt_alpha=1"},
                                        {"model.placement=rezero", "model.norm=none"}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        config_t c;
        load_ok(&c, "configs/good_minimal.ini", ok[i], 2);
    }
}
END_TEST

/* ---------------------------------------------------------------- validation */

START_TEST(test_validate_where)
{
    config_t c;
    /* set by hand (no source): where = the file, or "defaults" without one */
    config_defaults(&c);
    c.model.heads = 5;
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 2);
    ck_assert_str_eq(err, "defaults: model.heads: must divide model.d_model (512)");
    config_defaults(&c);
    c.model.placement = PLACEMENT_COUNT;   // one past the scheme table's placements
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 2);
    char want[64];
    snprintf(want, sizeof want, "defaults: model.placement: invalid value %d", PLACEMENT_COUNT);
    assert_prefix(err, want);
    config_defaults(&c);
    c.train.lr = NAN;
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 2);
    assert_prefix(err, "defaults: train.lr: must be > 0");
    config_defaults(&c);
    c.probe.seeds = 0;
    ck_assert_int_eq(config_validate(&c, err, sizeof err), 2);
    assert_prefix(err, "defaults: probe.seeds: must be an integer >= 1 (got 0)");
    /* heads from the file, d_model from --set: the --set is named */
    const char *sets[] = {"model.d_model=10", "model.heads=4"};
    expect_fail("configs/good_minimal.ini", sets, 2, "--set model.heads: must divide model.d_model (10)");
    sets[0] = "model.d_model=9";
    expect_fail("configs/good_minimal.ini", sets, 1, "--set model.d_model: must be a multiple of model.heads (2)");
    /* task from --set, vocab from the file: the --set is named */
    const char *sets2[] = {"data.task=copy", "model.vocab=2"};
    expect_fail("configs/good_minimal.ini", sets2, 2, "--set model.vocab: must be >= 3 for data.task = copy");
    const char *sets3[] = {"data.task=reverse"};
    const char *sets3b[] = {"model.seq_len=2"};
    config_t d;
    load_ok(&d, "configs/good_minimal.ini", sets3, 1);   /* seq_len 5: fine */
    expect_fail("configs/bad_copy_vocab.ini", sets3b, 1, "configs/bad_copy_vocab.ini:4: model.vocab: must be >= 3");
    const char *sets4[] = {"data.task=text", "data.path=x.txt"};
    expect_fail("configs/good_minimal.ini", sets4, 2, "--set data.task: text (byte-level) needs model.vocab >= 256 (got 11)");
    const char *sets4b[] = {"data.path=x.txt", "model.vocab=100"};
    expect_fail("configs/bad_text_nopath.ini", sets4b, 2, "--set model.vocab: must be >= 256 for data.task = text");
    const char *sets4c[] = {"data.path=x.txt"};
    load_ok(&d, "configs/bad_text_nopath.ini", sets4c, 1);
    ck_assert_int_eq(d.data.task, TASK_TEXT);
    /* final_norm = on with post is allowed, and with norm = none (no-op) too */
    const char *sets5[] = {"model.final_norm=on", "model.norm=none"};
    load_ok(&d, "configs/good_minimal.ini", sets5, 2);
    ck_assert_int_eq(config_has_final_norm(&d), 0);
}
END_TEST

/* ---------------------------------------------------------------- bad files */

/* One fixture per class of bad input, with the exact prefix of the message. */
static const struct { const char *file, *prefix; } bad[] = {
    {"configs/bad_malformed.ini", "configs/bad_malformed.ini:4: syntax: expected 'key = value' or '[section]', got 'layers 6'"},
    {"configs/bad_section_header.ini", "configs/bad_section_header.ini:3: syntax: section header without closing ']'"},
    {"configs/bad_long_line.ini", "configs/bad_long_line.ini:4: syntax: line longer than 198 characters"},
    {"configs/bad_unknown_section.ini", "configs/bad_unknown_section.ini:5: modle: unknown section [modle] (did you mean [model]?)"},
    {"configs/bad_empty_section.ini", "configs/bad_empty_section.ini:5: bogus: unknown section [bogus]"},
    {"configs/bad_outside_section.ini", "configs/bad_outside_section.ini:3: layers: key outside any section"},
    {"configs/bad_unknown_key.ini", "configs/bad_unknown_key.ini:5: model.layer: unknown key (did you mean model.layers?)"},
    {"configs/bad_wrong_section.ini", "configs/bad_wrong_section.ini:4: model.seed: unknown key (seed belongs in [init])"},
    {"configs/bad_duplicate.ini", "configs/bad_duplicate.ini:6: model.heads: duplicate key (first set on line 4)"},
    {"configs/bad_continuation.ini", "configs/bad_continuation.ini:5: model.layers: indented line continues"},
    {"configs/bad_int.ini", "configs/bad_int.ini:4: model.heads: not an integer: 'four'"},
    {"configs/bad_int_trailing.ini", "configs/bad_int_trailing.ini:4: model.layers: not an integer: '6 # six'"},
    {"configs/bad_int_float.ini", "configs/bad_int_float.ini:4: train.steps: not an integer: '1e3'"},
    {"configs/bad_int_overflow.ini", "configs/bad_int_overflow.ini:4: train.steps: must be an integer >= 0 and <= 2147483647"},
    {"configs/bad_empty_value.ini", "configs/bad_empty_value.ini:4: model.layers: empty value"},
    {"configs/bad_double.ini", "configs/bad_double.ini:4: train.lr: not a number: 'fast'"},
    {"configs/bad_nonfinite.ini", "configs/bad_nonfinite.ini:4: train.lr: must be finite (got inf)"},
    {"configs/bad_nan.ini", "configs/bad_nan.ini:4: model.dropout: must be finite (got nan)"},
    {"configs/bad_bool.ini", "configs/bad_bool.ini:4: model.causal: must be true/false"},
    {"configs/bad_enum.ini", "configs/bad_enum.ini:4: model.placement: must be post, pre, peri, deepnorm, admin, rezero, subln, mixln, b2t or normformer (got 'Pre')"},
    {"configs/bad_onoff.ini", "configs/bad_onoff.ini:4: probe.jacobian: must be on or off (got 'sometimes')"},
    {"configs/bad_resume.ini", "configs/bad_resume.ini:4: train.resume: must be off or auto (got 'on')"},
    {"configs/bad_seed.ini", "configs/bad_seed.ini:4: init.seed: must be a non-negative integer (got '-1')"},
    {"configs/bad_range_int.ini", "configs/bad_range_int.ini:4: model.layers: must be an integer >= 1 (got 0)"},
    {"configs/bad_range_double.ini", "configs/bad_range_double.ini:4: model.dropout: must be in [0, 1) (got 1)"},
    {"configs/bad_range_open.ini", "configs/bad_range_open.ini:4: train.lr: must be > 0 (got 0)"},
    {"configs/bad_heads.ini", "configs/bad_heads.ini:6: model.heads: must divide model.d_model (512)"},
    {"configs/bad_heads_dmodel.ini", "configs/bad_heads_dmodel.ini:4: model.d_model: must be a multiple of model.heads (4)"},
    {"configs/bad_text_nopath.ini", "configs/bad_text_nopath.ini:5: data.task: text needs data.path"},
    {"configs/bad_text_vocab.ini", "configs/bad_text_vocab.ini:4: model.vocab: must be >= 256 for data.task = text"},
    {"configs/bad_copy_vocab.ini", "configs/bad_copy_vocab.ini:4: model.vocab: must be >= 3 for data.task = copy"},
    {"configs/bad_reverse_seqlen.ini", "configs/bad_reverse_seqlen.ini:6: model.seq_len: must be >= 3 for data.task = reverse"},
    {"configs/bad_path_too_long.ini", "configs/bad_path_too_long.ini:4: data.path: longer than 190 characters"},
    {"configs/bad_section_junk.ini", "configs/bad_section_junk.ini:3: syntax: text after the section's ']': 'junk'"},
    {"configs/bad_section_key.ini", "configs/bad_section_key.ini:3: syntax: text after the section's ']': 'layers=2'"},
    {"configs/bad_cr_endings.ini", "configs/bad_cr_endings.ini:1: syntax: carriage return inside a line"},
    {"configs/bad_mlm_encdec.ini", "configs/bad_mlm_encdec.ini:6: data.task: mlm (BERT's masked LM) is one bidirectional stack: model.arch = lm"},
    {"configs/bad_mlm_causal.ini", "configs/bad_mlm_causal.ini:5: model.causal: must be false for data.task = mlm"},
    {"configs/bad_mlm_vocab.ini", "configs/bad_mlm_vocab.ini:4: model.vocab: must be >= 257 for data.task = mlm"},
    {"configs/bad_mlm_rate_high.ini", "configs/bad_mlm_rate_high.ini:8: data.mask_rate: must be in (0, 1) (got 1)"},
    {"configs/bad_mlm_rate_zero.ini", "configs/bad_mlm_rate_zero.ini:8: data.mask_rate: must be in (0, 1) (got 0)"},
    {"configs/bad_mlm_rate_other_task.ini", "configs/bad_mlm_rate_other_task.ini:5: data.mask_rate: only applies to data.task = mlm"},
};

START_TEST(test_bad_file)
{
    expect_fail(bad[_i].file, NULL, 0, bad[_i].prefix);
}
END_TEST

/* Every configs/bad_*.ini states its expected error in a "; expect: LINE KEY" comment
 * (tests/test_cli.sh uses it too); check them all, and that the table above covers them. */
START_TEST(test_bad_fixtures_expectations)
{
    DIR *d = opendir("configs");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "bad_", 4) != 0 || len < 5 || strcmp(e->d_name + len - 4, ".ini") != 0) continue;
        char path[512], line[512], key[128], prefix[768];
        snprintf(path, sizeof path, "configs/%s", e->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        int lineno = 0, found = 0;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "; expect: %d %127s", &lineno, key) == 2) { found = 1; break; }
        fclose(f);
        ck_assert_msg(found, "%s: no '; expect: LINE KEY' line", path);
        snprintf(prefix, sizeof prefix, "%s:%d: %s: ", path, lineno, key);
        expect_fail(path, NULL, 0, prefix);
        int listed = 0;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            if (strcmp(bad[i].file, path) == 0) listed = 1;
        ck_assert_msg(listed, "%s is not in the table of test_config.c", path);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, (int)(sizeof bad / sizeof bad[0]));
}
END_TEST

/* ---------------------------------------------------------------- writing INI */

START_TEST(test_roundtrip_full)
{
    config_t a, b;
    load_ok(&a, "configs/good_full.ini", NULL, 0);
    roundtrip(&a, &b);
    assert_same(&a, &b, 0);   /* final_norm was explicit: identical */
}
END_TEST

START_TEST(test_roundtrip_defaults_and_final_norm)
{
    static const char *const variants[][2] = {
        {"model.placement=post", "model.norm=layernorm"}, {"model.placement=pre", "model.norm=layernorm"},
        {"model.placement=pre", "model.norm=none"},       {"model.placement=post", "model.final_norm=on"},
        {"model.placement=pre", "model.final_norm=off"},
    };
    static const char *const want[] = {"final_norm = off\n", "final_norm = on\n", "final_norm = off\n",
                                       "final_norm = on\n", "final_norm = off\n"};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        config_t a, b;
        load_ok(&a, NULL, variants[i], 2);
        char text[8192];
        ck_assert_uint_lt(config_to_ini(&a, text, sizeof text), sizeof text);
        ck_assert_msg(strstr(text, want[i]), "variant %zu: no \"%s\" in\n%s", i, want[i], text);
        roundtrip(&a, &b);
    }
}
END_TEST

/* probe.density_blocks (docs/design.md §10): off by default and then not written; refused
 * without probe.density_probes, naming itself; on with the density written as "on" and read
 * back. */
START_TEST(test_density_blocks_key)
{
    config_t a, b;
    load_ok(&a, "configs/good_minimal.ini", NULL, 0);
    ck_assert_int_eq(a.probe.density_blocks, 0);
    char text[8192];
    ck_assert_uint_lt(config_to_ini(&a, text, sizeof text), sizeof text);
    ck_assert_msg(!strstr(text, "density_blocks"), "written at its default:\n%s", text);
    expect_set_fail("probe.density_blocks=on", "--set probe.density_blocks: the spectral density "
                    "of each block: needs probe.density_probes > 0");
    expect_set_fail("probe.density_blocks=maybe", "--set probe.density_blocks:");
    const char *sets[] = {"probe.curvature_every=5", "probe.density_probes=4",
                          "probe.density_blocks=on"};
    load_ok(&a, "configs/good_minimal.ini", sets, 3);
    ck_assert_int_eq(a.probe.density_blocks, 1);
    ck_assert_uint_lt(config_to_ini(&a, text, sizeof text), sizeof text);
    ck_assert_msg(strstr(text, "density_blocks = on\n"), "not written when on:\n%s", text);
    roundtrip(&a, &b);
    ck_assert_int_eq(b.probe.density_blocks, 1);
}
END_TEST

START_TEST(test_roundtrip_awkward_values)
{
    config_t a, b;
    config_defaults(&a);
    a.train.lr = 0.1 + 0.2;                 /* 0.30000000000000004 */
    a.train.beta1 = 1.0 / 3.0;
    a.train.beta2 = nextafter(1.0, 0.0);    /* largest double below 1 */
    a.train.eps = 1e-300;
    a.model.norm_eps = 4.9406564584124654e-300;
    a.model.dropout = 0.1;
    a.data.zipf = 1.0999999999999999;
    a.init.std = 1e300;
    a.train.clip = nextafter(1.5, 2.0);
    a.train.weight_decay = 0x1.fffffffffffffp-2;
    a.init.seed = 4294967295UL;
    a.train.steps = 1;   /* a probe would need init.seed + probe.seeds - 1 <= 2^32 - 1 */
    snprintf(a.data.path, sizeof a.data.path, "dir with spaces/#not a comment;x.txt");
    snprintf(a.output.file, sizeof a.output.file, "out.h5");
    ck_assert_int_eq(config_validate(&a, err, sizeof err), 0);
    roundtrip(&a, &b);
    /* short where exact: the writer does not print noise digits */
    char text[8192];
    config_to_ini(&a, text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "\ndropout = 0.1\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nlr = 0.30000000000000004\n"));
}
END_TEST

START_TEST(test_to_ini_length)
{
    config_t a;
    load_ok(&a, "configs/good_full.ini", NULL, 0);
    size_t n = config_to_ini(&a, NULL, 0);
    ck_assert_uint_gt(n, 500);
    char *full = malloc(n + 1), small[32];
    ck_assert_ptr_nonnull(full);
    ck_assert_uint_eq(config_to_ini(&a, full, n + 1), n);
    ck_assert_uint_eq(strlen(full), n);
    /* a short buffer gets a NUL-terminated prefix, and the needed length is still returned */
    memset(small, 'X', sizeof small);
    ck_assert_uint_eq(config_to_ini(&a, small, sizeof small), n);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, full, sizeof small - 1) == 0);
    /* every key of every section is written */
    static const char *const keys[] = {
        "[model]", "\nlayers = 3\n", "\nd_model = 16\n", "\nheads = 2\n", "\nd_ff = 24\n", "\nvocab = 50\n",
        "\nseq_len = 7\n", "\nplacement = pre\n", "\nnorm = rmsnorm\n", "\nnorm_eps = 1e-06\n",
        "\nactivation = gelu\n", "\ncausal = true\n", "\ntie_embeddings = false\n", "\nfinal_norm = off\n",
        "\ndropout = 0.1\n", "[init]", "\nscheme = normal\n", "\nstd = 0.05\n", "\nzero_qk = true\n",
        "\nseed = 4294967290\n", "[data]", "\ntask = reverse\n", "\npath = data/corpus.txt\n", "\nbatch = 3\n",
        "\nlabel_smoothing = 0.1\n", "\nzipf = 1.1\n", "[train]", "\nsteps = 250\n", "\noptimizer = sgd\n",
        "\nlr = 0.001\n", "\nwarmup = 500\n", "\nschedule = linear\n", "\nbeta1 = 0.85\n", "\nbeta2 = 0.995\n",
        "\neps = 1e-09\n", "\nweight_decay = 0.01\n", "\nclip = 1.5\n", "\nmomentum = 0.5\n",
        "\ncheckpoint_every = 50\n", "\neval_every = 25\n", "\nresume = auto\n", "[probe]", "\nseeds = 3\n",
        "\nbatches = 4\n", "\nevery = 10\n", "\njacobian = off\n", "[output]", "\nfile = results/good_full.h5\n",
        "\nplots = true\n", "\noverwrite = true\n",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(full, keys[i]), "no \"%s\" in\n%s", keys[i], full);
    free(full);
}
END_TEST

/* StableAdamW divides by max(v̂, ε²): ε = 1e-162, whose square underflows to 0, is refused at
 * train.eps (exit 2; it trained to NaN, "diverged at step 2"); ε = 1e-160 (a subnormal
 * square) and adam with ε = 1e-162 (no ε² anywhere) load. */
START_TEST(test_stableadamw_eps)
{
    const char *eps_last[] = {"train.optimizer=stableadamw", "train.eps=1e-162"};
    expect_fail("configs/good_minimal.ini", eps_last, 2,
                "--set train.eps: 1e-162 squared is 0 in float64");
    config_t c;
    const char *subnormal[] = {"train.optimizer=stableadamw", "train.eps=1e-160"};
    load_ok(&c, "configs/good_minimal.ini", subnormal, 2);
    ck_assert(c.train.eps * c.train.eps > 0.0);
    const char *adam[] = {"train.optimizer=adam", "train.eps=1e-162"};
    load_ok(&c, "configs/good_minimal.ini", adam, 2);
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_task_defaults_and_leak);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_has_final_norm);
    tcase_add_test(tc, test_parse_every_key);
    tcase_add_test(tc, test_value_syntax);
    tcase_add_test(tc, test_crlf_bom_colon);
    tcase_add_test(tc, test_empty_file);
    tcase_add_test(tc, test_lookup_configs_dir);
    tcase_add_test(tc, test_lookup_precedence);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_set_overrides);
    tcase_add_test(tc, test_set_errors);
    tcase_add_test(tc, test_scheme_rules);
    tcase_add_test(tc, test_validate_where);
    tcase_add_loop_test(tc, test_bad_file, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, test_bad_fixtures_expectations);
    tcase_add_test(tc, test_roundtrip_full);
    tcase_add_test(tc, test_roundtrip_defaults_and_final_norm);
    tcase_add_test(tc, test_roundtrip_awkward_values);
    tcase_add_test(tc, test_to_ini_length);
    tcase_add_test(tc, test_stableadamw_eps);
    tcase_add_test(tc, test_density_blocks_key);
    suite_add_tcase(s, tc);
    return s;
}
