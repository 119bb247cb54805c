/* unmix C API: whitening, FastICA and the metrics over caller-provided buffers. No allocation,
 * no global state.
 *
 * Link capi/target/release/libunmix_capi.a (built by `cargo build --release` in capi/).
 * All matrices are row-major arrays of double. Every function returns an unmix_status.
 */
#ifndef UNMIX_H
#define UNMIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum unmix_status {
    UNMIX_OK = 0,
    UNMIX_NULL_POINTER = 1,
    UNMIX_NON_FINITE = 2,        /* NaN or infinity; see unmix_report.row / .col */
    UNMIX_TOO_FEW_SAMPLES = 3,   /* fewer than 2 samples (or ddof + 1) */
    UNMIX_DIMENSION_MISMATCH = 4,
    UNMIX_BUFFER_TOO_SMALL = 5,
    UNMIX_INVALID_COMPONENTS = 6, /* k not in 1..=d, or ZCA with k != d */
    UNMIX_RANK_DEFICIENT = 7,    /* k above the effective rank; see unmix_report.effective_rank */
    UNMIX_NO_CONVERGENCE = 8,
    UNMIX_INVALID_PARAMETER = 9,
    UNMIX_OVERFLOW = 10,         /* an intermediate result overflowed: rescale the data */
    UNMIX_SINGLE_CLASS = 11,     /* labels of one class only: AUROC is undefined */
    UNMIX_ZERO_VARIANCE = 12,    /* a constant column: its correlation (MCC) is undefined */
    UNMIX_INFEASIBLE = 13,       /* no complete assignment avoids the forbidden costs */
    UNMIX_RAGGED_ROWS = 14       /* a length that is not a whole number of rows */
} unmix_status;

/* The ABI as the Rust library lays it out: tests/check.c checks the declarations above and
 * below against it (status values, struct sizes and field offsets). */
extern const uint32_t unmix_abi_layout[47];

typedef struct unmix_report {
    uint64_t row;          /* first non-finite value: row */
    size_t col;            /* first non-finite value: column */
    size_t effective_rank; /* eigenvalues above rank_rtol * the largest */
} unmix_report;

#define UNMIX_PCA 0
#define UNMIX_ZCA 1
#define UNMIX_DEFAULT_RANK_RTOL 1e-10

/* Doubles of model storage for d -> k:
 * mean (d) | whitening (k x d) | unwhitening (d x k) | explained variance (k). */
size_t unmix_whiten_model_len(size_t d, size_t k);

/* Doubles of workspace unmix_whiten_fit needs for d -> k. */
size_t unmix_whiten_workspace_len(size_t d, size_t k);

/* Fits on n x d samples x, keeping k components. method: UNMIX_PCA or UNMIX_ZCA; ddof: 0 or 1;
 * rotate != 0 applies a Haar-random rotation drawn from seed. The model is written only on
 * success. report may be NULL. */
unmix_status unmix_whiten_fit(const double *x, size_t n, size_t d, size_t k, int32_t method,
                              uint32_t ddof, int32_t rotate, uint64_t seed, double rank_rtol,
                              double *model, size_t model_len, double *workspace,
                              size_t workspace_len, unmix_report *report);

/* z (n x k) = whitening of x (n x d). */
unmix_status unmix_whiten_transform(const double *model, size_t d, size_t k, const double *x,
                                    size_t n, double *z);

/* x (n x d) = mean + unwhitening * z, for z (n x k). Exact inverse when k == d. */
unmix_status unmix_whiten_inverse_transform(const double *model, size_t d, size_t k,
                                            const double *z, size_t n, double *x);

/* ---- FastICA (scikit-learn's FastICA(whiten_solver="eigh"): same names, defaults, results) ---- */

#define UNMIX_PARALLEL 0
#define UNMIX_DEFLATION 1
#define UNMIX_LOGCOSH 0
#define UNMIX_EXP 1
#define UNMIX_CUBE 2
#define UNMIX_UNIT_VARIANCE 0
#define UNMIX_ARBITRARY_VARIANCE 1
#define UNMIX_WHITEN_NONE 2 /* the data are already white; k must equal d */

typedef struct unmix_fastica_options {
    int32_t algorithm;     /* UNMIX_PARALLEL or UNMIX_DEFLATION */
    int32_t fun;           /* UNMIX_LOGCOSH, UNMIX_EXP or UNMIX_CUBE */
    double alpha;          /* logcosh's alpha, in [1, 2] */
    int32_t whiten;        /* UNMIX_UNIT_VARIANCE, UNMIX_ARBITRARY_VARIANCE or UNMIX_WHITEN_NONE */
    size_t max_iter;       /* at least 1 */
    double tol;            /* >= 0 */
    double rank_rtol;      /* the whitening's relative rank threshold */
    int32_t canonical;     /* nonzero: order by |excess kurtosis|, positive skewness */
    const double *w_init;  /* k x k start matrix, or NULL to draw one from seed */
    uint64_t seed;
} unmix_fastica_options;

typedef struct unmix_fastica_report {
    size_t n_iter;         /* iterations run (deflation: the most any component needed) */
    int32_t converged;     /* 0: max_iter reached; the model is still written (as scikit-learn) */
    double last_change;
    unmix_report error;    /* where a failed fit went wrong, as for unmix_whiten_fit */
} unmix_fastica_report;

/* Fills options with scikit-learn's defaults: parallel, logcosh (alpha 1), unit variance,
 * max_iter 200, tol 1e-4, rank_rtol 1e-10, w_init NULL, seed 0, not canonical. */
unmix_status unmix_fastica_default_options(unmix_fastica_options *options);

/* Doubles of model storage for d -> k: the whitener's layout, then unmixing (k x k),
 * components (k x d) and mixing (d x k). */
size_t unmix_fastica_model_len(size_t d, size_t k);

/* Doubles of workspace unmix_fastica_fit needs for n samples, d -> k: the whitened samples, the
 * model being fitted and the fit's scratch (SIZE_MAX on overflow). */
size_t unmix_fastica_workspace_len(size_t n, size_t d, size_t k);

/* Fits on n x d samples x, keeping k components. options NULL means the defaults. The model is
 * written only on success, which includes iterations that did not converge
 * (report->converged == 0); a failed fit leaves it as it was. report may be NULL. */
unmix_status unmix_fastica_fit(const double *x, size_t n, size_t d, size_t k,
                               const unmix_fastica_options *options, double *model,
                               size_t model_len, double *workspace, size_t workspace_len,
                               unmix_fastica_report *report);

/* Sources s (n x k) of samples x (n x d). */
unmix_status unmix_fastica_transform(const double *model, size_t d, size_t k, const double *x,
                                     size_t n, double *s);

/* Samples x (n x d) = mean + mixing * s, for sources s (n x k). */
unmix_status unmix_fastica_inverse_transform(const double *model, size_t d, size_t k,
                                             const double *s, size_t n, double *x);

/* ---- float (f32) entry points: models and rows in float, for single-precision FPUs ----
 * Model layouts and lengths are those above, counted in floats. Fits sum over samples in double
 * and round their results to float once; transforms compute in float. */

/* As unmix_whiten_fit (the same workspace of doubles, unmix_whiten_workspace_len). */
unmix_status unmix_whiten_fit_f32(const float *x, size_t n, size_t d, size_t k, int32_t method,
                                  uint32_t ddof, int32_t rotate, uint64_t seed, double rank_rtol,
                                  float *model, size_t model_len, double *workspace,
                                  size_t workspace_len, unmix_report *report);
unmix_status unmix_whiten_transform_f32(const float *model, size_t d, size_t k, const float *x,
                                        size_t n, float *z);
unmix_status unmix_whiten_inverse_transform_f32(const float *model, size_t d, size_t k,
                                                const float *z, size_t n, float *x);

/* Floats of scratch (the whitened samples and the model being fitted; SIZE_MAX on overflow) and
 * doubles of workspace unmix_fastica_fit_f32 needs. */
size_t unmix_fastica_scratch_len_f32(size_t n, size_t d, size_t k);
size_t unmix_fastica_workspace_len_f32(size_t d, size_t k);

/* As unmix_fastica_fit, for float samples and model (options->w_init stays double). */
unmix_status unmix_fastica_fit_f32(const float *x, size_t n, size_t d, size_t k,
                                   const unmix_fastica_options *options, float *model,
                                   size_t model_len, float *scratch, size_t scratch_len,
                                   double *workspace, size_t workspace_len,
                                   unmix_fastica_report *report);
unmix_status unmix_fastica_transform_f32(const float *model, size_t d, size_t k, const float *x,
                                         size_t n, float *s);
unmix_status unmix_fastica_inverse_transform_f32(const float *model, size_t d, size_t k,
                                                 const float *s, size_t n, float *x);

/* ---- Metrics ---- */

/* Area under the ROC curve of scores for labels (true = positive), exact with ties (scikit-learn's
 * roc_auc_score). scratch: n uint64_t. */
unmix_status unmix_auroc(const double *scores, const bool *labels, size_t n, uint64_t *scratch,
                         double *result);

/* Hoyer sparsity of d values (e.g. split fractions), in [0, 1]; d >= 2, not all zero. */
unmix_status unmix_hoyer_sparsity(const double *c, size_t d, double *result);

/* Amari index of the unmixing w (k x d) and the true mixing a (d x k), normalised to [0, 1].
 * scratch: k * k doubles. */
unmix_status unmix_amari_index(const double *w, const double *a, size_t k, size_t d,
                               double *scratch, double *result);

#define UNMIX_PEARSON 0
#define UNMIX_SPEARMAN 1

/* Workspace unmix_mcc needs: *f64_len doubles and *size_len size_t. */
unmix_status unmix_mcc_workspace_len(size_t n, size_t d_true, size_t d_est, int32_t method,
                                     size_t *f64_len, size_t *size_len);

/* Mean |correlation| of estimate (n x d_est) against truth (n x d_true) after the matching that
 * maximises it. pairs (d_true) receives the estimated column matched to each true column
 * (SIZE_MAX if none). method: UNMIX_PEARSON or UNMIX_SPEARMAN. */
unmix_status unmix_mcc(const double *truth, size_t d_true, const double *estimate, size_t d_est,
                       size_t n, int32_t method, size_t *pairs, double *ws_f64, size_t ws_f64_len,
                       size_t *ws_size, size_t ws_size_len, double *result);

/* ---- The paper's identifiability measures. */

/* Alignment of B mapped into A: errors normalised by A's diameter (2 x the largest distance of a
 * row of A from its centroid), the ICA efficiency (NaN when permutation == rigid), the diameter,
 * and the unnormalised mean Euclidean errors. */
typedef struct unmix_alignment_result {
    double permutation, rigid, linear, ica;
    double efficiency;
    double diameter;
    double raw_permutation, raw_rigid, raw_linear, raw_ica;
} unmix_alignment_result;

/* Workspace unmix_alignment needs for n rows: *f64_len doubles and *size_len size_t. */
unmix_status unmix_alignment_workspace_len(size_t n, size_t da, size_t db, size_t *f64_len,
                                           size_t *size_len);

/* Alignment errors of b (n x db) mapped into a (n x da): signed permutation, rigid (orthogonal
 * Procrustes), linear (least squares) and ICA (FastICA on each, seeded by random_state). Needs
 * n > max(da, db); a rank-deficient a or b is UNMIX_RANK_DEFICIENT. */
unmix_status unmix_alignment(const double *a, size_t da, const double *b, size_t db, size_t n,
                             uint64_t random_state, double *ws_f64, size_t ws_f64_len,
                             size_t *ws_size, size_t ws_size_len, unmix_alignment_result *result);

/* Workspace unmix_infomec needs for n samples: *f64_len doubles and *size_len size_t. */
unmix_status unmix_infomec_workspace_len(size_t n, size_t *f64_len, size_t *size_len);

/* InfoM and InfoC of latents (n x l) against integer factors (n x f): nmi (f x l) receives the
 * normalised mutual information (kNN estimator, n_neighbors = 10 by convention), active (l) the
 * active latents, *infom / *infoc the scores (NaN where undefined: one factor, or one active
 * latent). A factor with one level is UNMIX_SINGLE_CLASS; all latents constant is
 * UNMIX_INVALID_PARAMETER. */
unmix_status unmix_infomec(const int64_t *factors, size_t f, const double *latents, size_t l,
                           size_t n, size_t n_neighbors, double *nmi, bool *active,
                           double *ws_f64, size_t ws_f64_len, size_t *ws_size, size_t ws_size_len,
                           double *infom, double *infoc);

#ifdef __cplusplus
}
#endif
#endif /* UNMIX_H */
