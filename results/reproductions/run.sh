#!/usr/bin/env bash
# Every experiment behind docs/reproductions.md, into results/reproductions/store.sqlite.
# Points are stored as they finish, so an interrupted run resumes where it stopped: rerun
# this script (or name the experiments to run: run.sh jbt-regimes pi-regimes).
#
#   led-fig1 led-fig2 pi-stability          about 5 CPU-minutes together
#   jbt-regimes led-regimes pi-regimes      ε down to 10⁻³, about 5 CPU-minutes
#   *-regimes-deep                          ε = 10⁻⁴, 2·10⁹ slots a point, about 40
#   jbt-regimes-deeper led-regimes-deeper   ε = 10⁻⁴, 4·10⁹ slots a point, about 45
#   jbt-gaps                                few slow servers where JBT's gaps show, about 15
#   jbt-regimes-long led-fig2-long          JIQ at 10⁻³ (2·10⁹ slots), L-JSQ-Push long, about 6
#   led-regimes-long pi-regimes-long        points the regimes left undecided, 10⁹–2·10⁹
#                                           slots each, about 24 + 7
#   led-fig1-slotted                        Fig. 1 in the group's slot model, about 3
#   jbt-poly-long                           r = (1/ε)^1.5 past its relaxation, about 20
#   scd-loads                               SCD and TWF against the herd, about 15
#   scd-dispatchers                         the same at ρ = 0.9 for M = 1, 10, 100, about 1
#   large-system                            N = 10², 10³, 10⁴ at ρ = 0.9, 0.95, about 6
#   large-system-1e5                        N = 10⁵ (M = 10), eight policies, about 24
#   halfin-whitt                            1 − ρ = β/√N, N = 10² … 10⁴, about 1.5
#
# The store is then compacted for committing (the per-point ΣQ histograms and E[Q_n]
# vectors, which no claim reads, are dropped: dispatchlab.experiments.compact; at N = 10⁴
# the vectors are 30 MB), and `make reproductions` (or
# `make docs`) rebuilds the page from it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
DISPATCHLAB="${DISPATCHLAB:-.venv/bin/dispatchlab}"
ALL="led-fig1 led-fig2 pi-stability jbt-regimes led-regimes pi-regimes jbt-regimes-deep
     led-regimes-deep pi-regimes-deep jbt-regimes-deeper led-regimes-deeper jbt-gaps
     jbt-regimes-long led-fig2-long led-regimes-long pi-regimes-long led-fig1-slotted
     jbt-poly-long
     scd-loads scd-dispatchers large-system large-system-1e5 halfin-whitt"
for name in ${*:-$ALL}; do
    "$DISPATCHLAB" experiment "$name" --store results/reproductions/store.sqlite \
        --out "results/reproductions/$name" --no-progress --yes
done
"$(dirname "$DISPATCHLAB")/python" -m dispatchlab.experiments.compact \
    results/reproductions/store.sqlite mean_queues total_queue_distribution
