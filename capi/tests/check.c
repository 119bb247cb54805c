/* Links libunmix_capi.a and checks real results: whitened data have identity covariance, the
 * inverse restores the input, FastICA recovers known independent sources (scored by the C API's
 * own MCC and Amari index too), the metrics match hand-computed values, and bad input gives the
 * documented status. Static buffers only:
 * this program must not need malloc, and CI checks that it imports none. */
#include <math.h>
#include <stddef.h>
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

/* ---- FastICA: three independent sources (Laplace, uniform, two-level) mixed by a fixed matrix. */
#define K 3
static double src[N * K], mixed[N * K], sources[N * K], restored[N * K];
static double fmodel[64], fmodel2[64];
static double fws[N * K + 2048];

static double abs_corr(const double *a, size_t ca, const double *b, size_t cb) {
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    for (size_t r = 0; r < N; r++) ma += a[r * K + ca] / N, mb += b[r * K + cb] / N;
    for (size_t r = 0; r < N; r++) {
        double u = a[r * K + ca] - ma, v = b[r * K + cb] - mb;
        sab += u * v, saa += u * u, sbb += v * v;
    }
    return fabs(sab) / sqrt(saa * sbb);
}

/* Every true source is matched by one estimated source with |correlation| above 0.99. */
static int recovers(const double *est) {
    for (size_t i = 0; i < K; i++) {
        double best = 0;
        for (size_t j = 0; j < K; j++) best = fmax(best, abs_corr(src, i, est, j));
        if (best < 0.99) return 0;
    }
    return 1;
}

static void check_fastica(void) {
    const double a[K][K] = {{1.0, 0.6, -0.3}, {0.4, 1.0, 0.5}, {-0.2, 0.7, 1.0}};
    for (size_t r = 0; r < N; r++) {
        double u = uniform();
        src[r * K + 0] = (u < 0 ? 1.0 : -1.0) * log(1.0 - 2.0 * fabs(u)); /* Laplace */
        src[r * K + 1] = uniform();
        src[r * K + 2] = uniform() < 0 ? -1.0 : 1.0;
        for (size_t i = 0; i < K; i++) {
            double v = 5.0 * (double)i;
            for (size_t j = 0; j < K; j++) v += a[i][j] * src[r * K + j];
            mixed[r * K + i] = v;
        }
    }
    size_t mlen = unmix_fastica_model_len(K, K), wlen = unmix_fastica_workspace_len(N, K, K);
    check(mlen <= sizeof fmodel / sizeof *fmodel, "fastica model size");
    check(wlen <= sizeof fws / sizeof *fws, "fastica workspace size");

    unmix_fastica_options o;
    check(unmix_fastica_default_options(&o) == UNMIX_OK && o.max_iter == 200 && o.tol == 1e-4,
          "fastica defaults");
    o.seed = 7;
    for (int32_t algorithm = UNMIX_PARALLEL; algorithm <= UNMIX_DEFLATION; algorithm++) {
        for (int32_t fun = UNMIX_LOGCOSH; fun <= UNMIX_CUBE; fun++) {
            o.algorithm = algorithm, o.fun = fun, o.tol = 1e-8;
            unmix_fastica_report rep;
            unmix_status st = unmix_fastica_fit(mixed, N, K, K, &o, fmodel, mlen, fws, wlen, &rep);
            check(st == UNMIX_OK && rep.converged && rep.n_iter >= 1, "fastica fit converges");
            check(unmix_fastica_transform(fmodel, K, K, mixed, N, sources) == UNMIX_OK,
                  "fastica transform");
            check(recovers(sources), "fastica recovers the sources");
            check(max_cov_error(sources, N, K) < 1e-8, "unit-variance sources are white");
            check(unmix_fastica_inverse_transform(fmodel, K, K, sources, N, restored) == UNMIX_OK,
                  "fastica inverse transform");
            double err = 0;
            for (size_t i = 0; i < N * K; i++) err = fmax(err, fabs(restored[i] - mixed[i]));
            check(err < 1e-9, "fastica inverse restores the input");
        }
    }
    /* Same input, options and seed: the same bits. NULL options: the defaults. */
    unmix_fastica_default_options(&o);
    check(unmix_fastica_fit(mixed, N, K, K, NULL, fmodel, mlen, fws, wlen, NULL) == UNMIX_OK &&
              unmix_fastica_fit(mixed, N, K, K, &o, fmodel2, mlen, fws, wlen, NULL) == UNMIX_OK &&
              memcmp(fmodel, fmodel2, mlen * sizeof(double)) == 0,
          "fastica is deterministic");
    const double identity[K * K] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    o.w_init = identity;
    check(unmix_fastica_fit(mixed, N, K, K, &o, fmodel, mlen, fws, wlen, NULL) == UNMIX_OK,
          "fastica with w_init");

    /* Non-convergence is reported, not an error. */
    unmix_fastica_default_options(&o);
    o.max_iter = 1, o.tol = 0;
    unmix_fastica_report rep;
    check(unmix_fastica_fit(mixed, N, K, K, &o, fmodel, mlen, fws, wlen, &rep) == UNMIX_OK &&
              !rep.converged && rep.n_iter == 1 && rep.last_change > 0,
          "fastica reports non-convergence");

    /* Bad input. */
    unmix_fastica_default_options(&o);
    o.alpha = 3.0;
    check(unmix_fastica_fit(mixed, N, K, K, &o, fmodel, mlen, fws, wlen, NULL) ==
              UNMIX_INVALID_PARAMETER, "fastica alpha outside [1, 2]");
    unmix_fastica_default_options(&o);
    o.fun = 9;
    check(unmix_fastica_fit(mixed, N, K, K, &o, fmodel, mlen, fws, wlen, NULL) ==
              UNMIX_INVALID_PARAMETER, "fastica unknown contrast");
    check(unmix_fastica_fit(mixed, N, K, K, NULL, fmodel, mlen, fws, N, NULL) ==
              UNMIX_BUFFER_TOO_SMALL, "fastica small workspace");
    check(unmix_fastica_fit(mixed, N, K, K + 1, NULL, fmodel, mlen, fws, wlen, NULL) ==
              UNMIX_INVALID_COMPONENTS, "fastica k > d");
    double kept = mixed[5 * K + 2];
    mixed[5 * K + 2] = INFINITY;
    memcpy(fmodel2, fmodel, sizeof fmodel);
    check(unmix_fastica_fit(mixed, N, K, K, NULL, fmodel, mlen, fws, wlen, &rep) ==
              UNMIX_NON_FINITE && rep.error.row == 5 && rep.error.col == 2,
          "fastica infinity located");
    check(memcmp(fmodel, fmodel2, sizeof fmodel) == 0, "a failed fastica fit leaves the model alone");
    mixed[5 * K + 2] = kept;
    check(unmix_fastica_fit(NULL, N, K, K, NULL, fmodel, mlen, fws, wlen, NULL) == UNMIX_NULL_POINTER,
          "fastica null data");
}

/* ---- float entry points: the same problem in float. */
static float xf[N * K], sf[N * K], back_f[N * K], fmodel_f[64], fmodel_f2[64], scratch_f[N * K + 64];

static void check_f32(void) {
    for (size_t i = 0; i < N * K; i++) xf[i] = (float)mixed[i];
    /* Whitening: the f32 fit rounds the double fit's results once, so it is exactly the double
     * model (fitted on the same float-valued data) rounded to float. */
    static double xd[N * K];
    for (size_t i = 0; i < N * K; i++) xd[i] = (double)xf[i];
    size_t wl = unmix_whiten_model_len(K, K), ww = unmix_whiten_workspace_len(K, K);
    check(unmix_whiten_fit(xd, N, K, K, UNMIX_PCA, 0, 0, 0, 1e-10, fmodel, wl, fws, ww, NULL) ==
              UNMIX_OK &&
              unmix_whiten_fit_f32(xf, N, K, K, UNMIX_PCA, 0, 0, 0, 1e-10, fmodel_f, wl, fws, ww,
                                   NULL) == UNMIX_OK,
          "whiten fit f32");
    int same = 1;
    for (size_t i = 0; i < wl; i++) same &= fmodel_f[i] == (float)fmodel[i];
    check(same, "whiten f32 model == the double model rounded to float");
    check(unmix_whiten_transform_f32(fmodel_f, K, K, xf, N, sf) == UNMIX_OK &&
              unmix_whiten_inverse_transform_f32(fmodel_f, K, K, sf, N, back_f) == UNMIX_OK,
          "whiten transforms f32");
    double err = 0;
    for (size_t i = 0; i < N * K; i++) err = fmax(err, fabs((double)back_f[i] - xf[i]));
    check(err < 1e-4, "whiten f32 inverse restores the input (float rounding)");

    /* FastICA in float against FastICA in double on the same data: the same sources to 1e-3
     * (unit-variance sources; float whitened rows and transforms). */
    size_t mlen = unmix_fastica_model_len(K, K), sl = unmix_fastica_scratch_len_f32(N, K, K),
           wlen = unmix_fastica_workspace_len_f32(K, K);
    check(sl <= sizeof scratch_f / sizeof *scratch_f && wlen <= sizeof fws / sizeof *fws,
          "fastica f32 sizes");
    unmix_fastica_report rep;
    check(unmix_fastica_fit_f32(xf, N, K, K, NULL, fmodel_f, mlen, scratch_f, sl, fws, wlen, &rep) ==
              UNMIX_OK && rep.converged,
          "fastica fit f32");
    check(unmix_fastica_fit(xd, N, K, K, NULL, fmodel, mlen, fws,
                            unmix_fastica_workspace_len(N, K, K), NULL) == UNMIX_OK,
          "fastica fit on the same data in double");
    check(unmix_fastica_transform_f32(fmodel_f, K, K, xf, N, sf) == UNMIX_OK &&
              unmix_fastica_transform(fmodel, K, K, xd, N, sources) == UNMIX_OK,
          "fastica transforms f32 and double");
    err = 0;
    for (size_t i = 0; i < N * K; i++) err = fmax(err, fabs((double)sf[i] - sources[i]));
    check(err < 1e-3, "fastica f32 sources within 1e-3 of double's");
    check(unmix_fastica_inverse_transform_f32(fmodel_f, K, K, sf, N, back_f) == UNMIX_OK,
          "fastica inverse transform f32");

    /* Bad input through the float entry points: each its own status, the model left alone. */
    memcpy(fmodel_f2, fmodel_f, sizeof fmodel_f);
    float kept = xf[7 * K + 1];
    xf[7 * K + 1] = NAN;
    check(unmix_fastica_fit_f32(xf, N, K, K, NULL, fmodel_f, mlen, scratch_f, sl, fws, wlen, &rep) ==
              UNMIX_NON_FINITE && rep.error.row == 7 && rep.error.col == 1,
          "fastica f32 NaN located");
    xf[7 * K + 1] = kept;
    check(unmix_fastica_fit_f32(xf, 2, K, K, NULL, fmodel_f, mlen, scratch_f, sl, fws, wlen, &rep) ==
              UNMIX_RANK_DEFICIENT && rep.error.effective_rank == 1,
          "fastica f32 with fewer samples than components");
    check(unmix_fastica_fit_f32(xf, N, K, K, NULL, fmodel_f, mlen, scratch_f, N, fws, wlen, NULL) ==
              UNMIX_BUFFER_TOO_SMALL, "fastica f32 small scratch");
    check(unmix_fastica_fit_f32(xf, N, K, K, NULL, fmodel_f, mlen, NULL, sl, fws, wlen, NULL) ==
              UNMIX_NULL_POINTER, "fastica f32 null scratch");
    check(unmix_whiten_transform_f32(fmodel_f, K, K, NULL, N, sf) == UNMIX_NULL_POINTER,
          "whiten transform f32 null input");
    check(memcmp(fmodel_f, fmodel_f2, sizeof fmodel_f) == 0,
          "failed f32 fits leave the model alone");
}

/* ---- Metrics. */
static double mcc_f64[1 << 16];
static size_t mcc_size[1 << 14];
static uint64_t auroc_scratch[N];

static void check_metrics(void) {
    /* AUROC: positives score 1 and 3, negatives 2 and 4: a positive is above a negative in 1 of
     * the 4 pairs, 0.25. Then positives 1, 3 against negatives 3, 0: 1 + 1 + a tie's 0.5 of 4. */
    const double s1[4] = {1, 2, 3, 4};
    const bool l1[4] = {true, false, true, false};
    double v = -1;
    check(unmix_auroc(s1, l1, 4, auroc_scratch, &v) == UNMIX_OK && v == 0.25, "auroc");
    const double s2[4] = {1, 3, 3, 0};
    check(unmix_auroc(s2, l1, 4, auroc_scratch, &v) == UNMIX_OK && v == 0.625, "auroc with a tie");
    const bool one_class[4] = {true, true, true, true};
    check(unmix_auroc(s1, one_class, 4, auroc_scratch, &v) == UNMIX_SINGLE_CLASS, "auroc one class");
    check(unmix_auroc(s1, l1, 4, auroc_scratch, NULL) == UNMIX_NULL_POINTER, "auroc null result");

    /* Hoyer: one-hot is 1, uniform is 0; (3, 1, 0, 0): (2 - 4 / sqrt(10)) / (2 - 1). */
    const double onehot[4] = {0, 5, 0, 0}, flat[4] = {2, 2, 2, 2}, some[4] = {3, 1, 0, 0};
    check(unmix_hoyer_sparsity(onehot, 4, &v) == UNMIX_OK && v == 1.0, "hoyer one-hot");
    check(unmix_hoyer_sparsity(flat, 4, &v) == UNMIX_OK && v == 0.0, "hoyer uniform");
    check(unmix_hoyer_sparsity(some, 4, &v) == UNMIX_OK && fabs(v - (2 - 4 / sqrt(10))) < 1e-15,
          "hoyer value");
    check(unmix_hoyer_sparsity(some, 1, &v) == UNMIX_INVALID_COMPONENTS, "hoyer d = 1");

    /* Amari: 0 for W = P D A^-1, and the classic value for W = I, A = [[1, 2], [3, 4]]. */
    double scratch[K * K];
    const double a2[4] = {1, 2, 3, 4}, i2[4] = {1, 0, 0, 1};
    const double w2[4] = {3, -1, 2, -1}; /* rows of A^-1 swapped, scaled by 2 and -1 */
    check(unmix_amari_index(i2, a2, 2, 2, scratch, &v) == UNMIX_OK && fabs(v - 0.5208333333333333) < 1e-15,
          "amari value");
    check(unmix_amari_index(w2, a2, 2, 2, scratch, &v) == UNMIX_OK && fabs(v) < 1e-15,
          "amari of a scaled permuted inverse");

    /* MCC (Pearson) of FastICA's sources against the true ones: above 0.99, one pair per source;
     * the raw mixtures score lower. */
    size_t fl, sl, pairs[K];
    check(unmix_mcc_workspace_len(N, K, K, UNMIX_PEARSON, &fl, &sl) == UNMIX_OK &&
              fl <= sizeof mcc_f64 / sizeof *mcc_f64 && sl <= sizeof mcc_size / sizeof *mcc_size,
          "mcc workspace");
    check(unmix_fastica_fit(mixed, N, K, K, NULL, fmodel, unmix_fastica_model_len(K, K), fws,
                            unmix_fastica_workspace_len(N, K, K), NULL) == UNMIX_OK &&
              unmix_fastica_transform(fmodel, K, K, mixed, N, sources) == UNMIX_OK,
          "fastica for mcc");
    check(unmix_mcc(src, K, sources, K, N, UNMIX_PEARSON, pairs, mcc_f64, fl, mcc_size, sl, &v) ==
                  UNMIX_OK &&
              v > 0.99 && pairs[0] != pairs[1] && pairs[1] != pairs[2] && pairs[0] != pairs[2],
          "mcc of fastica's sources");
    check(unmix_mcc(src, K, mixed, K, N, UNMIX_PEARSON, pairs, mcc_f64, fl, mcc_size, sl, &v) ==
                  UNMIX_OK && v < 0.99,
          "mcc of the mixtures is lower");
    /* MCC (Spearman) is 1 under strictly increasing maps and a permutation, which it reports. */
    for (size_t r = 0; r < N; r++)
        for (size_t j = 0; j < K; j++) {
            double t = src[r * K + (j + 1) % K];
            restored[r * K + j] = t * t * t + 2.0 * t;
        }
    check(unmix_mcc_workspace_len(N, K, K, UNMIX_SPEARMAN, &fl, &sl) == UNMIX_OK &&
              fl <= sizeof mcc_f64 / sizeof *mcc_f64 && sl <= sizeof mcc_size / sizeof *mcc_size,
          "mcc spearman workspace");
    check(unmix_mcc(src, K, restored, K, N, UNMIX_SPEARMAN, pairs, mcc_f64, fl, mcc_size, sl, &v) ==
                  UNMIX_OK && fabs(v - 1.0) < 1e-12 && pairs[0] == 2 && pairs[1] == 0 && pairs[2] == 1,
          "mcc spearman under monotone maps");
    /* Amari of FastICA's unmixing (components, after the mean and whitening) against A. */
    const double a[K * K] = {1.0, 0.6, -0.3, 0.4, 1.0, 0.5, -0.2, 0.7, 1.0};
    const double *components = fmodel + unmix_whiten_model_len(K, K) + K * K;
    check(unmix_amari_index(components, a, K, K, scratch, &v) == UNMIX_OK && v < 0.05,
          "amari of fastica's components");
    check(unmix_mcc(src, K, sources, K, N, 5, pairs, mcc_f64, fl, mcc_size, sl, &v) ==
              UNMIX_INVALID_PARAMETER, "mcc unknown method");
    /* Each error has its own status: a constant column is not an invalid parameter. */
    /* On a copy: the identifiability checks later use the true sources. */
    for (size_t i = 0; i < N * K; i++) restored[i] = i % K == 0 ? 1.0 : src[i];
    check(unmix_mcc(restored, K, sources, K, N, UNMIX_PEARSON, pairs, mcc_f64, fl, mcc_size, sl, &v) ==
              UNMIX_ZERO_VARIANCE, "mcc constant column: UNMIX_ZERO_VARIANCE");
}

/* The header against the Rust definitions: every status value, struct size and field offset. */
static void check_abi(void) {
    const uint32_t expected[47] = {
        UNMIX_OK, UNMIX_NULL_POINTER, UNMIX_NON_FINITE, UNMIX_TOO_FEW_SAMPLES,
        UNMIX_DIMENSION_MISMATCH, UNMIX_BUFFER_TOO_SMALL, UNMIX_INVALID_COMPONENTS,
        UNMIX_RANK_DEFICIENT, UNMIX_NO_CONVERGENCE, UNMIX_INVALID_PARAMETER, UNMIX_OVERFLOW,
        UNMIX_SINGLE_CLASS, UNMIX_ZERO_VARIANCE, UNMIX_INFEASIBLE, UNMIX_RAGGED_ROWS,
        sizeof(unmix_status),
        sizeof(unmix_report), offsetof(unmix_report, row), offsetof(unmix_report, col),
        offsetof(unmix_report, effective_rank),
        sizeof(unmix_fastica_options), offsetof(unmix_fastica_options, algorithm),
        offsetof(unmix_fastica_options, fun), offsetof(unmix_fastica_options, alpha),
        offsetof(unmix_fastica_options, whiten), offsetof(unmix_fastica_options, max_iter),
        offsetof(unmix_fastica_options, tol), offsetof(unmix_fastica_options, rank_rtol),
        offsetof(unmix_fastica_options, canonical), offsetof(unmix_fastica_options, w_init),
        offsetof(unmix_fastica_options, seed),
        sizeof(unmix_fastica_report), offsetof(unmix_fastica_report, n_iter),
        offsetof(unmix_fastica_report, converged), offsetof(unmix_fastica_report, last_change),
        offsetof(unmix_fastica_report, error),
        sizeof(unmix_alignment_result),
        offsetof(unmix_alignment_result, permutation),
        offsetof(unmix_alignment_result, rigid),
        offsetof(unmix_alignment_result, linear),
        offsetof(unmix_alignment_result, ica),
        offsetof(unmix_alignment_result, efficiency),
        offsetof(unmix_alignment_result, diameter),
        offsetof(unmix_alignment_result, raw_permutation),
        offsetof(unmix_alignment_result, raw_rigid),
        offsetof(unmix_alignment_result, raw_linear),
        offsetof(unmix_alignment_result, raw_ica),
    };
    for (size_t i = 0; i < 47; i++) {
        if (unmix_abi_layout[i] != expected[i]) {
            printf("ABI entry %zu: header %u, Rust %u\n", i, (unsigned)expected[i],
                   (unsigned)unmix_abi_layout[i]);
        }
        check(unmix_abi_layout[i] == expected[i], "header matches the Rust layout");
    }
}

/* ---- The paper's identifiability measures. */
static double align_f64[1 << 17];
static size_t align_size[1 << 14];
static int64_t factors[N * 2];
static double nmi_out[2 * K];

static void check_identifiability(void) {
    /* B = the mixtures of A = the sources: linear is exact, ICA nearly so, permutation is not. */
    size_t fl, sl;
    unmix_alignment_result al;
    check(unmix_alignment_workspace_len(N, K, K, &fl, &sl) == UNMIX_OK &&
              fl <= sizeof align_f64 / sizeof *align_f64 && sl <= sizeof align_size / sizeof *align_size,
          "alignment workspace");
    check(unmix_alignment(src, K, mixed, K, N, 0, align_f64, fl, align_size, sl, &al) == UNMIX_OK,
          "alignment");
    check(al.linear < 1e-10 && al.ica < 0.02 && al.permutation > al.rigid && al.rigid > al.linear,
          "alignment errors ordered, ICA recovers the sources");
    /* B is a non-orthogonal linear map of A: ICA beats the rigid map, so efficiency > 100 %. */
    check(al.efficiency > 100.0, "ICA efficiency");
    check(fabs(al.raw_rigid - al.rigid * al.diameter) < 1e-12 * al.raw_rigid, "raw = normalised x diameter");
    check(unmix_alignment(src, K, mixed, K, K, 0, align_f64, fl, align_size, sl, &al) ==
              UNMIX_TOO_FEW_SAMPLES, "alignment needs more samples than dimensions");
    check(unmix_alignment(src, K, mixed, K, N, 0, align_f64, 10, align_size, sl, &al) ==
              UNMIX_BUFFER_TOO_SMALL, "alignment small workspace");
    check(unmix_alignment(src, K, mixed, K, N, 0, align_f64, fl, align_size, sl, NULL) ==
              UNMIX_NULL_POINTER, "alignment null result");

    /* Two factors: the sign of source 0 and of source 2. Latent j = source j. */
    for (size_t r = 0; r < N; r++) {
        factors[r * 2 + 0] = src[r * K + 0] > 0;
        factors[r * 2 + 1] = src[r * K + 2] > 0;
    }
    bool active[K];
    double infom = -1, infoc = -1;
    check(unmix_infomec_workspace_len(N, &fl, &sl) == UNMIX_OK &&
              fl <= sizeof align_f64 / sizeof *align_f64 && sl <= sizeof align_size / sizeof *align_size,
          "infomec workspace");
    check(unmix_infomec(factors, 2, src, K, N, 10, nmi_out, active, align_f64, fl, align_size, sl,
                        &infom, &infoc) == UNMIX_OK,
          "infomec");
    /* Factor 0 is the sign of latent 0, factor 1 a function of the two-level latent 2. */
    check(nmi_out[0 * K + 0] > 0.95 && nmi_out[1 * K + 2] > 0.95 && nmi_out[0 * K + 1] < 0.05,
          "infomec nmi");
    check(active[0] && active[1] && active[2], "infomec active latents");
    check(infom > 0.9 && infom <= 1.0 && infoc > 0.9 && infoc <= 1.0, "infom and infoc");
    for (size_t r = 0; r < N; r++) factors[r * 2 + 1] = 7;
    check(unmix_infomec(factors, 2, src, K, N, 10, nmi_out, active, align_f64, fl, align_size, sl,
                        &infom, &infoc) == UNMIX_SINGLE_CLASS, "infomec single-level factor");
    check(unmix_infomec(factors, 1, src, K, N, 10, nmi_out, active, align_f64, fl, align_size, sl,
                        &infom, &infoc) == UNMIX_OK && isnan(infom), "infom undefined with one factor");
}

int main(void) {
    check_abi();
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
    check(model[0] == saved, "a rank-deficient fit leaves the model alone");
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

    check_fastica();
    check_f32();
    check_metrics();
    check_identifiability();

    printf("capi: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
