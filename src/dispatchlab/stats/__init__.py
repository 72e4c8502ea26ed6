"""Statistics: warm-up, batch means, confidence intervals, stability verdicts, delay quantiles."""

from dispatchlab.stats.estimators import (
    Estimate,
    batch_means,
    delay_quantiles,
    mser5_truncation,
    replication_estimate,
)
from dispatchlab.stats.stability import StabilityVerdict, stability_verdict

__all__ = [
    "Estimate",
    "StabilityVerdict",
    "batch_means",
    "delay_quantiles",
    "mser5_truncation",
    "replication_estimate",
    "stability_verdict",
]
