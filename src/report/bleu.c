/* bleu.c — runtime/bleu.py as a child process (bleu.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "report/bleu.h"
#include "util/proc.h"

#define PYTHON "/usr/bin/python3"

/* DIR_OF_EXECUTABLE/runtime/bleu.py, else ./runtime/bleu.py (a program copied elsewhere run
 * from the repository, as tools/same_results.py does) into path. 0, or 1 with err. */
static int script_path(char *path, size_t len, char *err, size_t errlen)
{
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(err, errlen, "cannot find the program's own path: %s", strerror(errno));
        return 1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    struct stat st;
    if ((size_t)snprintf(path, len, "%s/runtime/bleu.py", exe) < len && stat(path, &st) == 0)
        return 0;
    if ((size_t)snprintf(path, len, "runtime/bleu.py") < len && stat(path, &st) == 0) return 0;
    snprintf(err, errlen, "%.200s/runtime/bleu.py: not found (it belongs beside the program)", exe);
    return 1;
}

/* Run bleu.py MODE --dir dir [extra] with stdin input and the streams of io. 0 or 1 (err). */
static int run_helper(const char *mode, const char *dir, const char *opt, const char *val,
                      proc_io_t *io, char *err, size_t errlen)
{
    char script[PATH_MAX + 32];
    if (script_path(script, sizeof script, err, errlen)) return 1;
    const char *argv[] = {PYTHON, script, mode, "--dir", dir, opt, val, NULL};
    const int st = proc_run(argv, io);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "runtime/bleu.py %s --dir %.200s failed (%s); its message is above",
                 mode, dir, st == -1 ? strerror(errno) : !WIFEXITED(st) ? "killed" :
                 WEXITSTATUS(st) == 127 ? PYTHON " not found" : "exit status not 0");
        return 1;
    }
    return 0;
}

int bleu_score(const char *dir, const char *lines, double *bleu, char *err, size_t errlen)
{
    char out[128] = "";
    proc_io_t io = {.input = lines, .out_fd = -1, .out = out, .outlen = sizeof out};
    if (run_helper("score", dir, NULL, NULL, &io, err, errlen)) return 1;
    char *end;
    *bleu = strtod(out, &end);
    if (end == out) {
        snprintf(err, errlen, "runtime/bleu.py score: no number in its answer '%.40s'", out);
        return 1;
    }
    return 0;
}

int bleu_detokenise(const char *dir, const char *ids, int fd, char *err, size_t errlen)
{
    int copy_errno = 0;
    proc_io_t io = {.input = ids, .out_fd = -1, .copy_fd = fd, .copy_errno = &copy_errno};
    if (run_helper("decode", dir, NULL, NULL, &io, err, errlen)) return 1;
    if (copy_errno) {
        snprintf(err, errlen, "cannot write the translations: %s", strerror(copy_errno));
        return 1;
    }
    return 0;
}

int bleu_encode(const char *dir, const char *input, char **ids, char *err, size_t errlen)
{
    struct stat st;
    *ids = NULL;
    if (stat(input, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: cannot read it (missing, or not a regular file)", input);
        return 1;
    }
    // a piece is at least one byte and its id at most 6 characters with its space
    const size_t cap = (size_t)st.st_size * 8 + 4096;
    if (!(*ids = malloc(cap))) { snprintf(err, errlen, "out of memory"); return 1; }
    proc_io_t io = {.out_fd = -1, .out = *ids, .outlen = cap};
    if (run_helper("encode", dir, "--input", input, &io, err, errlen)) {
        free(*ids);
        *ids = NULL;
        return 1;
    }
    return 0;
}

int bleu_vocab(const char *dir, long *n, char *err, size_t errlen)
{
    char out[64] = "";
    proc_io_t io = {.out_fd = -1, .out = out, .outlen = sizeof out, .quiet = 1};
    char path[PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s/spm.model", dir) >= sizeof path ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%.200s/spm.model: no vocabulary (the corpus of "
                 "setup/translation-corpus.sh has one)", dir);
        return 1;
    }
    char script[PATH_MAX + 32];
    if (script_path(script, sizeof script, err, errlen)) return 1;
    if (run_helper("vocab", dir, NULL, NULL, &io, err, errlen)) {
        snprintf(err, errlen, "%.200s: not a sentencepiece model (or python3-sentencepiece "
                 "is missing)", path);
        return 1;
    }
    *n = strtol(out, NULL, 10);
    return 0;
}
