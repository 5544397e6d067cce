/* sha256.c — SHA-256 by OpenSSL's EVP interface (sha256.h). */
#include <stdio.h>
#include <openssl/evp.h>
#include "util/sha256.h"

int sha256_begin(sha256_t *h)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    h->ctx = c;
    if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1) return 0;
    sha256_abort(h);
    return -1;
}

void sha256_add(sha256_t *h, const void *data, size_t n)
{
    if (h->ctx && n) EVP_DigestUpdate(h->ctx, data, n);
}

int sha256_end(sha256_t *h, char hex[SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    hex[0] = '\0';
    const int ok = h->ctx && EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 32;
    sha256_abort(h);
    if (!ok) return -1;
    for (unsigned int i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

void sha256_abort(sha256_t *h)
{
    EVP_MD_CTX_free(h->ctx);   // NULL is fine
    h->ctx = NULL;
}

int sha256_hex(const void *data, size_t n, char hex[SHA256_HEX])
{
    sha256_t h;
    if (sha256_begin(&h)) { hex[0] = '\0'; return -1; }
    sha256_add(&h, data, n);
    return sha256_end(&h, hex);
}
