/* arena.h — carving one allocation into arrays (the model's parameter, activation and scratch
 * arenas, docs/design.md §2): the one helper the layouts share. */
#ifndef STABILITY_ARENA_H
#define STABILITY_ARENA_H

#include <stddef.h>
#include "util/real.h"

/* The n reals (util/real.h) at *off of base, advancing *off; NULL (only counting) when base is
 * NULL. */
static inline real *arena_take(real *base, size_t *off, size_t n)
{
    real *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

#endif
