/* fd.c — tier 3's directional finite-difference arithmetic (see fd.h). */
#include "fd.h"

#include <math.h>
#include <stdio.h>

#include "check.h"
#include "estimate.h"

const double fd_steps[4] = {1, -1, 2, -2};

void fd_perturb(double *dst, const double *theta, const double *dir, double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (double)(float)(theta[i] + s * dir[i]);
}

void fd_accumulate(fd_sample *s, const double *g, const double *eg, double *const *pts,
                   size_t n, double h)
{
    for (size_t i = 0; i < n; i++) {
        double d1 = (pts[0][i] - pts[1][i]) / (2 * h);
        double d2 = (pts[2][i] - pts[3][i]) / (4 * h);
        s->an1 += g[i] * d1;
        s->an2 += g[i] * d2;
        s->e_g += fabs(d1) * eg[i];
    }
}

int fd_verdict(const char *layer, const char *shape, const char *what, double h,
               const fd_sample *s)
{
    double fd1 = (s->l[0] - s->l[1]) / (2 * h), fd2 = (s->l[2] - s->l[3]) / (4 * h);
    double trunc = ((fd2 - s->an2) - (fd1 - s->an1)) / 3;
    double tol = 2 * fabs(trunc) + 1.5 * s->e_l / h + s->e_g;
    double err = fabs(fd1 - s->an1);
    int ok = err <= tol;
    char tol_text[48];
    snprintf(tol_text, sizeof tol_text, "%.1e (%.0e rel)", tol,
             fabs(s->an1) > 0 ? tol / fabs(s->an1) : 0);
    chk_table_row(layer, shape, what, err, "-", tol_text, ok);
    if (!ok || !isfinite(fd1))
        printf("    %s: finite difference %.9g, analytic %.9g, truncation estimate %.3g, "
               "rounding %.3g, analytic error %.3g\n",
               what, fd1, s->an1, trunc, 1.5 * s->e_l / h, s->e_g);
    return ok && isfinite(fd1);
}

double fd_step(fn_context *ctx)
{
    const double u_op = est_operand_roundoff(fn_context_math(ctx));
    if (u_op >= CHK_UBF16)
        return 1e-1;
    return u_op > 0x1p-16 ? 5e-2 : 1e-2;
}
