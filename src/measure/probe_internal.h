/* probe_internal.h — what the probe's files share (probe.c, probe_axes.c, probe_measure.c). */
#ifndef STABILITY_PROBE_INTERNAL_H
#define STABILITY_PROBE_INTERNAL_H

#include "measure/probe.h"

/* Names of the sub-layer axis, by sublayer_kind_t: "self", "cross", "ffn". */
extern const char *const PROBE_SUB_NAMES[3];

/* A sub-layer's norm site t = 0 (normK), 1 (normK_out), 2 (normK_inner) (model/tensors.h). */
const norm_site_t *probe_sublayer_site(const sublayer_t *sl, int t);

#endif
