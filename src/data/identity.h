/* identity.h — the identity of the data a run reads (docs/design.md §6, "A run's identity"):
 * a run is its configuration, its seed and its data. The data are named by their size and
 * SHA-256 (util/sha256.h, OpenSSL's libcrypto), recorded as the root attributes data_sha256
 * (hex) and data_bytes of every result file of a run that reads data, and checked again by
 * --resume and by a sweep before it calls a run complete:
 *   text, mlm     the file data.path: its SHA-256 and size, as `sha256sum FILE` and `stat`;
 *   translation   the four id files the model reads (corpus.h): the SHA-256 of their
 *                 sha256sum listing, `cd DIR && sha256sum train.en.ids train.de.ids
 *                 valid.en.ids valid.de.ids | sha256sum`, and their total size;
 *   random, copy, reverse   nothing read: no identity (sha256 "").
 * A run computes its identity from the very bytes it parsed (data_open); a sweep or --resume
 * reads the files again (data_identity_read) to see whether they still are those bytes.
 */
#ifndef STABILITY_DATA_IDENTITY_H
#define STABILITY_DATA_IDENTITY_H

#include <stddef.h>
#include "config/config.h"
#include "util/sha256.h"

typedef struct {
    char sha256[SHA256_HEX];   /* lowercase hex; "" when the task reads no data */
    unsigned long long bytes;  /* bytes read */
} data_identity_t;

/* The translation corpus' files in the order of the identity (corpus.h's splits and sides). */
#define DATA_CORPUS_FILES 4
extern const char *const DATA_CORPUS_FILE[DATA_CORPUS_FILES];

/* 1 when cfg's task reads data (text, mlm, translation). */
int data_reads_files(const config_t *cfg);

/* The identity of the translation corpus from its files' digests hex[k] and sizes bytes[k]
 * (k in DATA_CORPUS_FILE's order): the SHA-256 of the lines "HEX  NAME\n". 0 or −1 (OOM). */
int data_identity_of_corpus(char hex[][SHA256_HEX], const unsigned long long *bytes,
                            data_identity_t *id);

/* cfg's data identity as the files on disk are now (sha256 "" for a task that reads none).
 * The last few answers are kept, each tied to its files' device, inode, size and change
 * times, so a sweep asking once per run reads a corpus once. 0, or 2 with err "data.path:
 * FILE: cannot open: ..." (1: out of memory). */
int data_identity_read(const config_t *cfg, data_identity_t *id, char *err, size_t errlen);

/* Whether the data cfg reads are still those a file recorded (its data_sha256 attribute
 * stored, NULL when absent, and data_bytes): 1 when they are, or when nothing can be compared
 * (a file written before the attributes existed, a task without data); 0 when they differ,
 * with diff "data.path = P: the run read N bytes (SHA-256 abc…), now M bytes (def…)"; −1 when
 * the data cannot be read now (diff says why). */
int data_identity_same(const config_t *cfg, const char *stored, long long bytes, char *diff,
                       size_t len);

#endif
