"""Dual-mode judging: every pair judged in the instruct and the reasoning mode.

Data flow::

    pairs (racer_lib.records.pairs: id, dataset, subset, domain, prompt, response_a, response_b,
    label)
      -> items: one per (pair, task, order); task = instruct | reasoning | self_route,
         order = original (| swapped with both_orders)
      -> chunks of batch_size items of one task -> Backend.generate -> parse_verdict
      -> OUT/shard-I-of-N/part-00000.parquet, part-00001.parquet, ... (atomic, one per chunk)
      -> merge(OUT, pairs) -> judge records (racer_lib.records.schema), one row per pair

The package, one module per stage (everything below is re-exported here, e.g.
``judging.run_judging``):

* :mod:`~racer_lib.judging.spec` — the judge (:class:`JudgeSpec`: ``hybrid``, ``pair`` or
  ``cot``, with the paper's prompts from :mod:`racer_lib.judging.prompts`), per-item seeds,
  shards, and the run (:class:`RunSpec`: every option of ``racer judge run``, the one object
  the stages pass along) with its command lines
  (:func:`command_line`, :func:`command_string`, :func:`merge_command_line`);
* :mod:`~racer_lib.judging.backends` — :class:`VLLMBackend` and :class:`TransformersBackend`
  behind one :class:`Backend` interface; sampling at temperature 0.6 (top-p 1, no top-k), token
  counts from the generated ids, per-item generators (:class:`SeededSampler`);
* :mod:`~racer_lib.judging.gguf` — a GGUF judge (SmolLM2's) de-quantized once and kept in the
  model cache, checked against its manifest before each reuse;
* :mod:`~racer_lib.judging.store` — the shard folders: part files written atomically, the
  ``config.json`` that pins a shard's settings, one writer per shard, :func:`read_shards`;
* :mod:`~racer_lib.judging.run` — :func:`run_judging` (pairs, backends and a :class:`RunSpec`;
  sharded, resumable) and :func:`execute` (one :class:`RunSpec`, what ``racer judge run``
  does);
* :mod:`~racer_lib.judging.merging` — :func:`merge` into judge records after checking that
  every shard and item is there, both orders combined by JudgeBench's rule
  (:func:`combine_orders`).
* :mod:`~racer_lib.judging.outputs` — judge outputs made by other tools (JudgeBench's,
  LLMBar's) read as judge records (``racer records import``); imported by name.

Route, then judge (``racer judge run --router``: each pair judged once, in the mode a saved
router picks) sits a layer up, in :mod:`racer_lib.routing.routed`, since it needs the router.

The pairs themselves (schema, validation, files, ``judgebench`` / ``llmbar``) are
:mod:`racer_lib.records.pairs`; :func:`load_pairs` and :func:`validate_pairs` are re-exported
here. :mod:`.gpu` (the paper's judges on a GPU: what can run on this machine, and the command lines)
is imported by name, not here; what chapter 02 shows of a run (its tables, figure and HTML
views) is that chapter's module, :mod:`racer_lib.paper.chapters.judging`.

**Seeds.** Each item draws from its own seed, derived from ``(seed, pair id, task, order,
attempt)`` (:func:`item_seed`), so neither batching, sharding nor a restart changes what an
item draws. Within one backend and device, an item's output therefore does not depend on the
batch it ran in, up to floating-point differences between padded and unpadded batches (which
can flip a near-tied draw; the tests check that they do not on the tiny model).
"""

from racer_lib.judging.backends import (
    Backend,
    Generation,
    Sampling,
    SeededSampler,
    TransformersBackend,
    VLLMBackend,
    make_backends,
    prompt_opens_thinking,
    smollm2_gguf,
    thinking_boundary,
)
from racer_lib.judging.merging import combine_orders, merge
from racer_lib.judging.run import ShardResult, close_backends, execute, run_judging
from racer_lib.judging.spec import (
    BACKENDS,
    DEFAULT_MAX_TOKENS,
    ORDER_RULES,
    ORDERS,
    SELF_ROUTE_MAX_TOKENS,
    SETUPS,
    TASKS,
    JudgeSpec,
    JudgingError,
    RunSpec,
    command_line,
    command_string,
    item_seed,
    merge_command_line,
    merge_command_string,
    model_identity,
    model_tag,
    parse_shard,
    records_name,
    shard_dir,
    shard_of,
)
from racer_lib.judging.store import (
    CONFIG_NAME,
    PART_COLUMNS,
    PART_RE,
    SHARD_RE,
    pairs_fingerprint,
    read_shards,
)
from racer_lib.records.pairs import load_pairs, validate_pairs

__all__ = [
    "BACKENDS",
    "CONFIG_NAME",
    "DEFAULT_MAX_TOKENS",
    "SETUPS",
    "ORDERS",
    "ORDER_RULES",
    "PART_COLUMNS",
    "PART_RE",
    "SELF_ROUTE_MAX_TOKENS",
    "SHARD_RE",
    "TASKS",
    "Backend",
    "Generation",
    "JudgeSpec",
    "JudgingError",
    "RunSpec",
    "Sampling",
    "SeededSampler",
    "ShardResult",
    "TransformersBackend",
    "VLLMBackend",
    "close_backends",
    "combine_orders",
    "command_line",
    "command_string",
    "execute",
    "item_seed",
    "load_pairs",
    "make_backends",
    "merge",
    "merge_command_line",
    "merge_command_string",
    "model_identity",
    "model_tag",
    "pairs_fingerprint",
    "parse_shard",
    "prompt_opens_thinking",
    "read_shards",
    "records_name",
    "run_judging",
    "shard_dir",
    "shard_of",
    "smollm2_gguf",
    "thinking_boundary",
    "validate_pairs",
]
