"""Statistics: warm-up, batch means, confidence intervals, stability verdicts, delay quantiles."""

from dispatchlab.stats.autocorrelation import integrated_autocorrelation_time
from dispatchlab.stats.estimators import (
    Estimate,
    batch_means,
    delay_quantiles,
    mser5_truncation,
    pooled_estimate,
    replication_estimate,
)
from dispatchlab.stats.stability import StabilityVerdict, stability_verdict

__all__ = [
    "Estimate",
    "StabilityVerdict",
    "batch_means",
    "delay_quantiles",
    "integrated_autocorrelation_time",
    "mser5_truncation",
    "pooled_estimate",
    "replication_estimate",
    "stability_verdict",
]
