"""scikit-learn's own estimator checks."""

import warnings

import pytest
from sklearn.utils.estimator_checks import check_estimator

import unmix

# Checks we expect to fail, with the reason (none at present: both estimators pass every
# check of scikit-learn 1.9.1's check_estimator; check_array_api_input is skipped by
# scikit-learn itself unless SCIPY_ARRAY_API is set).
EXPECTED_FAILED = {}


@pytest.mark.parametrize("est", [unmix.FastICA(random_state=0), unmix.Whitener()], ids=type)
def test_check_estimator(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None, expected_failed_checks=EXPECTED_FAILED)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed
    assert sum(r["status"] == "passed" for r in results) > 30
