"""Layer 4, how good a router is and how sure we are.

- ``metrics``: accuracy and realized cost of a policy, the endpoints, Random, the oracle
  frontier, APGR/CPT, results over seeds;
- ``verdicts``: the statistical protocol every finding and claim goes through (replicate seeds,
  one-sided t-tests, TOST, Holm's correction, the three decisions);
- ``intervals``: Wilson and bootstrap intervals, the sign test;
- ``pacing``: a budget pacer against the best static threshold in hindsight, and the numeric
  check of dual descent's bound.

What a user imports is exported here (:data:`__all__`):
``from racer_lib.evaluation import held_out_report, directional``.
"""

from __future__ import annotations

from racer_lib._exports import lazy_exports

#: What a user imports from ``racer_lib.evaluation``, and the module each name lives in. A name
#: is loaded on first use, so importing one module of the package does not import the others
#: (PyTorch for the metrics, statsmodels for the verdicts).
_EXPORTS = {
    "endpoints": "metrics",
    "held_out_lines": "metrics",
    "held_out_report": "metrics",
    "oracle_frontier": "metrics",
    "policy_point": "metrics",
    "random_point": "metrics",
    "routing_metrics": "metrics",
    "Verdict": "verdicts",
    "directional": "verdicts",
    "equivalent": "verdicts",
    "every": "verdicts",
    "most": "verdicts",
    "bootstrap_interval": "intervals",
    "sign_test": "intervals",
    "wilson_interval": "intervals",
    "BoundCheck": "pacing",
    "bound_rows": "pacing",
    "bound_slopes": "pacing",
    "bound_summary": "pacing",
    "hindsight_path": "pacing",
    "matched_decisions": "pacing",
    "recalibrated_threshold": "pacing",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
