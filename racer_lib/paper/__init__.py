"""Layer 5, what the paper claims and what this build finds.

- ``numbers``: the paper's own numbers, for the labelled comparison columns;
- ``registry``: every chapter stated once (stem, title, artifact, what it reads and requires);
- ``chapters``: one module per chapter, with the recipes, findings, tables and figures only
  that chapter uses;
- ``experiments``, ``shift``, ``plots``: what several chapters share (router sweeps as tidy
  rows, the matched-spend control under a shift, the figure style);
- ``claims``, ``given``, ``effects``, ``claim_data``, ``claim_rules``, ``claims_table``,
  ``engine``, ``report``: the six statuses of findings, what the simulator was given (which
  decides "by construction"), the smallest effect of interest of each quantity a claim is
  decided against, what the rules share (reading a chapter's CSVs, one value per seed), the
  rules that decide a claim, every claim of the paper as data, the engine that decides claims
  on a results folder (the chapters use it, never the report), and the reproduction report;
- ``forest``, ``evidence``: the report's forest plot of the emergent claims, and where each
  claim's evidence is on its chapter's page (the figure or table anchor) with its permalink.
"""
