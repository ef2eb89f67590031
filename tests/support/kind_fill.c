/* kind_fill.c — the parameter distribution the affine kinds share (kind.h):
 * a weight bounded by wscale / sqrt(in), a bias around boffset, and the
 * abort for a parameter a kind does not know. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"

int gc_fill_affine(const gc_case *c, const char *param, double *a, size_t n, chk_rng *rng)
{
    double bound = c->wscale / sqrt(c->in);
    if (strcmp(param, "weight") == 0)
        chk_fill(a, n, -bound, bound, rng);
    else if (strcmp(param, "bias") == 0)
        chk_fill(a, n, c->boffset - bound, c->boffset + bound, rng);
    else
        return 0;
    return 1;
}

_Noreturn void gc_no_distribution(const char *kind, const char *param)
{
    fprintf(stderr, "gradcheck: %s: no distribution for parameter '%s'\n", kind, param);
    abort();
}
