/* table_apart.c — the items that tell a table's runs apart (table_apart.h). */
#include <string.h>
#include "config/scheme.h"
#include "study/table_apart.h"

void table_apart(const plot_set_t *set, const int *m, int n, const char *const *shown,
                 plot_diff_t *d)
{
    plot_diff(set, m, n, 0, d);
    for (int k = 0; shown[k]; k++) plot_diff_drop(d, shown[k]);
    int apart = 0;   // two runs of one placement and two schemes
    for (int a = 0; a < n && !apart; a++)
        for (int b = 0; b < a && !apart; b++) {
            const config_t *x = &set->runs[m[a]].cfg, *y = &set->runs[m[b]].cfg;
            char sx[32], sy[32];
            scheme_name(x, sx, sizeof sx);
            scheme_name(y, sy, sizeof sy);
            apart = x->model.placement == y->model.placement && strcmp(sx, sy);
        }
    if (!apart) plot_diff_drop(d, "scheme");
}
