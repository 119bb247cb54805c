"""The coefficients of `p` in expm1(r) = r + r^2 p(r), |r| <= ln2 / 2, for `harness/src/vmath.rs`.

Chebyshev fits of degree 10 (f64) and 4 (f32) by mpmath at 50 digits (near-minimax), rounded to
the type. Prints each set with the worst relative error of r + r^2 p(r) against expm1 at 2001
points, the polynomial evaluated exactly: the truncation that the rounding of the evaluation
adds to. Run: python harness/reference/expm1_minimax.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 50
HALF_LN2 = mp.log(2) / 2


def p(r):
    return mp.mpf(1) / 2 if r == 0 else (mp.expm1(r) - r) / r**2


for name, degree, to in (("EXPM1_MINIMAX", 10, float), ("EXPM1_MINIMAX_F32", 4, np.float32)):
    coefficients = [to(float(v)) for v in mp.chebyfit(p, [-HALF_LN2, HALF_LN2], degree + 1)[::-1]]
    worst = 0
    for i in range(2001):
        r = -HALF_LN2 + 2 * HALF_LN2 * i / 2000
        if r == 0:
            continue
        value = r + r * r * sum(mp.mpf(float(c)) * r**k for k, c in enumerate(coefficients))
        worst = max(worst, abs(value / mp.expm1(r) - 1))
    kind = "f64" if to is float else "f32"
    print(f"// worst relative error {float(worst):.2e}")
    print(f"const {name}: [{kind}; {degree + 1}] = [")
    for c in coefficients:
        print(f"    {str(c)},")  # str, not format: the shortest decimal that rounds to the f32
    print("];")
