"""Statistics: warm-up, batch means, confidence intervals (with the heavy-traffic floor on
their standard error), stability verdicts, delay quantiles."""

from dispatchlab.stats.autocorrelation import integrated_autocorrelation_time
from dispatchlab.stats.estimators import (
    Estimate,
    batch_means,
    delay_quantiles,
    mser5_truncation,
    pooled_estimate,
    replication_estimate,
    with_standard_error_floor,
)
from dispatchlab.stats.run_stability import StabilityVerdict, stability_verdict
from dispatchlab.stats.standard_error_floor import heavy_traffic_standard_error

__all__ = [
    "Estimate",
    "StabilityVerdict",
    "batch_means",
    "delay_quantiles",
    "heavy_traffic_standard_error",
    "integrated_autocorrelation_time",
    "mser5_truncation",
    "pooled_estimate",
    "replication_estimate",
    "stability_verdict",
    "with_standard_error_floor",
]
