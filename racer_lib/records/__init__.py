"""Layer 1, what a judge record is and where it comes from.

- :mod:`~racer_lib.records.schema`: the record and pair schemas, validation, the cost unit;
- :mod:`~racer_lib.records.summary`: a judge's two modes summarised per group of pairs;
- :mod:`~racer_lib.records.io`: reading and writing records and embeddings (a public atomic
  write);
- :mod:`~racer_lib.records.pairs`: preference pairs, their reader and validator;
- :mod:`~racer_lib.records.simulate`, :mod:`~racer_lib.records.sets`: simulated judges and the
  chapters' sets (simulated or read from a records folder);
- :mod:`~racer_lib.records.choices`: the simulator's uncalibrated choices, their plausible
  ranges and the two negative controls (the null simulator, the null gain);
- :mod:`~racer_lib.records.embed`, :mod:`~racer_lib.records.encoders`: pair embeddings;
- :mod:`~racer_lib.records.sources` (the manifest, fetching and checking),
  :mod:`~racer_lib.records.judgebench`, :mod:`~racer_lib.records.llmbar`: external data.
"""
