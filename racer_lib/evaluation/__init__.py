"""Layer 4, how good a router is and how sure we are.

- ``metrics``: accuracy and realized cost of a policy, the endpoints, Random, the oracle
  frontier, APGR/CPT, results over seeds;
- ``verdicts``: the statistical protocol every finding and claim goes through (replicate seeds,
  one-sided t-tests, TOST, Holm's correction, the three decisions);
- ``intervals``: Wilson and bootstrap intervals, the sign test.
"""
