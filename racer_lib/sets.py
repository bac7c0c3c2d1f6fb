"""One judge's set of pairs, simulated or read from a records folder: the chapters' one switch.

The routing chapters take a parameter ``records_dir``. Empty (the default), a set is drawn by
:func:`racer_lib.simulate.simulate`; otherwise it is read by
:func:`racer_lib.records.load_set` from this layout::

    records_dir/<judge>/<set>.parquet             judge records (racer_lib.records schema)
    records_dir/<judge>/<set>.embeddings.parquet  their embeddings, keyed by id

where ``<set>`` is ``training_mix`` (column ``split``: ``train``, ``valid``, ``test``), a
benchmark (``judgebench``, ``rewardbench``, ``rewardbench2``) or a Skywork subset. Read records
are used whole: ``seed``, ``dim`` and ``scale`` only shape a simulation, except ``dim = 0``,
which skips the embeddings either way. The provenance of what comes back follows the records'
``source`` column (:func:`racer_lib.records.provenance`): ``simulated``, or ``generated`` /
``release`` for real records.

:func:`write_set` lays a set out in that folder from ``racer judge-merge`` outputs (one per
split, each merged with ``--split``) and a ``racer embed`` file of the set's pairs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from racer_lib import records as rec
from racer_lib import simulate

LAYOUT = rec.RECORDS_DIR_LAYOUT


def judge_set(judge: str, name: str, *, records_dir: str | os.PathLike = "", seed: int = 0,
              dim: int = 64, scale: float = 1.0) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``(records, embeddings)`` of ``judge`` on set ``name``: read from ``records_dir`` when
    it is given (``records_dir/<judge>/<name>.parquet`` and the embeddings beside it), else
    simulated with ``seed``, ``dim`` and ``scale``. ``dim = 0``: no embeddings (``None``)."""
    if records_dir:
        return rec.load_set(records_dir, judge, name, embeddings=dim != 0)
    return simulate.simulate(judge, name, seed=seed, dim=dim, scale=scale)


def write_set(records_dir: str | os.PathLike, judge: str, name: str,
              parts: Sequence[str | os.PathLike],
              embeddings: str | os.PathLike | None = None) -> Path:
    """Write ``records_dir/<judge>/<name>.parquet`` and its embeddings; return the records path.

    ``parts``: record files, concatenated in order (e.g. the ``racer judge-merge --split S``
    output of each split of the training mixture). ``embeddings``: an embeddings file holding
    at least the records' ids (e.g. ``racer embed`` of the whole set's pairs, shared by every
    judge); by default the embeddings beside each part. The set is then read back with
    :func:`racer_lib.records.load_set`, so a bad layout fails here rather than in a chapter.
    """
    if not parts:
        raise ValueError(f"no record files to write as set {name!r} of judge {judge!r}")
    records = pd.concat([rec.read_records(p) for p in parts], ignore_index=True)
    sources = [Path(embeddings)] if embeddings else [rec.embeddings_path(p) for p in parts]
    embs = []
    for path in sources:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such embeddings file")
        embs.append(rec.read_embeddings(path))
    for path, emb in zip(sources[1:], embs[1:]):
        if (emb.dim, emb.embedder) != (embs[0].dim, embs[0].embedder):
            raise rec.RecordsError(path, "embedding", f"{emb.dim} dimensions from "
                                   f"{emb.embedder!r}, but {sources[0]} has {embs[0].dim} from "
                                   f"{embs[0].embedder!r}")
    pooled = rec.Embeddings(ids=np.concatenate([e.ids for e in embs]),
                            matrix=np.concatenate([e.matrix for e in embs]),
                            embedder=embs[0].embedder)
    index = pd.Index(pooled.ids)
    where = str(sources[0]) if len(sources) == 1 else f"the embeddings beside {len(parts)} parts"
    if not index.is_unique:
        raise rec.RecordsError(where, "id", f"id {index[index.duplicated()][0]!r} is embedded "
                               "twice")
    pos = index.get_indexer(records["id"].to_numpy())
    if (pos < 0).any():
        row = int(np.flatnonzero(pos < 0)[0])
        raise rec.RecordsError(where, "id", f"no embedding for record id "
                               f"{records['id'].iloc[row]!r}", more=int((pos < 0).sum()) - 1)
    path = Path(records_dir) / judge / f"{name}.parquet"
    rec.write_records(records, path)
    rec.write_embeddings(rec.embeddings_path(path), [(records["id"].to_numpy(),
                                                      pooled.matrix[pos])],
                         embedder=pooled.embedder)
    rec.load_set(records_dir, judge, name)
    return path
