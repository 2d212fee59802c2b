"""plan.common: the pieces every planner shares."""

import pytest

from envdoctor.errors import UsageError
from envdoctor.plan import common


@pytest.mark.parametrize("text, expected", [
    ("auto", ("auto", None)), (" CPU ", ("cpu", None)), ("mps", ("metal", None)), ("metal", ("metal", None)),
    ("12.8", ("cuda", "12.8")), ("12.8.1", ("cuda", "12.8")), ("12", ("cuda", "12")),
    ("cu128", ("cuda", "12.8")), ("cu118", ("cuda", "11.8")), ("cu130", ("cuda", "13.0")),
    ("cuda12", ("cuda", "12")), ("cu13", ("cuda", "13")),
    ("rocm6.4", ("rocm", "6.4")), ("rocm6.2.4", ("rocm", "6.2.4")),
])
def test_cuda_request(text, expected):
    assert common.cuda_request(text) == expected


@pytest.mark.parametrize("text", ["cuda twelve", "cu1", "rocm", "12.x", "gpu"])
def test_cuda_request_refuses_the_rest(text):
    with pytest.raises(UsageError, match="--cuda"):
        common.cuda_request(text)
