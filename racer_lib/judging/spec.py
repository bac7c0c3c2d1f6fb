"""The judge and the run: what a ``racer judge run`` is asked to do, and how it spells it.

**Judges** (:class:`JudgeSpec`), by their set-up (how the two modes differ; "mode" itself
always means instruct or reasoning): ``hybrid`` (one model whose thinking is switched by its chat
template, e.g. Qwen3's ``enable_thinking``: off for instruct, on for reasoning), ``pair`` (an
instruct model and a reasoning model), ``cot`` (one model, thinking off in both modes; the
reasoning mode gets the reasoning system prompt plus
:data:`racer_lib.judging.prompts.COT_INSTRUCTION`).
A judge turns a pair into chat messages with the paper's prompts (:meth:`JudgeSpec.messages`,
:mod:`racer_lib.judging.prompts`).

**Seeds and shards.** Each item draws from its own seed, :func:`item_seed` of ``(seed, pair id,
task, order, attempt)``; a pair belongs to shard :func:`shard_of` its id (a hash, independent
of row order), and shard ``(i, n)`` writes to :func:`shard_dir`.

**Runs** (:class:`RunSpec`): every option of ``racer judge run`` as one frozen value, with the
command's defaults. :func:`racer_lib.judging.run.execute` runs one; :func:`command_line` and
:func:`command_string` spell it as the command (the CLI parses that back into the same
:class:`RunSpec`, :meth:`RunSpec.from_namespace`), and :func:`merge_command_line` spells the
``racer judge merge`` that follows, so that no notebook or script composes them by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import racer_lib.judging.prompts as prompts
from racer_lib.errors import ConfigError, RacerError
from racer_lib.records.pairs import dataset_tag

SETUPS = ("hybrid", "pair", "cot")  # how a judge makes its two modes
TASKS = ("instruct", "reasoning", "self_route")  # the two modes, then the self-routing question
ORDERS = ("original", "swapped")
ORDER_RULES = ("judgebench", "strict")
BACKENDS = ("vllm", "transformers")
DECISIONS = ("expected", "sampled")  # route-then-judge's rules (racer_lib.routing.routed)
PACES = ("off", "dual", "cap")  # route-then-judge's pacing (racer_lib.routing.pacing)
DEFAULT_MAX_TOKENS = 4096
SELF_ROUTE_MAX_TOKENS = 16
COMMAND = ("racer", "judge")


class JudgingError(RacerError, ValueError):
    """A judging run or its outputs cannot be used; the message names the shard and ids."""


# ----------------------------------------------------------------------------------------
# The judge


@dataclass(frozen=True)
class JudgeSpec:
    """Which judge, in which modes.

    ``setup``: ``hybrid`` (``model`` with thinking off / on, passed to its chat template as
    ``enable_thinking``), ``pair`` (``model`` is the instruct judge, ``reasoning_model`` the
    reasoning one; no template switch is passed) or ``cot`` (``model`` in both modes with
    thinking off; the reasoning mode is prompted to think step by step). ``judge_name``: the
    judge's name in the records (default: from the model names; :attr:`record_name`).
    ``both_orders``: also judge with the responses swapped. ``self_route``: also ask the
    instruct mode the paper's self-routing question. ``retry``: one JudgeBench follow-up turn
    when an answer has no verdict.
    """

    setup: str
    model: str
    reasoning_model: str | None = None
    judge_name: str | None = None
    both_orders: bool = False
    self_route: bool = False
    retry: bool = False

    def __post_init__(self):
        if self.setup not in SETUPS:
            raise ConfigError(
                f"unknown judge set-up {self.setup!r}; set-ups are {', '.join(SETUPS)}"
            )
        if self.setup == "pair" and not self.reasoning_model:
            raise ConfigError("a pair judge needs reasoning_model (the reasoning mode's model)")
        if self.setup != "pair" and self.reasoning_model:
            raise ConfigError(
                f"reasoning_model is only for pair judges (this one is "
                f"{self.setup!r}: one model in both modes)"
            )

    @property
    def record_name(self) -> str:
        """The judge's name in the records' ``judge`` column: ``judge_name``, else one made
        from the model names."""
        if self.judge_name:
            return self.judge_name
        short = model_identity(self.model).rsplit("/", 1)[-1]
        if self.setup == "pair":
            return short + "+" + model_identity(self.reasoning_model).rsplit("/", 1)[-1]
        return short + ("" if self.setup == "hybrid" else "-cot")

    @property
    def tasks(self) -> tuple[str, ...]:
        return TASKS if self.self_route else TASKS[:2]

    @property
    def orders(self) -> tuple[str, ...]:
        return ORDERS if self.both_orders else ORDERS[:1]

    def model_for(self, task: str) -> str:
        return self.reasoning_model if task == "reasoning" and self.setup == "pair" else self.model

    def chat_template_kwargs(self, task: str) -> dict[str, Any] | None:
        """``enable_thinking`` for hybrid (on for reasoning only) and cot (always off)."""
        if self.setup == "pair":
            return None
        return {"enable_thinking": self.setup == "hybrid" and task == "reasoning"}

    def messages(
        self, task: str, question: str, answer_a: str, answer_b: str
    ) -> list[dict[str, str]]:
        """The chat messages of one item (the paper's prompts; see
        :mod:`racer_lib.judging.prompts`)."""
        if task == "self_route":
            return [
                {
                    "role": "user",
                    "content": prompts.self_routing_prompt(question, answer_a, answer_b),
                }
            ]
        return prompts.judge_messages(
            task, question, answer_a, answer_b, cot=self.setup == "cot" and task == "reasoning"
        )

    def identity(self) -> dict[str, Any]:
        """What the outputs depend on (compared on restart and merge; model paths excluded)."""
        return {
            "setup": self.setup,
            "name": self.record_name,
            "both_orders": self.both_orders,
            "self_route": self.self_route,
            "retry": self.retry,
        }


def model_identity(model: str, gguf_file: str | None = None) -> str:
    """A model's name in records and configs: a hub id as given, a local folder by its name
    (so shards run on machines with other paths still match), plus the GGUF file's name."""
    name = str(model).rstrip("/")
    if os.path.isdir(name) or os.path.isabs(name):
        name = Path(name).name
    return f"{name}/{Path(gguf_file).name}" if gguf_file else name


def model_tag(model: str) -> str:
    """A model's tag in file names: the last part of its name, lower case
    (``Qwen/Qwen3-8B`` -> ``qwen3-8b``)."""
    return str(model).rstrip("/").split("/")[-1].lower()


def records_name(dataset: str | os.PathLike, model: str) -> str:
    """The records file of ``model`` judging ``dataset``: ``<dataset>_<model>.parquet``
    (``judgebench_qwen3-8b.parquet``)."""
    return f"{dataset_tag(dataset)}_{model_tag(model)}.parquet"


def item_seed(seed: int, pair_id: str, task: str, order: str = "original", attempt: int = 0) -> int:
    """The seed of one item's draws: a 63-bit hash of ``(seed, pair id, task, order, attempt)``."""
    key = f"{int(seed)}\0{pair_id}\0{task}\0{order}\0{int(attempt)}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") & (2**63 - 1)


def shard_of(pair_id: str, n_shards: int) -> int:
    """The shard of a pair: its id's sha256 modulo ``n_shards`` (independent of row order)."""
    return int.from_bytes(hashlib.sha256(str(pair_id).encode()).digest()[:8], "big") % n_shards


def parse_shard(text: str) -> tuple[int, int]:
    """``"1/4"`` -> ``(1, 4)`` (shards count from 0)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m or not 0 <= int(m[1]) < int(m[2]):
        raise ConfigError(f"bad shard {text!r}: write I/N with 0 <= I < N, e.g. 0/4")
    return int(m[1]), int(m[2])


def shard_dir(out_dir: str | os.PathLike, shard: tuple[int, int]) -> Path:
    """Where shard ``(i, n)`` of a run writes: ``OUT/shard-I-of-N``."""
    return Path(out_dir) / f"shard-{shard[0]}-of-{shard[1]}"


# ----------------------------------------------------------------------------------------
# The run, and its command lines


@dataclass(frozen=True)
class RunSpec:
    """One ``racer judge run``: the pairs, the judge, the backend, the sampling, the output.

    Field names are the command's options (``max_tokens`` is ``--max-tokens``) and the
    defaults are its defaults. ``dataset``: ``judgebench``, ``llmbar`` or a pairs file (``""``
    for pairs given in memory to :func:`racer_lib.judging.run.run_judging`: none recorded);
    ``out``: the run folder; ``setup``, ``model``, ``reasoning_model``, ``judge_name``,
    ``both_orders``, ``self_route``, ``retry``: the judge (:attr:`judge`); ``shard``: ``(i,
    n)`` or ``"i/n"``; ``limit``: only the first pairs; ``gguf_file``, ``device``, ``dtype``:
    the transformers backend's options, ``tensor_parallel_size``, ``gpu_memory_utilization``,
    ``max_model_len``: vLLM's (:meth:`backend_options`); ``threads``: torch CPU threads
    (0 or ``None`` keeps torch's default). ``router``: a router file, to judge each pair only in
    the mode it picks (``decision``: ``expected`` or ``sampled``; ``embeddings``: the pairs'
    embeddings file, default beside the pairs file or computed; :mod:`.routed`); ``pace``
    (``off``, ``dual``, ``cap``) keeps the router's budget online
    (:class:`racer_lib.routing.pacing.BudgetPacer`, dual step ``eta``; with
    ``cap``, ``slack`` and ``cap_cost``, default the most one reasoning judgment can cost).
    """

    dataset: str
    model: str
    out: Path
    reasoning_model: str | None = None
    backend: str = "transformers"
    setup: str = "hybrid"
    judge_name: str | None = None
    both_orders: bool = False
    self_route: bool = False
    retry: bool = False
    shard: tuple[int, int] = (0, 1)
    limit: int | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.6
    batch_size: int = 16
    seed: int = 0
    gguf_file: str | None = None
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    device: str | None = None
    dtype: str | None = None
    threads: int | None = None
    router: str | None = None
    decision: str = "expected"
    embeddings: str | None = None
    pace: str = "off"
    eta: float = 0.005  # BudgetPacer's default step (tests/test_pacing.py checks)
    slack: float = 0.0
    cap_cost: float | None = None

    def __post_init__(self):
        shard = parse_shard(self.shard) if isinstance(self.shard, str) else tuple(self.shard)
        for name, value in (
            ("dataset", str(self.dataset)),
            ("out", Path(self.out)),
            ("shard", shard),
            ("threads", self.threads or None),
        ):
            object.__setattr__(self, name, value)
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"unknown backend {self.backend!r}; backends are {', '.join(BACKENDS)}"
            )
        if self.gguf_file and self.backend != "transformers":
            raise ConfigError("--gguf-file is for the transformers backend")
        if self.decision not in DECISIONS:
            raise ConfigError(f"unknown decision {self.decision!r}; one of {', '.join(DECISIONS)}")
        if self.pace not in PACES:
            raise ConfigError(f"unknown pacing {self.pace!r}; one of {', '.join(PACES)}")
        if self.pace != "off" and self.router is None:
            raise ConfigError(f"--pace {self.pace} keeps a router's budget: give --router")
        self.judge  # noqa: B018  (a bad judge is refused now, not when the run starts)

    @property
    def judge(self) -> JudgeSpec:
        """The run's judge."""
        return JudgeSpec(
            self.setup,
            self.model,
            reasoning_model=self.reasoning_model,
            judge_name=self.judge_name,
            both_orders=self.both_orders,
            self_route=self.self_route,
            retry=self.retry,
        )

    def backend_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`racer_lib.judging.backends.make_backends`."""
        if self.backend == "vllm":
            options = {
                "tensor_parallel_size": self.tensor_parallel_size,
                "gpu_memory_utilization": self.gpu_memory_utilization,
            }
            return options | ({"max_model_len": self.max_model_len} if self.max_model_len else {})
        return {"gguf_file": self.gguf_file, "device": self.device, "dtype": self.dtype}

    def command_line(self) -> list[str]:
        """``racer judge run ...``: the judge, sampling and output always, the other options
        where they differ from the defaults; ``--out`` last."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out = values.pop("out")
        return [*COMMAND, "run", *_flags(values, _RUN_DEFAULTS, _RUN_ALWAYS), "--out", str(out)]

    def command_string(self) -> str:
        """:meth:`command_line`, shell-quoted: one line to paste into a terminal."""
        return shlex.join(self.command_line())

    @classmethod
    def of_judge(
        cls, judge: JudgeSpec, out: str | os.PathLike, dataset: str = "", **options: Any
    ) -> RunSpec:
        """The run of ``judge`` into ``out`` (other fields: ``options``, else the defaults);
        ``run.judge`` gives ``judge`` back."""
        return cls(
            dataset=dataset,
            model=judge.model,
            out=out,
            setup=judge.setup,
            reasoning_model=judge.reasoning_model,
            judge_name=judge.judge_name,
            both_orders=judge.both_orders,
            self_route=judge.self_route,
            retry=judge.retry,
            **options,
        )

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> RunSpec:
        """The spec of parsed ``racer judge run`` arguments (other attributes are ignored)."""
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


_RUN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunSpec)}
_RUN_ALWAYS = ("dataset", "model", "backend", "setup", "max_tokens", "batch_size", "seed")
_MERGE_DEFAULTS = {"dataset": None, "limit": None, "split": "all", "order_rule": "judgebench"}


def _flags(
    values: Mapping[str, Any], defaults: Mapping[str, Any], always: Collection[str] = ()
) -> list[str]:
    """``--name value`` per option (``--name`` alone for a true flag), skipping ``None``,
    false flags and, unless in ``always``, values equal to their default."""
    argv: list[str] = []
    for name, value in values.items():
        if value is None or value is False or (name not in always and value == defaults.get(name)):
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, tuple):  # a shard
            argv += [flag, "/".join(map(str, value))]
        else:
            argv += [flag, str(value)]
    return argv


def command_line(**options: Any) -> list[str]:
    """The argv of ``racer judge run`` for :class:`RunSpec` ``options``, e.g.
    ``command_line(dataset="judgebench", model="Qwen/Qwen3-8B", out="runs/q8")``."""
    return RunSpec(**options).command_line()


def command_string(**options: Any) -> str:
    """:func:`command_line`, shell-quoted: one line to paste into a terminal."""
    return RunSpec(**options).command_string()


def merge_command_line(run: str | os.PathLike, out: str | os.PathLike, **options: Any) -> list[str]:
    """The argv of ``racer judge merge RUN --out OUT``; ``options`` (``dataset``, ``limit``,
    ``split``, ``order_rule``) where they differ from the defaults."""
    unknown = sorted(set(options) - set(_MERGE_DEFAULTS))
    if unknown:
        raise ConfigError(
            f"unknown merge option(s) {', '.join(unknown)}; options are "
            f"{', '.join(_MERGE_DEFAULTS)}"
        )
    return [*COMMAND, "merge", str(run), "--out", str(out), *_flags(options, _MERGE_DEFAULTS)]


def merge_command_string(run: str | os.PathLike, out: str | os.PathLike, **options: Any) -> str:
    """:func:`merge_command_line`, shell-quoted."""
    return shlex.join(merge_command_line(run, out, **options))
