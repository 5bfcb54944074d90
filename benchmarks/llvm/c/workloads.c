/* C baselines of benchmarks/llvm/workloads.rev: the same algorithms, written the
 * ordinary (irreversible) way.  run.py compiles this file with
 *     gcc -O3 -march=native -ffp-contract=off -shared -fPIC
 * into a shared library and calls it through ctypes; only the call is timed.
 * -ffp-contract=off keeps a*b+c as two roundings (no FMA contraction), as Numba
 * and the rev backends compute it, so that results agree bit for bit or nearly.
 *
 * All arrays are C ordered, 0-based; integers are int64_t (rev's i64).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* s + sum of squares of x */
double sumsq(double s, const double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

/* n steps of y += sin(x) * 0.5; x += y * 0.01; the final (x, y) in out[0], out[1] */
void recurrence(double x, double y, int64_t n, double *out)
{
    for (int64_t i = 1; i <= n; i++) {
        y += sin(x) * 0.5;
        x += y * 0.01;
    }
    out[0] = x;
    out[1] = y;
}

/* y += A x, A with ncol columns in CSC form (colptr[ncol + 1], rowval, nzval) */
void csc_matvec(double *y, const int64_t *colptr, const int64_t *rowval,
                const double *nzval, const double *x, int64_t ncol)
{
    for (int64_t j = 0; j < ncol; j++) {
        const double xj = x[j];
        for (int64_t p = colptr[j]; p < colptr[j + 1]; p++)
            y[rowval[p]] += nzval[p] * xj;
    }
}

/* ---- GMM objective, after ADBench's C++ reference (gmm.h / defs.h) ---- */

static double arr_max(int64_t n, const double *x)
{
    double m = x[0];
    for (int64_t i = 1; i < n; i++)
        if (m < x[i])
            m = x[i];
    return m;
}

static double logsumexp(int64_t n, const double *x)
{
    double mx = arr_max(n, x);
    double semx = 0.0;
    for (int64_t i = 0; i < n; i++)
        semx += exp(x[i] - mx);
    return log(semx) + mx;
}

static double sqnorm(int64_t n, const double *x)
{
    double r = 0.0;
    for (int64_t i = 0; i < n; i++)
        r += x[i] * x[i];
    return r;
}

/* out = Q x, Q lower triangular with diagonal qdiag and strictly lower part ltri
 * (column-major) */
static void qtimesx(int64_t d, const double *qdiag, const double *ltri,
                    const double *x, double *out)
{
    for (int64_t i = 0; i < d; i++)
        out[i] = qdiag[i] * x[i];
    int64_t idx = 0;
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = i + 1; j < d; j++) {
            out[j] += ltri[idx] * x[i];
            idx++;
        }
}

/* log Gamma(a) summed as SciPy's multigammaln(a, p) */
static double log_gamma_distrib(double a, int64_t p)
{
    double out = 0.25 * (double)(p * (p - 1)) * log(M_PI);
    for (int64_t j = 1; j <= p; j++)
        out += lgamma(a + 0.5 * (double)(1 - j));
    return out;
}

static double log_wishart_prior(int64_t d, int64_t k, double gamma, int64_t m,
                                const double *sum_qs, const double *qdiags,
                                const double *icf)
{
    int64_t icf_sz = d * (d + 1) / 2;
    int64_t nn = d + m + 1;
    double C = (double)(nn * d) * (log(gamma) - 0.5 * log(2.0))
               - log_gamma_distrib(0.5 * (double)nn, d);
    double out = 0.0;
    for (int64_t ik = 0; ik < k; ik++) {
        double frobenius = sqnorm(d, qdiags + ik * d)
                           + sqnorm(icf_sz - d, icf + ik * icf_sz + d);
        out += 0.5 * gamma * gamma * frobenius - (double)m * sum_qs[ik];
    }
    return out - (double)k * C;
}

double gmm_objective(int64_t d, int64_t k, int64_t n, const double *alphas,
                     const double *means, const double *icf, const double *x,
                     double gamma, int64_t m)
{
    int64_t icf_sz = d * (d + 1) / 2;
    double *qdiags = malloc(sizeof(double) * d * k);
    double *sum_qs = malloc(sizeof(double) * k);
    double *xcentered = malloc(sizeof(double) * d);
    double *qxcentered = malloc(sizeof(double) * d);
    double *main_term = malloc(sizeof(double) * k);

    for (int64_t ik = 0; ik < k; ik++) {
        sum_qs[ik] = 0.0;
        for (int64_t id = 0; id < d; id++) {
            double q = icf[ik * icf_sz + id];
            sum_qs[ik] += q;
            qdiags[ik * d + id] = exp(q);
        }
    }

    const double constant = -(double)(n * d) * 0.5 * log(2.0 * M_PI);
    double slse = 0.0;
    for (int64_t ix = 0; ix < n; ix++) {
        for (int64_t ik = 0; ik < k; ik++) {
            for (int64_t id = 0; id < d; id++)
                xcentered[id] = x[ix * d + id] - means[ik * d + id];
            qtimesx(d, qdiags + ik * d, icf + ik * icf_sz + d, xcentered, qxcentered);
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm(d, qxcentered);
        }
        slse += logsumexp(k, main_term);
    }
    double lse_alphas = logsumexp(k, alphas);
    double err = constant + slse - (double)n * lse_alphas
                 + log_wishart_prior(d, k, gamma, m, sum_qs, qdiags, icf);

    free(qdiags);
    free(sum_qs);
    free(xcentered);
    free(qxcentered);
    free(main_term);
    return err;
}
