/* test_sweep.c — the sweep's pieces that need no process: the Slurm array specification. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "sweep/sweep.h"
#include "tests.h"

/* Parse an --array specification ("0-5,7,9-12") into mark[0..max); returns indices seen. */
static int spec_indices(const char *spec, char *mark, int max)
{
    int seen = 0;
    char buf[SWEEP_SPEC_MAX];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int a, b;
        if (sscanf(t, "%d-%d", &a, &b) != 2) b = a = atoi(t);
        for (int i = a; i <= b && i < max; i++) {
            mark[i]++;
            seen++;
        }
    }
    return seen;
}

/* Every other index of 0..8191 (4096 ranges of one): a list far past one sbatch's argument
 * (--only-missing of a 64x64 sweep cut it at 8192 characters and dropped tasks 1858-4095). */
START_TEST(test_array_specs_split)
{
    enum { N = 4096 };
    int *ids = malloc(N * sizeof *ids);
    char *mark = calloc(2 * N, 1);
    for (int i = 0; i < N; i++) ids[i] = 2 * i;
    int pos = 0, specs = 0, total = 0;
    char spec[SWEEP_SPEC_MAX];
    while (pos < N) {
        const int got = sweep_array_spec_next(ids, N, &pos, spec, sizeof spec);
        ck_assert_int_gt(got, 0);
        ck_assert_int_lt((int)strlen(spec), SWEEP_SPEC_MAX);
        ck_assert_int_eq(spec_indices(spec, mark, 2 * N), got);
        total += got;
        specs++;
    }
    ck_assert_int_eq(total, N);
    ck_assert_int_ge(specs, 5);   // 4096 five-character items: about 20 KB of specification
    for (int i = 0; i < 2 * N; i++) ck_assert_int_eq(mark[i], i % 2 == 0);
    free(ids);
    free(mark);
}
END_TEST

/* Consecutive indices compress to ranges: 0-4095 is one range, 0-9,11,13-20 three. */
START_TEST(test_array_specs_ranges)
{
    int ids[4096], pos = 0;
    char spec[64];
    for (int i = 0; i < 4096; i++) ids[i] = i;
    ck_assert_int_eq(sweep_array_spec_next(ids, 4096, &pos, spec, sizeof spec), 4096);
    ck_assert_str_eq(spec, "0-4095");
    const int some[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 14, 15, 16, 17, 18, 19, 20};
    pos = 0;
    ck_assert_int_eq(sweep_array_spec_next(some, 19, &pos, spec, sizeof spec), 19);
    ck_assert_str_eq(spec, "0-9,11,13-20");
    pos = 0;   // a spec too short for all: the first ranges, then the rest
    ck_assert_int_eq(sweep_array_spec_next(some, 19, &pos, spec, 8), 11);
    ck_assert_str_eq(spec, "0-9,11");
    ck_assert_int_eq(sweep_array_spec_next(some, 19, &pos, spec, 8), 8);
    ck_assert_str_eq(spec, "13-20");
    ck_assert_int_eq(sweep_array_spec_next(some, 19, &pos, spec, 8), 0);
}
END_TEST

Suite *sweep_suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("slurm");
    tcase_add_test(tc, test_array_specs_split);
    tcase_add_test(tc, test_array_specs_ranges);
    suite_add_tcase(s, tc);
    return s;
}
