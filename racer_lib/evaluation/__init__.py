"""Layer 4, how good a router is and how sure we are.

- ``metrics``: accuracy and realized cost of a policy, the endpoints, Random, the oracle
  frontier, APGR/CPT, results over seeds;
- ``intervals``: Wilson and bootstrap intervals, the sign test.
"""
