/* test_util.c — src/util (file-system guards, thread counts, the line reader) and the test
 * runner's own set-up. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sf_log.h>
#include "tests.h"
#include "util/args.h"
#include "util/fsutil.h"
#include "util/lines.h"
#include "util/sha256.h"
#include "util/threads.h"

/* GSL reports a domain error as a return code, as in `stability` itself (main turns GSL's
 * aborting handler off; so must the runner, or this aborts the whole CK_FORK=no run). */
START_TEST(test_gsl_errors_are_returned)
{
    gsl_sf_result r;
    ck_assert_int_eq(gsl_sf_log_e(-1.0, &r), GSL_EDOM);
}
END_TEST

/* A scratch directory under /tmp, made once per test. */
static void scratch(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/stability_util.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Only a missing path or a regular file may be replaced; a link, FIFO or directory is not. */
START_TEST(test_fsutil_replaceable)
{
    char dir[64], p[128], err[256];
    scratch(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/missing", dir);
    ck_assert_int_eq(fsutil_check_replaceable(p, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/file", dir);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    ck_assert_int_eq(fsutil_check_replaceable(p, err, sizeof err), 0);
    char link[128];
    snprintf(link, sizeof link, "%s/link", dir);
    ck_assert_int_eq(symlink(p, link), 0);
    ck_assert_int_eq(fsutil_check_replaceable(link, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "is a symbolic link"));
    ck_assert_int_lt(fsutil_open_regular(link, O_RDONLY, 0), 0);
    ck_assert_int_eq(fsutil_unlink_regular(link), -1);
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(fsutil_check_replaceable(fifo, err, sizeof err), 2);
    ck_assert_int_lt(fsutil_open_regular(fifo, O_RDONLY, 0), 0);   // returns, never blocks
    ck_assert_int_eq(fsutil_check_replaceable(dir, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "is a directory"));
    const int fd = fsutil_open_regular(p, O_RDONLY, 0);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(link);
    unlink(fifo);
    ck_assert_int_eq(fsutil_unlink_regular(p), 0);
    rmdir(dir);
}
END_TEST

/* Whole lines: CRLF as LF, the line count, a line too long for the buffer is an error naming
 * its line (never a second line made of its tail), and so is a NUL byte. */
START_TEST(test_lines_reader)
{
    char text[400], buf[200];
    snprintf(text, sizeof text, "a = 1\r\n; %0250d\nb = 2", 0);
    lines_t r;
    lines_init(&r, text, strlen(text));
    ck_assert_str_eq(lines_reader(buf, sizeof buf, &r), "a = 1\n");
    ck_assert_int_eq(r.line, 1);
    ck_assert_ptr_nonnull(lines_reader(buf, sizeof buf, &r));
    ck_assert_int_eq(r.err_line, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "longer than 198 characters"));
    ck_assert_str_eq(lines_reader(buf, sizeof buf, &r), "b = 2\n");   // the next line, not a tail
    ck_assert_int_eq(r.line, 3);
    ck_assert_ptr_null(lines_reader(buf, sizeof buf, &r));
    const char nul[] = "x = 1\ny\0 = 2\n";
    lines_init(&r, nul, sizeof nul - 1);
    lines_reader(buf, sizeof buf, &r);
    lines_reader(buf, sizeof buf, &r);
    ck_assert_int_eq(r.err_line, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "NUL"));
}
END_TEST

/* Numbers of options: a subnormal (strtod sets ERANGE) is a number; an underflow to 0 is not. */
START_TEST(test_args_parse_double_subnormal)
{
    double d = 0;
    ck_assert_int_eq(args_parse_double("1e-320", 0, 1, HUGE_VAL, &d), 0);
    ck_assert(d == 1e-320);
    ck_assert_int_eq(args_parse_double("1e-400", 0, 0, HUGE_VAL, &d), -1);
    ck_assert_int_eq(args_parse_double("1e400", 0, 0, HUGE_VAL, &d), -1);
    ck_assert_int_eq(args_parse_double("0", 0, 1, HUGE_VAL, &d), -1);
}
END_TEST

/* A sweep's share (STABILITY_SWEEP_THREADS) wins over STABILITY_THREADS and SLURM_CPUS_PER_TASK. */
/* SHA-256 (the data's identity, data/identity.h) against FIPS 180-2's examples, whole and fed a
 * byte at a time. */
START_TEST(test_sha256_fips)
{
    static const struct { const char *text, *digest; } v[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[SHA256_HEX], piecewise[SHA256_HEX];
        ck_assert_int_eq(sha256_hex(v[i].text, strlen(v[i].text), hex), 0);
        ck_assert_str_eq(hex, v[i].digest);
        sha256_t h;
        ck_assert_int_eq(sha256_begin(&h), 0);
        for (const char *c = v[i].text; *c; c++) sha256_add(&h, c, 1);
        ck_assert_int_eq(sha256_end(&h, piecewise), 0);
        ck_assert_str_eq(piecewise, v[i].digest);
    }
}
END_TEST

START_TEST(test_threads_sweep_share_wins)
{
    const char *names[3] = {"STABILITY_SWEEP_THREADS", "STABILITY_THREADS", "SLURM_CPUS_PER_TASK"};
    char *saved[3];
    for (int k = 0; k < 3; k++) saved[k] = getenv(names[k]) ? strdup(getenv(names[k])) : NULL;
    setenv("STABILITY_THREADS", "16", 1);
    setenv("SLURM_CPUS_PER_TASK", "16", 1);
    setenv("STABILITY_SWEEP_THREADS", "4", 1);
    ck_assert_int_eq(threads_from_env(), 4);
    unsetenv("STABILITY_SWEEP_THREADS");
    ck_assert_int_eq(threads_from_env(), 16);
    for (int k = 0; k < 3; k++) {
        if (saved[k]) setenv(names[k], saved[k], 1);
        else unsetenv(names[k]);
        free(saved[k]);
    }
}
END_TEST

Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("util");
    tcase_add_test(tc, test_gsl_errors_are_returned);
    tcase_add_test(tc, test_fsutil_replaceable);
    tcase_add_test(tc, test_lines_reader);
    tcase_add_test(tc, test_threads_sweep_share_wins);
    tcase_add_test(tc, test_args_parse_double_subnormal);
    tcase_add_test(tc, test_sha256_fips);
    suite_add_tcase(s, tc);
    return s;
}
