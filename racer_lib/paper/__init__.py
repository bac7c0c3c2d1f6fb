"""Layer 5, what the paper claims and what this build finds.

- ``numbers``: the paper's own numbers, for the labelled comparison columns;
- ``registry``: every chapter stated once (stem, title, artifact, what it reads and requires);
- ``chapters``: one module per chapter, with the recipes, findings, tables and figures only
  that chapter uses, and the paper's claims it tests (``CLAIMS``, with the CSVs they read as
  named constants);
- ``experiments``, ``shift``, ``plots``, ``files``: what several chapters share (router sweeps
  as tidy rows, the matched-spend control under a shift, the figure style, the result CSVs more
  than one module names);
- ``claims``, ``given``, ``effects``, ``rules``, ``engine``, ``report``: the statuses of the
  chapters' findings, what the simulator was given (the "given" table, which decides "by
  construction"), the smallest effect of interest of each quantity a claim is decided against,
  the paper's own rules (:class:`~racer_lib.paper.rules.HalfCost`, a level on the paper's
  cells), the engine of :mod:`racer_lib.claims` bound to that table (the chapters use it, never
  the report), and the reproduction report, which gathers what the chapters' claims decided.
- ``forest``, ``evidence``: the report's forest plot of the emergent claims, and where each
  claim's evidence is on its chapter's page (the figure or table anchor) with its permalink.
- ``real_null``: the false-positive rate of chapter 14's real-judge rule on a null built from
  LLMBar's released judgments (the router's decisions permuted across the pairs).
"""
