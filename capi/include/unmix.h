/* unmix C API: whitening over caller-provided buffers. No allocation, no global state.
 *
 * Link capi/target/release/libunmix_capi.a (built by `cargo build --release` in capi/).
 * All matrices are row-major arrays of double. Every function returns an unmix_status.
 */
#ifndef UNMIX_H
#define UNMIX_H

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
    UNMIX_OVERFLOW = 10          /* an intermediate result overflowed: rescale the data */
} unmix_status;

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

#ifdef __cplusplus
}
#endif
#endif /* UNMIX_H */
