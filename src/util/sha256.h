/* sha256.h — SHA-256 (FIPS 180-4) through OpenSSL's libcrypto (EVP), never by hand: the
 * identity of the data a run reads (data/identity.h). Digests are written as 64 lowercase hex
 * digits and a NUL, as sha256sum prints them. */
#ifndef STABILITY_SHA256_H
#define STABILITY_SHA256_H

#include <stddef.h>

/* Hex digits of a digest, with the NUL. */
#define SHA256_HEX 65

/* A digest being computed (sha256_begin .. sha256_end). */
typedef struct {
    void *ctx;   /* libcrypto's EVP_MD_CTX */
} sha256_t;

/* Start a digest. 0, or −1 (out of memory). */
int sha256_begin(sha256_t *h);

/* Add n bytes of data. */
void sha256_add(sha256_t *h, const void *data, size_t n);

/* Finish: hex gets the digest (SHA256_HEX chars); h is released. 0, or −1 (hex ""). */
int sha256_end(sha256_t *h, char hex[SHA256_HEX]);

/* Release a digest that will not be finished (safe on one never begun or already ended). */
void sha256_abort(sha256_t *h);

/* The digest of data[0..n) in hex. 0, or −1 (out of memory; hex ""). */
int sha256_hex(const void *data, size_t n, char hex[SHA256_HEX]);

#endif
