"""Judge outputs made by other tools, as judge records (:mod:`racer_lib.records.schema`).

A judge record holds, per pair and mode ``a`` (0 = instruct, 1 = reasoning), the verdict, its
correctness ``r(z, a, l) = 1[Phi_a(z) = l]`` and the generated tokens that define the cost
``c(z, a)`` (the paper's records; :mod:`racer_lib.records.schema`). Other tools' outputs give the
verdicts but not our token counts, so tokens are counted from the judge's text with a *named*
tokenizer (:func:`racer_lib.records.llmbar.load_tokenizer`, recorded in a ``tokenizer`` column and
in ``source``). Each mode comes from its own file or evaluator, so one judge's two methods, or two
judges, are paired as the instruct and the reasoning mode. ``racer records import`` writes the
records (atomically, :func:`racer_lib.records.io.write_records`).

**JudgeBench** (``--format judgebench``): an outputs file of JudgeBench's ``run_judge.py``
(``outputs/dataset=judgebench,response_model=...,judge_name=...,judge_model=....jsonl``), one
JSON line per pair: the pair's fields (``pair_id``, ``source``, ``question``,
``response_model``, ``response_A``, ``response_B``, ``label``, read by
:func:`racer_lib.records.judgebench.judgebench_pair`) and ``judgments``, two games: the first
shows the responses in the pair's order, the second swapped. A game holds ``judgment``
(``judge_model``, ``prompt`` and ``response``, the judge's text; a mapping, or the same as a
Python-literal string, read with :func:`ast.literal_eval`, never evaluated) and ``decision``
(``A>B``, ``B>A``, ``A=B`` or null: what JudgeBench's parser read, in the game's own order). The
verdicts are read again from the judge's text by
:func:`racer_lib.judging.prompts.parse_verdict_details`
in the ``arena-hard`` format (the ``[[A>>B]]`` labels); the swapped game's verdict is mapped
back (A <-> B) and the two games combine by JudgeBench's rule
(:func:`racer_lib.judging.merging.combine_orders`): +1 per game naming the preferred response,
-1 per game naming the other, 0 for a tie or no verdict, correct when the sum is positive,
which is JudgeBench's ``compute_final_metrics`` with ``reverse_order`` (its ``utils/metrics.py``;
:func:`judgebench_accuracy`). Tokens: both games' texts (the cost of judging both orders).
Extra columns keep what that metric needs: per mode and order the parsed verdict in the pair's
order (``verdict_<mode>_<order>``, as :func:`racer_lib.judging.merge` writes them), the
arena-hard label as the judge wrote it (``decision_<mode>_<order>``, in the game's order) and
JudgeBench's recorded decision (``judgebench_decision_<mode>_<order>``, "" for null).

**LLMBar** (``--format llmbar``): any folder in LLMBar's layout
(``[Dataset/LLMBar/]<subset>/dataset.json`` and
``<subset>/evaluators/<judge>/<method>/result.json``), its subsets found at any depth and named
as LLMBar names them (:func:`racer_lib.records.llmbar.llmbar_subsets`); by default a judge's
``Vanilla`` method is the instruct mode and ``CoT`` the reasoning mode, as in
:func:`racer_lib.records.llmbar.llmbar_records` (which reads the manifest's files; this reads any
folder).

Errors name the file, the line (JSONL, from 1) or item (JSON list, from 0) and the field
(:class:`racer_lib.records.sources.DataFormatError`). A JSONL file is read once, one line at a
time, keeping of each line only the judge's texts and the pair's identity, and tokens are
counted piece by piece (:func:`racer_lib.records.llmbar.count_tokens`): a runaway judge's 50 MB
text costs a few times its size in memory, not the gigabytes of tokenizing it whole.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import racer_lib.judging.prompts as prompts
from racer_lib.errors import ConfigError, MissingFileError
from racer_lib.judging.merging import combine_orders
from racer_lib.judging.spec import ORDERS
from racer_lib.records import files as rfiles
from racer_lib.records import io as rio
from racer_lib.records import judgebench, llmbar
from racer_lib.records import schema as rec
from racer_lib.records import sources as data

FORMATS = ("judgebench", "llmbar")
#: JudgeBench's decisions (``A>>B`` is recorded as ``A>B``); only these two name a response.
JUDGEBENCH_VERDICTS = {"A>B": "A", "B>A": "B"}
VERDICT_FORMAT = "arena-hard"
PAIR_ID_COLUMNS = ["id", "dataset", "subset", "domain", "label"]
#: JudgeBench's released outputs file in the manifest (source ``judgebench``): claude-3-haiku
#: judging claude-3.5-sonnet's responses with the arena-hard prompt, both orders, 270 pairs.
JUDGEBENCH_OUTPUTS = (
    "outputs/dataset=judgebench,response_model=claude-3-5-sonnet-20240620,"
    "judge_name=arena_hard,judge_model=claude-3-haiku-20240307.jsonl"
)


def _flip(verdict: str) -> str:
    """A verdict of the swapped game in the pair's own order (A <-> B)."""
    return {"A": "B", "B": "A"}.get(verdict, verdict)


def judgebench_decision(label: str) -> str:
    """An arena-hard label as JudgeBench records it: ``A>>B`` -> ``A>B`` (its ``ArenaHard``
    judge strips ``>>``); "" stays "" (no verdict, JudgeBench's null)."""
    return label.replace(">>", ">").strip()


# ----------------------------------------------------------------------------------------
# JudgeBench outputs


def fetch_judgebench_outputs(manifest: data.Manifest | None = None) -> Path:
    """The local path of :data:`JUDGEBENCH_OUTPUTS`, fetched and sha256-checked by
    :func:`racer_lib.records.sources.fetch` (the mirror's copy in place, or the cache's)."""
    manifest = manifest if manifest is not None else data.load_manifest()
    return data.fetch(manifest.get("judgebench", JUDGEBENCH_OUTPUTS))


def _judge_text(path: Path, where: str, field: str, judgment) -> dict:
    """A game's ``judgment`` as a mapping (a Python-literal string is read, never evaluated)."""
    if isinstance(judgment, str):
        try:
            judgment = ast.literal_eval(judgment)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise data.DataFormatError(
                path, field, f"not a mapping nor its Python literal ({exc})", where
            ) from None
    if not isinstance(judgment, dict):
        raise data.DataFormatError(
            path, field, f"expected a mapping, got {type(judgment).__name__}", where
        )
    if not isinstance(judgment.get("response"), str):
        raise data.DataFormatError(path, f"{field}.response", "missing judge's text", where)
    if (inside := rfiles.lone_surrogate(judgment)) is not None:
        raise data.DataFormatError(path, f"{field}.{inside}", rfiles.LONE_SURROGATE, where)
    return judgment


def read_judgebench_outputs(path: str | os.PathLike) -> pd.DataFrame:
    """One JudgeBench outputs file: one row per pair, both games' texts and recorded decisions.

    Columns: the pair's ``id`` (``judgebench/<pair_id>``, as
    :func:`racer_lib.records.judgebench.judgebench_pairs`), ``dataset``, ``subset`` (the response
    model), ``domain``, ``label`` (1 = response A preferred), ``line`` (in the file, from 1),
    ``judge_model``, and per order (``original``, ``swapped``) ``text_<order>`` (the judge's
    text) and ``judgebench_decision_<order>`` (as recorded, "" for null).
    """
    path = Path(path)
    rows: list[dict] = []
    for n, item in judgebench.jsonl_objects(path, "JudgeBench outputs file"):
        where = f"line {n}"
        games = item.get("judgments")
        if not isinstance(games, list) or len(games) != 2:
            got = len(games) if isinstance(games, list) else type(games).__name__
            raise data.DataFormatError(
                path,
                "judgments",
                f"expected two games (the pair's order, then swapped), got {got}",
                where,
            )
        row: dict = {"line": n}
        for k, (order, game) in enumerate(zip(ORDERS, games, strict=True)):
            field = f"judgments[{k}]"
            if not isinstance(game, dict):
                raise data.DataFormatError(
                    path, field, f"expected a mapping, got {type(game).__name__}", where
                )
            judgment = _judge_text(path, where, f"{field}.judgment", game.get("judgment"))
            decision = game.get("decision")
            if decision is not None and not isinstance(decision, str):
                raise data.DataFormatError(
                    path,
                    f"{field}.decision",
                    f"{decision!r} is not a decision (A>B, B>A, A=B or null)",
                    where,
                )
            row[f"text_{order}"] = judgment["response"]
            row[f"judgebench_decision_{order}"] = decision or ""
            row.setdefault("judge_model", str(judgment.get("judge_model") or ""))
            game["judgment"] = judgment = None  # the judge's text is kept once, in the row
        pair = judgebench.judgebench_pair(path, n, item)  # the pair's fields, checked
        rows.append({key: pair[key] for key in PAIR_ID_COLUMNS} | row)
        item = games = None
    if not rows:
        raise data.DataFormatError(path, "(json)", "no pairs (an empty file)")
    out = pd.DataFrame(rows)
    dup = out["id"].duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        first = int(out["line"][out["id"] == out["id"].iloc[i]].iloc[0])
        raise data.DataFormatError(
            path, "pair_id", f"duplicate pair, first at line {first}", f"line {out['line'].iloc[i]}"
        )
    return out


def _aligned(games: pd.DataFrame, base: pd.DataFrame, path: Path, base_path: Path) -> pd.DataFrame:
    """``games`` in ``base``'s pair order; both files must hold the same pairs and labels."""
    extra = ~games["id"].isin(base["id"])
    if extra.any():
        raise data.DataFormatError(
            path,
            "pair_id",
            f"pair not in {base_path}; both modes must judge the same pairs",
            f"line {games['line'][extra].iloc[0]}",
        )
    missing = ~base["id"].isin(games["id"])
    if missing.any():
        raise data.DataFormatError(
            path,
            "pair_id",
            f"{int(missing.sum())} pair(s) of {base_path} are not here, the first "
            f"{base['id'][missing].iloc[0]!r} (its line {base['line'][missing].iloc[0]}); both "
            "modes must judge the same pairs",
        )
    games = games.set_index("id").loc[base["id"]].reset_index()
    differs = games["label"].to_numpy() != base["label"].to_numpy()
    if differs.any():
        i = int(np.flatnonzero(differs)[0])
        raise data.DataFormatError(
            path,
            "label",
            f"differs from the label of {games['id'].iloc[i]!r} in {base_path} "
            f"(line {base['line'].iloc[i]})",
            f"line {games['line'].iloc[i]}",
        )
    return games


def _finish(
    out: pd.DataFrame, judge: str, source: str, tokenizer_name: str, extra: list[str], file: str
) -> pd.DataFrame:
    """The common columns, the records' column order, validated."""
    out["split"] = "all"
    out["judge"] = judge
    out["source"] = f"release:{source}:tokens={tokenizer_name}"
    out["tokenizer"] = tokenizer_name
    mode_cols = [c for m in rec.MODES for c in rec.mode_columns(m).values()]
    return rec.validate_records(out[rec.ID_COLUMNS + mode_cols + ["tokenizer", *extra]], file=file)


def _judge_name(names: dict[str, str]) -> str:
    """One name for the two modes' judges: ``X`` when both are ``X``, else ``X+Y``."""
    first, second = (names[m] for m in rec.MODES)
    return first if first == second else f"{first}+{second}"


def judgebench_records(
    instruct: str | os.PathLike,
    reasoning: str | os.PathLike,
    judge: str | None = None,
    tokenizer=None,
    tokenizer_name: str = llmbar.TOKENIZER_NAME,
) -> pd.DataFrame:
    """Judge records from two JudgeBench outputs files, one per mode (module docstring).

    The reasoning file must hold the instruct file's pairs with the same labels (in any order);
    rows follow the instruct file. ``judge``: the records' judge name (default: the files'
    judge models, ``X`` or ``X+Y``). Verdicts: each game's text read by
    :func:`racer_lib.judging.prompts.parse_verdict_details` in the ``arena-hard`` format, the two
    games combined by :func:`racer_lib.judging.merging.combine_orders` (JudgeBench's rule); tokens:
    both games' texts counted with ``tokenizer`` (default
    :func:`racer_lib.records.llmbar.load_tokenizer`),
    named ``tokenizer_name``.
    """
    paths = {"instruct": Path(instruct), "reasoning": Path(reasoning)}
    read: dict[Path, pd.DataFrame] = {}
    for p in paths.values():  # one file given for both modes is read once
        if rfiles.real_path(p) not in read:
            read[rfiles.real_path(p)] = read_judgebench_outputs(p)
    base = read[rfiles.real_path(paths["instruct"])]
    games = {
        m: _aligned(read[rfiles.real_path(p)], base, p, paths["instruct"]) for m, p in paths.items()
    }
    tokenizer = tokenizer if tokenizer is not None else llmbar.load_tokenizer()
    out = base[PAIR_ID_COLUMNS].copy()
    preferred = np.where(out["label"] == 1, "A", "B")
    extra: list[str] = []
    for mode in rec.MODES:
        g, cols = games[mode], rec.mode_columns(mode)
        verdicts, tokens = {}, np.zeros(len(g), dtype=np.int64)
        for order in ORDERS:
            texts = g[f"text_{order}"].tolist()
            parsed = [
                prompts.parse_verdict_details(t, verdict_format=VERDICT_FORMAT) for t in texts
            ]
            flip = _flip if order == "swapped" else (lambda v: v)
            verdicts[order] = [flip(p.verdict) for p in parsed]
            out[f"verdict_{mode}_{order}"] = verdicts[order]
            out[f"decision_{mode}_{order}"] = [p.decision for p in parsed]
            out[f"judgebench_decision_{mode}_{order}"] = g[
                f"judgebench_decision_{order}"
            ].to_numpy()
            tokens += np.asarray(llmbar.count_tokens(texts, tokenizer), dtype=np.int64)
            extra += [f"{k}_{mode}_{order}" for k in ("verdict", "decision", "judgebench_decision")]
        verdict = [
            combine_orders(a, b, "judgebench")
            for a, b in zip(verdicts["original"], verdicts["swapped"], strict=True)
        ]
        out[cols["verdict"]] = verdict
        out[cols["correct"]] = np.asarray(verdict) == preferred
        out[cols["tokens"]] = tokens
        out[cols["thinking_tokens"]] = pd.NA
    out["order"] = "both"
    models = {m: str(games[m]["judge_model"].iloc[0]) if len(games[m]) else "" for m in rec.MODES}
    name = judge or _judge_name(models)
    source = f"JudgeBench outputs:{_judge_name(models)}"
    given = dict.fromkeys(str(p) for p in paths.values())  # one file given twice: named once
    file = f"JudgeBench {name} ({', '.join(given)})"
    return _finish(out, name, source, tokenizer_name, ["order", *extra], file)


def judgebench_verdicts(records: pd.DataFrame, mode: str, decisions: str = "recorded") -> list:
    """Per pair, the two games combined by JudgeBench's rule, from JudgeBench's ``recorded``
    decisions (``judgebench_decision_<mode>_<order>``) or the ``parsed`` verdicts."""
    if decisions == "parsed":
        original = records[f"verdict_{mode}_original"]
        swapped = records[f"verdict_{mode}_swapped"]
    elif decisions == "recorded":

        def verdict(d):
            return JUDGEBENCH_VERDICTS.get(d, rec.UNPARSEABLE)

        original = records[f"judgebench_decision_{mode}_original"].map(verdict)
        swapped = records[f"judgebench_decision_{mode}_swapped"].map(verdict).map(_flip)
    else:
        raise ConfigError(f"unknown decisions {decisions!r}; use 'recorded' or 'parsed'")
    return [combine_orders(a, b, "judgebench") for a, b in zip(original, swapped, strict=True)]


def judgebench_accuracy(records: pd.DataFrame, mode: str, decisions: str = "recorded") -> float:
    """JudgeBench's score of one mode in percent (``compute_final_metrics`` with
    ``reverse_order``): the share of pairs whose games sum to a positive score."""
    verdict = np.asarray(judgebench_verdicts(records, mode, decisions))
    return float(100 * np.mean(verdict == np.where(records["label"] == 1, "A", "B")))


def decision_agreement(records: pd.DataFrame, mode: str) -> tuple[int, int]:
    """``(agree, games)``: games whose arena-hard label, as JudgeBench records it
    (:func:`judgebench_decision`), equals JudgeBench's recorded decision (null = no label)."""
    agree = total = 0
    for order in ORDERS:
        ours = records[f"decision_{mode}_{order}"].map(judgebench_decision)
        agree += int((ours == records[f"judgebench_decision_{mode}_{order}"]).sum())
        total += len(records)
    return agree, total


# ----------------------------------------------------------------------------------------
# LLMBar evaluator folders


def _evaluator(spec: str) -> tuple[str, str]:
    parts = spec.strip("/").split("/")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"evaluator {spec!r} is not JUDGE/METHOD (e.g. GPT-4/CoT)")
    return parts[0], parts[1]


def llmbar_folder_records(
    folder: str | os.PathLike,
    judge: str | None = None,
    *,
    instruct: str | None = None,
    reasoning: str | None = None,
    subsets: list[str] | None = None,
    order: str = "original",
    tokenizer=None,
    tokenizer_name: str = llmbar.TOKENIZER_NAME,
) -> pd.DataFrame:
    """Judge records from LLMBar evaluator outputs in ``folder`` (LLMBar's layout).

    ``instruct`` / ``reasoning``: evaluators ``JUDGE/METHOD`` (default ``<judge>/Vanilla`` and
    ``<judge>/CoT``, LLMBar's two methods, as :func:`racer_lib.records.llmbar.llmbar_records`);
    ``subsets``: names of the folder's subsets (:func:`racer_lib.records.llmbar.llmbar_subsets`:
    any folder holding a ``dataset.json``, at any depth; LLMBar's five keep their short names,
    another is named by its path below ``Dataset/LLMBar``, e.g. ``Adversarial/Fresh``;
    default: all of them); each pair's ``domain`` is its subset's
    (:data:`racer_lib.records.llmbar.LLMBAR_DOMAINS`; another subset's is its own name).
    ``order``: ``original`` (``swap = False``) or ``swapped``. Each ``result.json`` is read
    by :func:`racer_lib.records.llmbar.read_llmbar_results` against its ``dataset.json``; tokens:
    the completion text counted with ``tokenizer``, named ``tokenizer_name``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingFileError(f"{folder}: no such folder (an LLMBar folder)")
    if judge is None and (instruct is None or reasoning is None):
        raise ConfigError("name the judge, or both evaluators (instruct and reasoning)")
    specs = {
        "instruct": _evaluator(instruct or f"{judge}/{llmbar.LLMBAR_MODES['instruct']}"),
        "reasoning": _evaluator(reasoning or f"{judge}/{llmbar.LLMBAR_MODES['reasoning']}"),
    }
    if order not in llmbar.LLMBAR_ORDERS:
        raise ConfigError(f"unknown order {order!r}; orders are {', '.join(llmbar.LLMBAR_ORDERS)}")
    found = llmbar.llmbar_subsets(folder, subsets or None)
    tokenizer = tokenizer if tokenizer is not None else llmbar.load_tokenizer()
    frames = []
    for subset, where in found.items():
        pairs = llmbar.read_llmbar_dataset(where / "dataset.json", subset)
        frame = pairs[PAIR_ID_COLUMNS + list(rec.TEXT_FIELDS)].copy()
        for mode, (ev_judge, method) in specs.items():
            path = where / "evaluators" / ev_judge / method / "result.json"
            if not rfiles.present(path):  # a folder or a loop there: the reader names it
                raise MissingFileError(
                    f"{path}: no such file (the {mode} mode's result.json of subset "
                    f"{subset!r}; the subsets found: {', '.join(found)})"
                )
            res = llmbar.read_llmbar_results(path, pairs, order)
            llmbar.set_llmbar_mode(frame, mode, res, pairs, tokenizer)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["order"] = order
    names = {m: "/".join(s) for m, s in specs.items()}
    name = judge or _judge_name({m: s[0] for m, s in specs.items()})
    source = f"LLMBar outputs:{names['instruct']}+{names['reasoning']}"
    # the pair texts ride along, so `racer pairs embed` can embed the records file itself
    extra = ["order", *rec.TEXT_FIELDS]
    return _finish(out, name, source, tokenizer_name, extra, f"LLMBar {name} ({folder})")


# ----------------------------------------------------------------------------------------
# racer records import


@dataclass(frozen=True)
class ImportSpec:
    """One ``racer records import``: the format (:data:`FORMATS`), the records file to write
    (``out``) and where the outputs are: ``instruct`` and ``reasoning`` files (JudgeBench;
    for LLMBar, the method folders of each mode), ``llmbar_dir`` (LLMBar), the ``judge``, the
    LLMBar ``subsets`` and ``order``. Field names are the command's options."""

    format: str
    out: str | os.PathLike
    instruct: str | None = None
    reasoning: str | None = None
    llmbar_dir: str | os.PathLike | None = None
    judge: str | None = None
    subsets: list[str] | None = None
    order: str = "original"


def import_records(
    spec: ImportSpec, *, tokenizer=None, tokenizer_name: str = llmbar.TOKENIZER_NAME
) -> pd.DataFrame:
    """What ``racer records import`` does: read ``spec.format``'s outputs into judge records
    (tokens counted with ``tokenizer``, named ``tokenizer_name``) and write them to
    ``spec.out`` (``.parquet`` or ``.csv``, atomically); return the records."""
    if spec.format == "judgebench":
        if spec.instruct is None or spec.reasoning is None:
            raise ConfigError(
                "--format judgebench needs --instruct FILE and --reasoning FILE (JudgeBench "
                "outputs files, one per mode; the same file twice gives both modes one judge)"
            )
        if spec.llmbar_dir is not None or spec.subsets:
            raise ConfigError("--llmbar-dir and --subset are for --format llmbar")
        records = judgebench_records(
            spec.instruct, spec.reasoning, spec.judge, tokenizer, tokenizer_name
        )
    elif spec.format == "llmbar":
        if spec.llmbar_dir is None:
            raise ConfigError("--format llmbar needs --llmbar-dir (a folder in LLMBar's layout)")
        records = llmbar_folder_records(
            spec.llmbar_dir,
            spec.judge,
            instruct=spec.instruct,
            reasoning=spec.reasoning,
            subsets=spec.subsets,
            order=spec.order,
            tokenizer=tokenizer,
            tokenizer_name=tokenizer_name,
        )
    else:
        raise ConfigError(f"unknown format {spec.format!r}; formats are {', '.join(FORMATS)}")
    rio.write_records(records, spec.out)
    return records
