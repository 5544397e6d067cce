/* bleu.h — the packaged scorer and detokeniser, through runtime/bleu.py (docs/paper_training.md):
 * sentencepiece (Debian's python3-sentencepiece) turns ids into text and back, NLTK's
 * corpus_bleu (python3-nltk) scores detokenised text. The helper runs as a child process
 * (util/proc.h, no shell), as gnuplot does for the figures; the script is found beside the
 * program (DIR_OF_EXECUTABLE/runtime/bleu.py). Errors: 1 (the helper failed) with err set. */
#ifndef STABILITY_BLEU_H
#define STABILITY_BLEU_H

#include <stddef.h>

/* BLEU (0–100) of the hypotheses in lines ("LINE<TAB>id id ...\n" each, LINE the 1-based line
 * of the pair's reference in DIR/valid.de) against the corpus DIR's references. 0 or 1. */
int bleu_score(const char *dir, const char *lines, double *bleu, char *err, size_t errlen);

/* Write the text of each line of ids ("id id ...\n") to the file descriptor fd, one
 * detokenised sentence a line, with DIR/spm.model. 0 or 1. */
int bleu_detokenise(const char *dir, const char *ids, int fd, char *err, size_t errlen);

/* The sentencepiece ids of every line of the text file input (malloc'd "id id ...\n" lines,
 * caller frees). 0 or 1. */
int bleu_encode(const char *dir, const char *input, char **ids, char *err, size_t errlen);

/* The vocabulary size of DIR/spm.model in *n. 0, or 1 (missing or unreadable: err). */
int bleu_vocab(const char *dir, long *n, char *err, size_t errlen);

#endif
