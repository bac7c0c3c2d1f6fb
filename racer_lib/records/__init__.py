"""Layer 1, what a judge record is and where it comes from.

- :mod:`~racer_lib.records.schema`: the record and pair schemas, validation, the cost unit;
- :mod:`~racer_lib.records.summary`: a judge's two modes summarised per group of pairs;
- :mod:`~racer_lib.records.io`: reading and writing records and embeddings (a public atomic
  write);
- :mod:`~racer_lib.records.files`: the one check of a path every reader makes before opening
  it (a folder, a symlink loop, a FIFO, text that is not UTF-8: one line each);
- :mod:`~racer_lib.records.pairs`: preference pairs, their reader and validator;
- :mod:`~racer_lib.records.table`: a table of judge outputs in the user's own column names as
  records (``racer records import --format table``), and seeded, stratified splits;
- :mod:`~racer_lib.records.simulate`, :mod:`~racer_lib.records.sets`: simulated judges and the
  chapters' sets (simulated or read from a records folder);
- :mod:`~racer_lib.records.choices`: the simulator's uncalibrated choices, their plausible
  ranges and the two negative controls (the null simulator, the null gain);
- :mod:`~racer_lib.records.embed`, :mod:`~racer_lib.records.encoders`: pair embeddings;
- :mod:`~racer_lib.records.sources` (the manifest, fetching and checking),
  :mod:`~racer_lib.records.judgebench`, :mod:`~racer_lib.records.llmbar`: external data.

What a user imports is exported here (:data:`__all__`):
``from racer_lib.records import load, correct_matrix, token_matrix``.
"""

from __future__ import annotations

from racer_lib._exports import lazy_exports

#: What a user imports from ``racer_lib.records``, and the module each name lives in. A name
#: is loaded on first use, so importing one module of the package does not import the others
#: (the simulator's SciPy, the encoders' models).
_EXPORTS = {
    "Embeddings": "io",
    "align_embeddings": "io",
    "embeddings_path": "io",
    "load": "io",
    "read_embeddings": "io",
    "read_records": "io",
    "write_embeddings": "io",
    "write_records": "io",
    "read_pairs": "pairs",
    "validate_pairs": "pairs",
    "MODES": "schema",
    "CostUnit": "schema",
    "RecordsError": "schema",
    "check_budget": "schema",
    "correct_matrix": "schema",
    "provenance": "schema",
    "token_matrix": "schema",
    "validate_records": "schema",
    "simulate": "simulate",
    "write_simulated": "simulate",
    "embed_file": "embed",
    "embed_pairs": "embed",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
