"""One judge's set of pairs, simulated or read from a records folder: the chapters' one switch.

The routing chapters take a parameter ``records_dir``. Empty (the default), a set is drawn by
:func:`racer_lib.records.simulate.simulate`; otherwise it is read by
:func:`load_set` from this layout::

    records_dir/<judge>/<set>.parquet             judge records (racer_lib.records.schema schema)
    records_dir/<judge>/<set>.embeddings.parquet  their embeddings, keyed by id

where ``<set>`` is ``training_mix`` (column ``split``: ``train``, ``valid``, ``test``), a
benchmark (``judgebench``, ``rewardbench``, ``rewardbench2``) or a Skywork subset. Read records
are used whole: ``seed``, ``dim`` and ``scale`` only shape a simulation, except ``dim = 0``,
which skips the embeddings either way. The provenance of what comes back follows the records'
``source`` column (:func:`racer_lib.records.schema.provenance`): ``simulated``, or ``generated`` /
``release`` for real records.

:func:`write_set` lays a set out in that folder from ``racer judge merge`` outputs (one per
split, each merged with ``--split``) and a ``racer pairs embed`` file of the set's pairs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from racer_lib.errors import ConfigError, MissingFileError
from racer_lib.records import files, io, simulate
from racer_lib.records import schema as rec
from racer_lib.records.schema import RecordsError

# ----------------------------------------------------------------------------------------
# A folder of judge records, one sub-folder per judge (the ``records_dir`` of the chapters)

#: The layout :func:`load_set` reads (the ``records_dir`` parameter of the routing chapters).
RECORDS_DIR_LAYOUT = """\
records_dir/<judge>/<set>.parquet             judge records (racer_lib.records.schema schema)
records_dir/<judge>/<set>.embeddings.parquet  their embeddings, keyed by id (records.load)
  <set>: training_mix (column split: train, valid, test), or a benchmark (judgebench,
  rewardbench, rewardbench2) or a Skywork subset (magpie_ultra, wildguardmix, offsetbias, ...);
  every embeddings file of one judge folder has one dimension and one embedder"""
LAYOUT = RECORDS_DIR_LAYOUT
TRAINING_SPLITS = ("train", "valid", "test")


NOT_LISTED = "(outside the repository: not listed)"


def _repository() -> Path:
    """The repository the notebooks run in: the first folder at or above the working folder
    holding ``notebooks/`` and ``profiles/`` (else the working folder itself)."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "notebooks").is_dir() and (folder / "profiles").is_dir():
            return folder
    return here


def _listing(folder: Path, pattern: str = "*") -> str:
    """``holds a, b/`` (what ``folder`` holds), for an error message; never the contents of
    a folder outside the repository (the message may reach a notebook, and the book): there,
    :data:`NOT_LISTED`."""
    try:
        where = folder.resolve()  # a symbolic link counts where it leads
    except (OSError, RuntimeError):
        return NOT_LISTED
    root = _repository()
    if where != root and root not in where.parents:
        return NOT_LISTED
    names = sorted(
        p.name + ("/" if p.is_dir() else "")
        for p in folder.glob(pattern)
        if not p.name.startswith(".")
    )
    return f"holds {', '.join(names)}" if names else "is empty"


def _embeddings_meta(path: Path) -> tuple[int | None, str]:
    """Dimension and embedder of an embeddings file, from its schema alone (no data read)."""
    schema = pq.read_schema(path)
    meta = schema.metadata or {}
    field = schema.field("embedding") if "embedding" in schema.names else None
    dim = getattr(field.type, "list_size", None) if field is not None else None
    return dim, meta.get(b"embedder", b"").decode()


def load_set(
    records_dir: str | os.PathLike, judge: str, name: str, *, embeddings: bool = True
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Read one judge's set of records (and its embeddings) from a records folder.

    Layout (:data:`RECORDS_DIR_LAYOUT`)::

        records_dir/<judge>/<set>.parquet             judge records (the records schema)
        records_dir/<judge>/<set>.embeddings.parquet  their embeddings, keyed by id

    ``<set>`` is ``training_mix`` (whose ``split`` column must hold ``train``, ``valid`` and
    ``test``), a benchmark (``judgebench``, ``rewardbench``, ``rewardbench2``) or a Skywork
    subset name. ``racer judge run`` + ``racer judge merge`` write the records, ``racer pairs
    embed`` the embeddings (``racer simulator generate`` writes both, for a simulated judge).

    Returns ``(records, matrix)`` like :func:`racer_lib.records.io.load` (``matrix`` is
    ``None`` with ``embeddings=False``). Raises :class:`racer_lib.errors.MissingFileError` (a
    :class:`FileNotFoundError`) naming the missing file, the expected layout and what the folder
    holds; :class:`RecordsError` when the set holds several
    judges, when the training mixture lacks a split, or when the set's embeddings differ in
    dimension or embedder from another embeddings file of the same judge folder (a router
    trained on one set is applied to the others; the message names both files). An embeddings
    file that does not name its embedder is not compared by embedder.
    """
    path = _set_path(Path(records_dir), judge, name)
    records = io.read_records(path)
    _check_set_records(records, path, name)
    if not embeddings:
        return records, None
    epath = io.embeddings_path(path)
    if not files.present(epath):  # a folder or a loop there: the reader names it
        raise MissingFileError(
            f"{epath}: no embeddings beside {path} (make them with "
            f"`racer pairs embed PAIRS --out {epath}`); expected layout:\n{RECORDS_DIR_LAYOUT}"
        )
    emb = io.read_embeddings(epath)
    _check_same_embedder(emb, epath)
    return records, io.align_embeddings(records, emb, epath, path)


def _set_path(root: Path, judge: str, name: str) -> Path:
    """``root/<judge>/<name>.parquet``; a :class:`MissingFileError` naming the layout and what
    the folder holds where the folder or the file is missing."""
    folder = root / judge
    path = folder / f"{name}.parquet"
    layout = f"expected layout:\n{RECORDS_DIR_LAYOUT}"
    if not root.is_dir():
        raise MissingFileError(f"{root}: no such records folder; {layout}")
    if not folder.is_dir():
        raise MissingFileError(
            f"{folder}: no records of judge {judge!r}; the folder {root} {_listing(root)}; {layout}"
        )
    if not files.present(path):
        raise MissingFileError(
            f"{path}: no such records file (set {name!r} of judge {judge!r}); the folder "
            f"{folder} {_listing(folder)}; {layout}"
        )
    return path


def _check_set_records(records: pd.DataFrame, path: Path, name: str) -> None:
    """One judge per set; the training mixture holds every split of :data:`TRAINING_SPLITS`."""
    judges = sorted(records["judge"].unique())
    if len(judges) > 1:
        raise RecordsError(
            path,
            "judge",
            f"records of several judges ({', '.join(judges)}); "
            f"{path.parent} must hold the records of one judge",
        )
    if name == "training_mix":
        missing = [s for s in TRAINING_SPLITS if s not in set(records["split"])]
        if missing:
            holds = ", ".join(sorted(set(records["split"])))
            raise RecordsError(
                path,
                "split",
                f"no {', '.join(map(repr, missing))} pairs; the "
                "training mixture's split column needs "
                f"{', '.join(TRAINING_SPLITS)} (it holds {holds})",
            )


def _check_same_embedder(emb: io.Embeddings, epath: Path) -> None:
    """``emb`` (read from ``epath``) has the dimension and embedder of every other embeddings
    file of its judge folder (a router trained on one set is applied to the others)."""
    folder = epath.parent
    for other in sorted(folder.glob("*.embeddings.parquet")):
        if other.name == epath.name:
            continue
        dim, embedder = _embeddings_meta(other)
        if dim is not None and dim != emb.dim:
            raise RecordsError(
                epath,
                "embedding",
                f"{emb.dim} dimensions, but {other} has "
                f"{dim}; every embeddings file of {folder} must have one "
                "dimension (a router trained on one set is applied to the others)",
            )
        if embedder and emb.embedder and embedder != emb.embedder:
            raise RecordsError(
                epath,
                "embedding",
                f"embedder {emb.embedder!r}, but {other} "
                f"comes from {embedder!r}; every embeddings file of {folder} must "
                "come from one embedder (a router trained on one set is applied "
                "to the others)",
            )


def judge_set(
    judge: str,
    name: str,
    *,
    records_dir: str | os.PathLike = "",
    seed: int = 0,
    dim: int = 64,
    scale: float = 1.0,
    simulator: simulate.Simulator | Mapping[str, Any] | None = None,
    split_shares: Sequence[float] = (),
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``(records, embeddings)`` of ``judge`` on set ``name``: read from ``records_dir`` when
    it is given (``records_dir/<judge>/<name>.parquet`` and the embeddings beside it, with the
    files' own split), else simulated with ``seed``, ``dim``, ``scale`` and ``simulator`` (a
    :class:`racer_lib.records.choices.Simulator`, or its knobs as a mapping, e.g. a notebook's
    ``simulator = {"readable": 0.0}``; default the book's) and, when ``split_shares`` (train,
    valid[, test]) are given, split anew by dataset with ``seed``
    (:func:`stratified_split`; empty: the simulator's own split). ``dim = 0``: no embeddings
    (``None``)."""
    if records_dir:
        return load_set(records_dir, judge, name, embeddings=dim != 0)
    records, embeddings = simulate.simulate(
        judge, name, seed=seed, dim=dim, scale=scale, simulator=as_simulator(simulator)
    )
    if len(split_shares):
        records = records.assign(split=stratified_split(records["dataset"], seed, split_shares))
    return records, embeddings


def as_simulator(
    simulator: simulate.Simulator | Mapping[str, Any] | None = None,
) -> simulate.Simulator:
    """A :class:`racer_lib.records.choices.Simulator` from itself, from its knobs (a mapping:
    a notebook's ``simulator`` parameter; an unknown knob is a :class:`ConfigError` naming it)
    or from ``None`` (the book's default)."""
    if simulator is None:
        return simulate.DEFAULT
    if isinstance(simulator, simulate.Simulator):
        return simulator
    known = set(simulate.Simulator.__dataclass_fields__)
    unknown = sorted(set(simulator) - known)
    if unknown:
        raise ConfigError(
            f"unknown simulator knob(s) {', '.join(map(repr, unknown))}; "
            f"choose among {', '.join(sorted(known))}"
        )
    return simulate.Simulator(**dict(simulator))


def write_set(
    records_dir: str | os.PathLike,
    judge: str,
    name: str,
    parts: Sequence[str | os.PathLike],
    embeddings: str | os.PathLike | None = None,
) -> Path:
    """Write ``records_dir/<judge>/<name>.parquet`` and its embeddings; return the records path.

    ``parts``: record files, concatenated in order (e.g. the ``racer judge merge --split S``
    output of each split of the training mixture). ``embeddings``: an embeddings file holding
    at least the records' ids (e.g. ``racer pairs embed`` of the whole set's pairs, shared by every
    judge); by default the embeddings beside each part. The set is then read back with
    :func:`load_set`, so a bad layout fails here rather than in a chapter.
    """
    if not parts:
        raise ConfigError(f"no record files to write as set {name!r} of judge {judge!r}")
    records = pd.concat([io.read_records(p) for p in parts], ignore_index=True)
    sources = [Path(embeddings)] if embeddings else [io.embeddings_path(p) for p in parts]
    embs = []
    for path in sources:
        if not files.present(path):
            raise MissingFileError(f"{path}: no such embeddings file")
        embs.append(io.read_embeddings(path))
    for path, emb in zip(sources[1:], embs[1:]):
        if (emb.dim, emb.embedder) != (embs[0].dim, embs[0].embedder):
            raise RecordsError(
                path,
                "embedding",
                f"{emb.dim} dimensions from "
                f"{emb.embedder!r}, but {sources[0]} has {embs[0].dim} from "
                f"{embs[0].embedder!r}",
            )
    pooled = io.Embeddings(
        ids=np.concatenate([e.ids for e in embs]),
        matrix=np.concatenate([e.matrix for e in embs]),
        embedder=embs[0].embedder,
    )
    index = pd.Index(pooled.ids)
    where = str(sources[0]) if len(sources) == 1 else f"the embeddings beside {len(parts)} parts"
    if not index.is_unique:
        raise RecordsError(where, "id", f"id {index[index.duplicated()][0]!r} is embedded twice")
    pos = index.get_indexer(records["id"].to_numpy())
    if (pos < 0).any():
        row = int(np.flatnonzero(pos < 0)[0])
        raise RecordsError(
            where,
            "id",
            f"no embedding for record id {records['id'].iloc[row]!r}",
            more=int((pos < 0).sum()) - 1,
        )
    path = Path(records_dir) / judge / f"{name}.parquet"
    io.write_records(records, path)
    io.write_embeddings(
        io.embeddings_path(path),
        [(records["id"].to_numpy(), pooled.matrix[pos])],
        embedder=pooled.embedder,
    )
    load_set(records_dir, judge, name)
    return path


# ----------------------------------------------------------------------------------------
# A fresh split of a small set for every seed (the LLMBar routing chapter)

SPLITS = TRAINING_SPLITS  # ("train", "valid", "test")


def cut_points(n: int, shares: Sequence[float]) -> list[int]:
    """Where to cut ``n`` shuffled rows into parts of ``shares``: the cumulative shares times
    ``n``, rounded half up, so the parts always add up to ``n``."""
    return [int(np.floor(s * n + 0.5)) for s in np.cumsum(shares)[:-1]]


def split_rule(
    split_by: str,
    shares: Sequence[float] | None,
    train_groups: Sequence[str],
    order: Sequence[str],
    valid_share: float = 0.25,
) -> tuple[list[float], list[str]]:
    """The ``shares`` and ``test_groups`` of :func:`stratified_split` for a split kind, after
    checking the settings (a :class:`~racer_lib.errors.ConfigError` names the bad one):

    * ``"random"``: every group cut by ``shares`` (train, valid, test; positive, sum 1), no
      fixed test groups;
    * ``"subset"``: the groups of ``train_groups`` (a non-empty proper subset of ``order``)
      cut into train and valid by ``valid_share``; every other group of ``order`` is test.
    """
    if split_by == "random":
        shares = list(shares or ())
        if len(shares) != 3 or min(shares) <= 0 or abs(sum(shares) - 1) > 1e-9:
            raise ConfigError(
                f"split_shares must be three positive shares (train, valid, "
                f"test) summing to 1; got {shares}"
            )
        return shares, []
    if split_by == "subset":
        if not (train_groups and set(train_groups) < set(order)):
            raise ConfigError(
                f"train_subsets must be a non-empty proper subset of "
                f"{', '.join(order)} (the others are the test set); "
                f"got {train_groups}"
            )
        if not 0 < valid_share < 1:
            raise ConfigError(f"the validation share must lie in (0, 1); got {valid_share}")
        return [1 - valid_share, valid_share], [g for g in order if g not in train_groups]
    raise ConfigError(f"split_by must be random or subset, got {split_by!r}")


def stratified_split(
    groups: Sequence[str] | pd.Series,
    seed: int,
    shares: Sequence[float],
    *,
    order: Sequence[str] | None = None,
    test_groups: Sequence[str] = (),
) -> np.ndarray:
    """The split label (``train``, ``valid`` or ``test``) of every row, stratified by group.

    One generator seeded with ``seed`` visits the groups in ``order`` (default: sorted); for
    each group it shuffles the group's rows and cuts them by ``shares`` (two or three shares,
    labelled train, valid, test in turn) at :func:`cut_points`, so every group is split in the
    same proportions. The rows of ``test_groups`` are all ``test`` and draw nothing from the
    generator. A seed and ``order`` therefore always give the same split; rows of a group
    missing from ``order`` are an error.
    """
    groups = np.asarray(groups, dtype=object)
    order = sorted(set(groups)) if order is None else list(order)
    if missing := sorted(set(groups) - set(order)):
        raise ConfigError(f"groups {missing} are not in the split order {order}")
    if not 2 <= len(shares) <= len(SPLITS):
        raise ConfigError(f"need two or three shares (train, valid[, test]); got {shares}")
    rng = np.random.default_rng(seed)
    labels = np.full(len(groups), "", dtype=object)
    for group in order:  # a fixed order, so a seed always gives one split
        idx = np.flatnonzero(groups == group)
        if group in test_groups:
            labels[idx] = "test"
            continue
        parts = np.split(rng.permutation(idx), cut_points(len(idx), shares))
        for name, part in zip(SPLITS, parts, strict=False):
            labels[part] = name
    return labels


def split_overlap(splits: Mapping[int, np.ndarray]) -> float:
    """The test set's size over the training set's (train and validation, both used to choose
    a router), averaged over the splits of :func:`stratified_split` (one label array per
    seed): Nadeau and Bengio's ratio ``n_test / n_train`` that corrects a t-test over seeds
    re-splitting one fixed set of pairs (:func:`racer_lib.evaluation.verdicts.directional`'s
    ``overlap``)."""
    ratios = [
        np.sum(lab == "test") / np.sum(lab != "test") for lab in map(np.asarray, splits.values())
    ]
    return float(np.mean(ratios))


# ----------------------------------------------------------------------------------------
# Record sets of the mode-comparison chapters (Fig. 2 and the self-routing table), simulated
# or read from record files

MIX = "training_mix"
#: The datasets the training mixture is made of; every other dataset is a set of its own.
MIX_DATASETS = tuple(sorted({key[0] for key in simulate.RECIPES[MIX]}))


def set_of(dataset: str) -> str:
    """The set a record of ``dataset`` belongs to: the training mixture, or its own benchmark."""
    return MIX if dataset in MIX_DATASETS else dataset


def benchmark_records(
    judges: Sequence[str],
    benchmarks: Sequence[str],
    *,
    records_paths: Sequence[str | os.PathLike] = (),
    seed: int = 0,
    scale: float = 1.0,
    simulator: simulate.Simulator | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The paired records of Fig. 2: each judge on ``benchmarks``, simulated with ``seed``,
    ``scale`` and ``simulator`` (:func:`as_simulator`); or, with ``records_paths``, the records
    of those files (any judges) whose dataset is one of ``benchmarks``."""
    if records_paths:
        records = pd.concat([io.read_records(p) for p in records_paths], ignore_index=True)
        return records[records["dataset"].isin(benchmarks)]
    sim = as_simulator(simulator)
    return pd.concat(
        [
            simulate.simulate(j, benchmarks, seed=seed, dim=0, scale=scale, simulator=sim)[0]
            for j in judges
        ],
        ignore_index=True,
    )


def self_routing_records(
    judges: Sequence[str],
    benchmarks: Sequence[str],
    *,
    unparseable: str = "reasoning",
    records_paths: Sequence[str | os.PathLike] = (),
    seed: int = 0,
    scale: float = 1.0,
    benchmark_scale: float = 1.0,
    simulator: simulate.Simulator | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The records of the self-routing table with two columns added: ``set`` (the training
    mixture or a benchmark, :func:`set_of`) and ``reason``, the judge's own decision per pair
    (:func:`racer_lib.records.schema.self_route_decisions`, ``unparseable`` answers going to that
    mode; a record without an answer is an error naming its file or simulated set).

    Simulated: each judge on the mixture (``scale``) and on each of ``benchmarks``
    (``benchmark_scale``), in that order, with ``simulator`` (:func:`as_simulator`). Read from
    ``records_paths``: the records of every file whose set is the mixture or one of
    ``benchmarks``; the others are left out, with a line that says how many.
    """
    parts = []
    if records_paths:
        for path in records_paths:
            recs = io.read_records(path)
            recs["reason"] = rec.self_route_decisions(recs, unparseable, file=path)
            parts.append(recs)
        records = pd.concat(parts, ignore_index=True)
        records["set"] = records["dataset"].map(set_of)
        keep = records["set"].isin([MIX, *benchmarks])
        if (~keep).any():
            print(
                f"left out {(~keep).sum():,} records of sets not listed: "
                f"{', '.join(sorted(records.loc[~keep, 'set'].unique()))}"
            )
        return records[keep].reset_index(drop=True)
    sim = as_simulator(simulator)
    for judge in judges:
        named = [
            (MIX, simulate.simulate(judge, MIX, seed=seed, dim=0, scale=scale, simulator=sim)[0])
        ]
        named += [
            (
                bench,
                simulate.simulate(
                    judge, bench, seed=seed, dim=0, scale=benchmark_scale, simulator=sim
                )[0],
            )
            for bench in benchmarks
        ]
        for name, recs in named:
            recs["reason"] = rec.self_route_decisions(
                recs, unparseable, file=f"<simulated {judge}, {name}>"
            )
            recs["set"] = name
            parts.append(recs)
    return pd.concat(parts, ignore_index=True)
