"""The result CSVs that more than one module names, each named once here: a chapter writes it
(its module keeps the name as a constant of its own, an alias of the one here, which its code
and its claims use) and another module names it too: chapter 16, which writes Fig. 3's, Fig. 4's
and Tables 3 and 7's CSVs per simulator under the same names so that the same claims decide
them, or the table of what the simulator was given (:mod:`racer_lib.paper.given`). A CSV that
only its chapter names is a constant of that chapter's module alone.
"""

#: Fig. 4 (chapter 07): the runs, the fixed modes' endpoints, the areas above Random's chord.
FRONTIER_RUNS_CSV, FRONTIER_ENDS_CSV = "frontier_runs.csv", "frontier_endpoints.csv"
AREA_CSV = "area_above_random.csv"
#: Table 3 (chapter 09) and Table 7 (chapter 12): the runs.
BETA_RUNS_CSV, LLAMA_RUNS_CSV = "beta_runs.csv", "llama_runs.csv"
#: Fig. 3 (chapter 08): the runs, the matched-spend controls' runs and the two findings.
ABLATION_RUNS_CSV, CONTROL_RUNS_CSV = "ablation_runs.csv", "control_runs.csv"
ABLATION_FINDINGS_CSV, CONTROL_FINDINGS_CSV = "paper_findings.csv", "control_findings.csv"
#: The name of a chapter's findings CSV: the paper's readings it decides (chapters 03, 04 and 08,
#: beside other findings) or its only findings (chapters 10 to 15).
PAPER_FINDINGS_CSV, FINDINGS_CSV = ABLATION_FINDINGS_CSV, "findings.csv"
#: Table 1 (chapter 08), Table 4 (chapter 03), Fig. 2's agreement table (chapters 04 and 13),
#: Table 9 on the training mixture (chapter 11): quantities the simulator is given.
STATISTICS_CSV, DOMAINS_CSV = "dataset_statistics.csv", "benchmark_domains.csv"
AGREEMENT_CSV, SELF_ROUTING_CSV = "agreement_patterns.csv", "self_routing_table.csv"
#: Fig. 2's per-domain table (chapter 04), which Fig. 1's panel (a) reads (chapter 03).
BY_DOMAIN_CSV = "delta_accuracy_by_domain.csv"
#: How each emergent claim's verdict moves over the simulators (chapter 16 writes it, the
#: report reads it).
ROBUSTNESS_CSV = "claim_robustness.csv"
#: The findings CSVs of a chapter (any name with ``findings`` in it), as a glob.
FINDINGS_GLOB = "*findings*.csv"
