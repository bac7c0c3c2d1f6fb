"""JudgeBench (Tan et al., 2024): its pairs, read from the manifest's files.

    data/dataset=judgebench,response_model=<model>.jsonl   (one per response model)
        -> read_judgebench(path)   pairs (racer_lib.records.pairs): id, dataset, subset,
                                   domain, prompt, response_a, response_b, label
        -> judgebench_pairs()      both response models' pairs, every file fetched first
                                   (racer_lib.records.sources)

Label convention (as in :mod:`racer_lib.records.schema`): ``label = 1`` means response A
(JudgeBench's ``response_A``) is preferred. A problem inside a file names the file, the line and
the field (:class:`racer_lib.records.sources.DataFormatError`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pandas as pd

from racer_lib.records import files
from racer_lib.records.schema import PAIR_COLUMNS
from racer_lib.records.sources import (
    DataError,
    DataFormatError,
    Manifest,
    fetch_all,
    manifest_or_default,
)

JUDGEBENCH_RESPONSE_MODELS = ("gpt-4o-2024-05-13", "claude-3-5-sonnet-20240620")
JUDGEBENCH_LABELS = {"A>B": 1, "B>A": 0}
JUDGEBENCH_DOMAINS = {
    "livebench-reasoning": "reasoning",
    "livebench-math": "math",
    "livecodebench": "coding",
}  # and mmlu-pro-* -> knowledge


def _judgebench_domain(source: str) -> str | None:
    """The paper's domain of a JudgeBench ``source`` (``None`` if unknown)."""
    if source.startswith("mmlu-pro-"):
        return "knowledge"
    return JUDGEBENCH_DOMAINS.get(source)


def jsonl_objects(
    path: str | os.PathLike, what: str = "JSONL file"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSONL file, read one line at a
    time (memory: the longest line, never the file); a line that is not a JSON object is an
    error naming the file and the line. The path is checked first as ``what``
    (:func:`racer_lib.records.files.check_file`: a folder, a symlink loop, a FIFO are refused
    in one line); lines end at a newline and are decoded one by one
    (:func:`racer_lib.records.files.decode_utf8`: a byte that is not UTF-8 is named by its
    offset in the file)."""
    path = files.check_file(path, what)
    offset = 0
    with files.reading(path), files.open_binary(path) as fh:
        for n, raw in enumerate(fh, start=1):
            line = files.decode_utf8(path, raw, offset)
            offset += len(raw)
            raw = b""
            if not line.strip():
                continue
            escaped = files.ESCAPED_SURROGATE.search(line) is not None
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(path, "(json)", f"not JSON: {exc}", f"line {n}") from None
            except RecursionError:
                raise DataFormatError(
                    path, "(json)", "not JSON this reader takes: nested too deep", f"line {n}"
                ) from None
            line = ""  # not held while the caller reads the object (a line may be huge)
            if not isinstance(item, dict):
                raise DataFormatError(
                    path, "(json)", f"expected an object, got {type(item).__name__}", f"line {n}"
                )
            if escaped and (where := files.lone_surrogate(item)) is not None:
                raise DataFormatError(path, where, files.LONE_SURROGATE, f"line {n}")
            yield n, item


def read_judgebench(path: str | os.PathLike) -> pd.DataFrame:
    """One JudgeBench JSONL file as pairs (subset = the response model)."""
    rows = [judgebench_pair(path, n, row) for n, row in jsonl_objects(path, "JudgeBench file")]
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def judgebench_pair(path: str | os.PathLike, n: int, row: dict[str, Any]) -> dict[str, Any]:
    """The pair (:data:`PAIR_COLUMNS`) of line ``n`` of a JudgeBench file, checked."""
    where = f"line {n}"
    for key in (
        "pair_id",
        "source",
        "question",
        "response_model",
        "response_A",
        "response_B",
        "label",
    ):
        if row.get(key) is None:
            raise DataFormatError(path, key, "missing value", where)
    if isinstance(row["pair_id"], bool) or not isinstance(row["pair_id"], (str, int)):
        raise DataFormatError(
            path, "pair_id", f"expected a text, got {type(row['pair_id']).__name__}", where
        )
    for key in ("source", "question", "response_model", "response_A", "response_B"):
        if not isinstance(row[key], str):
            raise DataFormatError(
                path, key, f"expected a text, got {type(row[key]).__name__}", where
            )
    if not isinstance(row["label"], str) or row["label"] not in JUDGEBENCH_LABELS:
        raise DataFormatError(
            path,
            "label",
            f"{row['label']!r} is not a JudgeBench label; labels are 'A>B' or 'B>A'",
            where,
        )
    domain = _judgebench_domain(row["source"])
    if domain is None:
        raise DataFormatError(
            path,
            "source",
            f"{row['source']!r} is not a known "
            "JudgeBench source (mmlu-pro-*, livebench-reasoning, "
            "livebench-math, livecodebench)",
            where,
        )
    return {
        "id": f"judgebench/{row['pair_id']}",
        "dataset": "judgebench",
        "subset": row["response_model"],
        "domain": domain,
        "prompt": row["question"],
        "response_a": row["response_A"],
        "response_b": row["response_B"],
        "label": JUDGEBENCH_LABELS[row["label"]],
    }


def judgebench_pairs(manifest: Manifest | None = None) -> pd.DataFrame:
    """JudgeBench's 620 pairs: GPT-4o's 350 then Claude-3.5-Sonnet's 270."""
    manifest = manifest_or_default(manifest)
    files = [
        manifest.get("judgebench", f"data/dataset=judgebench,response_model={model}.jsonl")
        for model in JUDGEBENCH_RESPONSE_MODELS
    ]
    paths = fetch_all(files, progress=False)  # one DataError lists every missing file
    pairs = pd.concat([read_judgebench(p) for p in paths], ignore_index=True)
    dup = pairs["id"].duplicated()
    if dup.any():
        raise DataError(f"JudgeBench: pair id {pairs['id'][dup].iloc[0]!r} occurs twice")
    pairs["label"] = pairs["label"].astype("int8")
    return pairs
