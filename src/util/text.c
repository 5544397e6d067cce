/* text.c — user text as a terminal shows it (util/text.h). */
#define _XOPEN_SOURCE 700   // wcwidth
#include <locale.h>
#include <string.h>
#include <wchar.h>
#include "util/text.h"

int text_width(const char *s)
{
    static locale_t utf8 = (locale_t)0;
    if (!utf8) utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    const locale_t was = utf8 ? uselocale(utf8) : (locale_t)0;
    int cols = 0;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t n = strlen(s);
    while (n > 0) {
        wchar_t wc;
        const size_t k = utf8 ? mbrtowc(&wc, s, n, &st) : (size_t)-1;
        if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {   // not UTF-8: a byte, a column
            memset(&st, 0, sizeof st);
            cols++;
            s++;
            n--;
            continue;
        }
        const int w = wcwidth(wc);
        cols += w < 0 ? 1 : w;
        s += k;
        n -= k;
    }
    if (utf8) uselocale(was);
    return cols;
}

char *text_mask_controls(char *s)
{
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7F) *p = '?';
    return s;
}
