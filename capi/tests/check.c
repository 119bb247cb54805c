/* Links libunmix_capi.a and checks real results: whitened data have identity covariance, the
 * inverse restores the input, and bad input gives the documented status. Static buffers only:
 * this program must not need malloc, and CI checks that it imports none. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "unmix.h"

#define N 2000
#define D 5

static double x[N * D], z[N * D], back[N * D];
static double model[2 * D * D + 2 * D];
static double workspace[4096];
static int passed, failed;

static void check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAILED: %s\n", what);
    }
}

static uint64_t state = 88172645463325252ull;
static double uniform(void) { /* xorshift64: deterministic test data */
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (double)(state >> 11) / 9007199254740992.0 - 0.5;
}

static double max_cov_error(const double *m, size_t n, size_t k) {
    double mean[D] = {0}, worst = 0;
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < k; i++) mean[i] += m[r * k + i] / (double)n;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < k; j++) {
            double c = 0;
            for (size_t r = 0; r < n; r++) c += (m[r * k + i] - mean[i]) * (m[r * k + j] - mean[j]);
            c = c / (double)n - (i == j ? 1.0 : 0.0);
            if (fabs(c) > worst) worst = fabs(c);
        }
    return worst;
}

int main(void) {
    for (size_t r = 0; r < N; r++) {
        double s[D];
        for (size_t i = 0; i < D; i++) s[i] = uniform();
        for (size_t i = 0; i < D; i++) {
            double v = 10.0 * (double)i;
            for (size_t j = 0; j < D; j++) v += s[j] * (i == j ? 2.0 : 0.3 * (double)(i + j) / D);
            x[r * D + i] = v;
        }
    }
    check(unmix_whiten_workspace_len(D, D) <= sizeof workspace / sizeof *workspace, "workspace size");
    check(unmix_whiten_model_len(D, D) == sizeof model / sizeof *model, "model size");

    for (int method = UNMIX_PCA; method <= UNMIX_ZCA; method++) {
        for (int rotate = 0; rotate <= 1; rotate++) {
            unmix_report rep;
            unmix_status st = unmix_whiten_fit(x, N, D, D, method, 0, rotate, 42, UNMIX_DEFAULT_RANK_RTOL,
                                               model, sizeof model / sizeof *model, workspace,
                                               sizeof workspace / sizeof *workspace, &rep);
            check(st == UNMIX_OK && rep.effective_rank == D, "fit");
            check(unmix_whiten_transform(model, D, D, x, N, z) == UNMIX_OK, "transform");
            check(max_cov_error(z, N, D) < 1e-10, "identity covariance");
            check(unmix_whiten_inverse_transform(model, D, D, z, N, back) == UNMIX_OK, "inverse");
            double err = 0;
            for (size_t i = 0; i < N * D; i++) err = fmax(err, fabs(back[i] - x[i]));
            check(err < 1e-10, "inverse restores the input");
        }
    }
    /* Keep 3 of 5 components. */
    unmix_status st = unmix_whiten_fit(x, N, D, 3, UNMIX_PCA, 1, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                                       sizeof model / sizeof *model, workspace,
                                       sizeof workspace / sizeof *workspace, NULL);
    check(st == UNMIX_OK, "fit k = 3");
    check(unmix_whiten_transform(model, D, 3, x, N, z) == UNMIX_OK, "transform k = 3");

    /* Bad input: documented statuses, model untouched. */
    double saved = model[0];
    unmix_report rep;
    x[17 * D + 4] = NAN;
    st = unmix_whiten_fit(x, N, D, 3, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, &rep);
    check(st == UNMIX_NON_FINITE && rep.row == 17 && rep.col == 4, "NaN located");
    check(model[0] == saved, "failed fit leaves the model alone");
    x[17 * D + 4] = 1.0;
    for (size_t r = 0; r < N; r++) x[r * D + 4] = x[r * D + 0] - 2.0 * x[r * D + 1]; /* rank 4 */
    st = unmix_whiten_fit(x, N, D, D, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, &rep);
    check(st == UNMIX_RANK_DEFICIENT && rep.effective_rank == 4, "rank deficiency reported");
    st = unmix_whiten_fit(x, N, D, 0, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, NULL);
    check(st == UNMIX_INVALID_COMPONENTS, "k = 0");
    st = unmix_whiten_fit(x, 1, D, 2, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, NULL);
    check(st == UNMIX_TOO_FEW_SAMPLES, "one sample");
    st = unmix_whiten_fit(x, N, D, 2, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, 10, NULL);
    check(st == UNMIX_BUFFER_TOO_SMALL, "small workspace");
    st = unmix_whiten_fit(NULL, N, D, 2, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, NULL);
    check(st == UNMIX_NULL_POINTER, "null data");
    st = unmix_whiten_fit(x, N, D, 2, 7, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, NULL);
    check(st == UNMIX_INVALID_PARAMETER, "unknown method");

    for (size_t i = 0; i < N * D; i++) x[i] = (i % 7 == 0 ? 3e200 : -1e200) * (double)(i % 5 + 1);
    st = unmix_whiten_fit(x, N, D, 2, UNMIX_PCA, 0, 0, 0, UNMIX_DEFAULT_RANK_RTOL, model,
                          sizeof model / sizeof *model, workspace, sizeof workspace / sizeof *workspace, NULL);
    check(st == UNMIX_OVERFLOW, "overflow reported");

    printf("capi: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
