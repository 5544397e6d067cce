/* text.h — user text as a terminal shows it: the columns a UTF-8 text takes, for tables padded
 * by what is seen rather than by bytes (a run name "lr_μP" is 6 bytes and 5 columns), and
 * control characters masked before a message echoes a value. */
#ifndef STABILITY_TEXT_H
#define STABILITY_TEXT_H

/* Columns of UTF-8 text s by the C library's wcwidth under C.UTF-8, whatever the locale: a wide
 * (CJK) character 2, a combining mark 0; a byte that is not UTF-8, or an unprintable
 * character, 1. */
int text_width(const char *s);

/* Replace each control character of s (bytes 0x01-0x1F and 0x7F) with '?', in place, as run
 * names are printed (docs/faults.md, "Hostile names"): an escape sequence in a --set value
 * must not reach the terminal. Returns s. */
char *text_mask_controls(char *s);

#endif
