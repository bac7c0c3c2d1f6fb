"""The chapter registry (racer_lib.paper.registry) is the one list of chapters: the notebooks, the
table of contents, the notebooks' titles, the runner's order and the profiles agree with it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from racer_lib.book import build, profiles, scheduling
from racer_lib.paper import registry

ROOT = Path(__file__).resolve().parents[1]


def _h1(stem: str) -> str:
    text = (ROOT / "notebooks" / f"{stem}.md").read_text(encoding="utf-8")
    return next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))


def test_registry_stems_are_the_notebooks_in_order() -> None:
    notebooks = sorted(path.stem for path in (ROOT / "notebooks").glob("*.md"))
    assert list(registry.STEMS) == notebooks
    assert [c.number for c in registry.CHAPTERS] == [
        f"{i:02d}" for i in range(1, len(notebooks) + 1)
    ]


def test_toc_lists_the_chapters_in_registry_order() -> None:
    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text(encoding="utf-8"))
    stems = [build.toc_stem(file) for file in build.toc_files(toc)]
    assert [stem for stem in stems if stem is not None] == list(registry.STEMS)


@pytest.mark.parametrize("chapter", registry.CHAPTERS, ids=lambda c: c.stem)
def test_title_is_the_notebooks_h1(chapter: registry.Chapter) -> None:
    assert chapter.title == _h1(chapter.stem)
    for artifact in chapter.artifacts:  # "Fig. 2", "Theorem 4.1": named in the title
        assert artifact.split()[-1] in chapter.title


def test_reads_and_after_name_known_chapters_and_requires_are_known_kinds() -> None:
    for chapter in registry.CHAPTERS:
        reads = () if chapter.reads == registry.READS_ALL else chapter.reads
        assert set(reads) | set(chapter.after) <= set(registry.STEMS) - {chapter.stem}
        for need in chapter.requires:
            kind, _, what = need.partition(":")
            assert kind in profiles.REQUIREMENT_KINDS and what
    assert registry.RUN_LAST == (registry.REPORT,)
    with pytest.raises(KeyError, match="no chapter '99_nothing'"):
        registry.chapter("99_nothing")


def test_runner_and_profiles_read_the_registry() -> None:
    """The runner's dependencies are the registry's, and every profile runs its chapters after
    the ones they read or follow, the report last, with the registry's requirements."""
    assert scheduling.READS == registry.READS and scheduling.AFTER == registry.AFTER
    for name in profiles.profile_names(ROOT):
        profile = profiles.load_profile(name, ROOT)
        order = list(profile.notebooks)
        if registry.REPORT in order:
            assert order[-1] == registry.REPORT
        for stem in order:
            wanted = set(registry.chapter(stem).after)
            reads = registry.chapter(stem).reads
            wanted |= set(order) - {stem} if reads == registry.READS_ALL else set(reads)
            assert set(scheduling.chapter_after(stem, profile)) == wanted & set(order)
            assert set(registry.REQUIRES.get(stem, ())) <= set(profile.requires.get(stem, []))


def test_the_runner_refuses_a_toc_out_of_registry_order(tmp_path: Path) -> None:
    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text(encoding="utf-8"))
    parts = toc["parts"]
    parts[0]["chapters"], parts[1]["chapters"] = parts[1]["chapters"], parts[0]["chapters"]
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    stems = [registry.REPORT, registry.JUDGING]
    profile = profiles.Profile("mine", "", {stem: {} for stem in stems})
    layout = profiles.Folders().layout(tmp_path, "mine")
    with pytest.raises(profiles.PipelineError, match="another order than the chapter registry"):
        build.check_book_inputs(profile, stems, layout)
    (tmp_path / "book" / "_toc.yml").write_text(
        (ROOT / "book" / "_toc.yml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    build.check_book_inputs(profile, stems, layout)  # the real one is in order
