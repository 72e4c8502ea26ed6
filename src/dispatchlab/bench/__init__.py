"""The benchmarks behind ``dispatchlab bench``: the standard workloads against the C
reference simulator (:mod:`~dispatchlab.bench.workloads`) and the scaling grid in N and M
(:mod:`~dispatchlab.bench.scaling`)."""
