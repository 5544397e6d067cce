/* identity.c — the identity of the data a run reads (identity.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "data/identity.h"
#include "util/fsutil.h"

const char *const DATA_CORPUS_FILE[DATA_CORPUS_FILES] = {"train.en.ids", "train.de.ids",
                                                         "valid.en.ids", "valid.de.ids"};

int data_reads_files(const config_t *cfg)
{
    const task_t t = cfg->data.task;
    return t == TASK_TEXT || t == TASK_MLM || t == TASK_TRANSLATION;
}

int data_identity_of_corpus(char hex[][SHA256_HEX], const unsigned long long *bytes,
                            data_identity_t *id)
{
    char listing[DATA_CORPUS_FILES * (SHA256_HEX + 20)];
    size_t n = 0;
    id->bytes = 0;
    for (int k = 0; k < DATA_CORPUS_FILES; k++) {
        n += (size_t)snprintf(listing + n, sizeof listing - n, "%s  %s\n", hex[k], DATA_CORPUS_FILE[k]);
        id->bytes += bytes[k];
    }
    return sha256_hex(listing, n, id->sha256);
}

/* The SHA-256 and size of the regular file path, read now. 0, or −1 with errno. */
static int hash_file(const char *path, char hex[SHA256_HEX], unsigned long long *bytes)
{
    const int fd = fsutil_open_read(path);   // a FIFO is never waited for
    if (fd < 0) return -1;
    sha256_t h;
    if (sha256_begin(&h)) { close(fd); errno = ENOMEM; return -1; }
    char buf[1 << 16];
    *bytes = 0;
    for (;;) {
        const ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int e = errno;
            sha256_abort(&h);
            close(fd);
            errno = e;
            return -1;
        }
        if (got == 0) break;
        sha256_add(&h, buf, (size_t)got);
        *bytes += (unsigned long long)got;
    }
    close(fd);
    if (sha256_end(&h, hex)) { errno = ENOMEM; return -1; }
    return 0;
}

/* The files cfg reads: their paths into path[] (at most DATA_CORPUS_FILES). The count. */
static int data_files(const config_t *cfg, char path[][4200])
{
    if (cfg->data.task == TASK_TRANSLATION) {
        for (int k = 0; k < DATA_CORPUS_FILES; k++)
            snprintf(path[k], 4200, "%s/%s", cfg->data.path, DATA_CORPUS_FILE[k]);
        return DATA_CORPUS_FILES;
    }
    snprintf(path[0], 4200, "%s", cfg->data.path);
    return 1;
}

/* A remembered answer: the files' stat (device, inode, size, change times) and the identity. */
typedef struct {
    int n;
    struct stat st[DATA_CORPUS_FILES];
    char path[DATA_CORPUS_FILES][4200];
    data_identity_t id;
} remembered_t;

#define REMEMBERED 4
static remembered_t memo[REMEMBERED];
static int memo_next;

static int same_stat(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int data_identity_read(const config_t *cfg, data_identity_t *id, char *err, size_t errlen)
{
    memset(id, 0, sizeof *id);
    if (!data_reads_files(cfg)) return 0;
    remembered_t now;
    memset(&now, 0, sizeof now);
    now.n = data_files(cfg, now.path);
    for (int k = 0; k < now.n; k++)
        if (stat(now.path[k], &now.st[k]) != 0) memset(&now.st[k], 0, sizeof now.st[k]);
    for (int m = 0; m < REMEMBERED; m++) {
        const remembered_t *r = &memo[m];
        int same = r->n == now.n && r->id.sha256[0];
        for (int k = 0; same && k < now.n; k++)
            same = !strcmp(r->path[k], now.path[k]) && now.st[k].st_ino && same_stat(&r->st[k], &now.st[k]);
        if (same) { *id = r->id; return 0; }
    }
    char hex[DATA_CORPUS_FILES][SHA256_HEX];
    unsigned long long bytes[DATA_CORPUS_FILES];
    for (int k = 0; k < now.n; k++)
        if (hash_file(now.path[k], hex[k], &bytes[k])) {
            const int e = errno;
            snprintf(err, errlen, "data.path: %s: cannot open: %s", now.path[k],
                     e == EINVAL ? "not a regular file" : strerror(e));
            return e == ENOMEM ? 1 : 2;
        }
    if (now.n == 1) {
        memcpy(id->sha256, hex[0], SHA256_HEX);
        id->bytes = bytes[0];
    } else if (data_identity_of_corpus(hex, bytes, id)) {
        snprintf(err, errlen, "data.path: out of memory");
        return 1;
    }
    now.id = *id;
    memo[memo_next] = now;
    memo_next = (memo_next + 1) % REMEMBERED;
    return 0;
}

int data_identity_same(const config_t *cfg, const char *stored, long long bytes, char *diff,
                       size_t len)
{
    if (!stored || !stored[0] || !data_reads_files(cfg)) return 1;
    data_identity_t now;
    char err[4400];
    if (data_identity_read(cfg, &now, err, sizeof err)) {
        snprintf(diff, len, "%s", err);
        return -1;
    }
    if (!strcmp(now.sha256, stored) && (long long)now.bytes == bytes) return 1;
    snprintf(diff, len, "data.path = %s: the run read %lld bytes (SHA-256 %.16s...), now it has "
             "%llu bytes (SHA-256 %.16s...)", cfg->data.path, bytes, stored, now.bytes, now.sha256);
    return 0;
}
