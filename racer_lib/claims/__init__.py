"""Layer 4½ (between ``evaluation`` and ``paper``): claims decided on a results folder, the
generic engine below ``paper``.

- ``data``: what the rules share (a quantity's smallest effect of interest, ``Effect``; the
  tolerances; reading a chapter's CSV; one value per replicate seed; a verdict as text);
- ``given``: what a simulator was given and the quantities it fixes, as a mechanism (the
  paper's table is :data:`racer_lib.paper.given.GIVEN`, passed in);
- ``rules``: the rules that decide a claim (difference, equivalence, level, identity, a
  chapter's keyed finding, a reading) and the ``Claim`` that names one;
- ``families``: a claim's per-seed tests kept with their values (how its members join, its
  least favourable nulls), with which a chapter decides a finding and writes it beside it;
- ``statuses``: the six statuses of a claim or finding, from its test's decision;
- ``engine``: deciding a list of claims on a results folder, with the "given" table passed in;
  redrawing a claim's family (its error rates, the seed plan).

The paper's claims are data of its chapters (``CLAIMS`` in each module of
:mod:`racer_lib.paper.chapters`), its effects and numbers :mod:`racer_lib.paper.effects` and
:mod:`racer_lib.paper.numbers`: nothing here knows the paper.
"""
