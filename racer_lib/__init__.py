"""racer_lib: the library behind the RACER companion book.

A stack of layers that follow the data flow, from a judge record to a figure; each imports only
from the layers below it (an import-linter contract in ``pyproject.toml``, run by ``make lint``):

1. ``records``: what a judge record is and where it comes from (schemas, IO, the simulator,
   sets, embeddings, external sources);
2. ``judging``: how records are made from pairs (prompts and verdicts, backends, runs,
   merging, other tools' outputs);
3. ``routing``: how a router is trained under a budget (KL-DRO, theory, policies, the
   trainer, the router store, baselines, route-then-judge);
4. ``evaluation``: how good a router is and how sure we are (metrics, intervals, tests);
   ``claims`` above it: claims decided on a results folder (rules, statuses, the engine), with
   nothing of the paper;
5. ``paper``: what the paper claims and what this build finds (the paper's numbers, the
   chapter registry, one module per chapter with the claims it tests, and the report);
6. ``book``: how notebooks become the book (the runner, chapter helpers, the page, the
   browser check, the citation).

``errors`` (``RacerError``, the base of every error a user can cause) sits below them all and
``cli`` (the ``racer`` command, also ``python -m racer_lib``) on top.
"""

__version__ = "0.1.0"
