"""Checked routers (issue 23): every stored router (racer_lib.routing.store) and every saved
router (Router.save) carries a digest of its contents. A damaged stored router is named and
retrained, bit for bit as a clean run trains it; a damaged saved router is refused, naming the
file, by Router.load, ``racer records route`` and route-then-judge."""

import os
import struct
import zipfile

import pandas as pd
import pytest
import torch

from racer_lib import cli, judging
from racer_lib.errors import RacerError
from racer_lib.paper import experiments
from racer_lib.records import io as rio
from racer_lib.routing import policy as pol
from racer_lib.routing import routed, store
from racer_lib.routing import train as tr
from tests.test_pipeline import MYST_HEADER

SETTINGS = tr.TrainSettings(epochs=2, lr=1e-3)
CONFIGS = experiments.grid([2.0, 4.0], [0, 1])


def flip(path, n=64):
    """Flip ``n`` bytes inside the largest tensor of the torch file ``path`` (its data, not the
    zip's headers: torch.load still reads it)."""
    with zipfile.ZipFile(path) as archive:
        info = max(archive.infolist(), key=lambda i: i.file_size)
    data = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack(
        "<HH", data[info.header_offset + 26 : info.header_offset + 30]
    )
    start = info.header_offset + 30 + name_len + extra_len + info.file_size // 2
    data[start : start + n] = bytes(b ^ 0xFF for b in data[start : start + n])
    path.write_bytes(bytes(data))


def equal(a: tr.TrainResult, b: tr.TrainResult) -> bool:
    """Bit for bit the same policies, histories and best epochs."""
    layers = [
        (a.policies.policy_layers(p), b.policies.policy_layers(p)) for p in range(len(CONFIGS))
    ]
    same = all(
        torch.equal(wa, wb) and torch.equal(ba, bb)
        for la, lb in layers
        for (wa, ba), (wb, bb) in zip(la, lb)
    )
    return same and a.history.equals(b.history) and list(a.best_epoch) == list(b.best_epoch)


@pytest.fixture(scope="module")
def clean(routing_data):
    """A clean run's result (no store: what every damaged store must give back)."""
    records, emb, _, _ = routing_data
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return experiments.fit(records, emb, CONFIGS, SETTINGS).result
    finally:
        torch.set_num_threads(threads)


def stored_fit(routing_data, root):
    records, emb, _, _ = routing_data
    return experiments.fit(records, emb, CONFIGS, SETTINGS, store=store.PolicyStore(root)).result


# ----------------------------------------------------------------------------------------
# The store: a damaged entry is named, discarded and retrained as a clean run trains it


@pytest.mark.parametrize(
    "damage, reason",
    [
        (flip, "digest mismatch"),
        (
            lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
            "truncated or unreadable",
        ),
        (
            lambda p: torch.save({k: v for k, v in torch.load(p).items() if k != "digest"}, p),
            "no digest",
        ),
    ],
    ids=["flipped", "truncated", "no-digest"],
)
def test_a_damaged_stored_router_is_named_and_retrained_as_a_clean_run(
    one_thread, routing_data, clean, tmp_path, capsys, monkeypatch, damage, reason
):
    root = tmp_path / "policies"
    assert equal(stored_fit(routing_data, root), clean)
    files = sorted(root.rglob("*.pt"))
    assert len(files) == len(CONFIGS)
    damaged = files[1]
    damage(damaged)
    capsys.readouterr()
    again = stored_fit(routing_data, root)
    err = capsys.readouterr().err
    assert f"stored router {damaged} is damaged: {reason}" in err and "; retraining" in err
    assert equal(again, clean)  # the retrained policy is the one a clean run trains
    lines, offset = store.damage_since(root)  # what the runner can show
    assert len(lines) == 1 and lines[0].startswith(f"stored router {damaged} is damaged: {reason}")
    # Stored again, whole: the next fit trains nothing and says nothing.
    monkeypatch.setattr(tr, "train_policies", lambda *a, **k: pytest.fail("trained again"))
    assert equal(stored_fit(routing_data, root), clean)
    assert "damaged" not in capsys.readouterr().err
    assert store.damage_since(root, offset) == ([], offset)


def test_a_damaged_router_is_retrained_in_its_first_batch_when_asked_alone(
    one_thread, routing_data, clean, tmp_path, capsys
):
    """Chapter 10 asks for a subset of chapter 07's routers: a damaged one is retrained in the
    batch it was first trained in, so its bits are those of the clean run."""
    records, emb, unit, sp = routing_data
    root = tmp_path / "policies"
    stored_fit(routing_data, root)
    shared = store.PolicyStore(root)
    key = shared.key(CONFIGS[2], SETTINGS, store.inputs_hash(sp["train"], sp["valid"], unit))
    flip(shared.path(key))
    alone, trained = store.train_stored(
        sp["train"], sp["valid"], [CONFIGS[2]], SETTINGS, unit, shared
    )
    assert trained == 1
    assert (
        f"stored router {shared.path(key)} is damaged: digest mismatch" in capsys.readouterr().err
    )
    for (wa, ba), (wb, bb) in zip(alone.policies.policy_layers(0), clean.policies.policy_layers(2)):
        assert torch.equal(wa, wb) and torch.equal(ba, bb)


def test_verify_names_and_removes_a_damaged_entry_and_reads_sound_ones_once(
    one_thread, routing_data, tmp_path, capsys, monkeypatch
):
    """What racer book build does before planning: every entry checked, a damaged one named
    and removed; an entry unchanged since it was found sound is not read again."""
    root = tmp_path / "policies"
    stored_fit(routing_data, root)
    shared = store.PolicyStore(root)
    files = sorted(root.rglob("*.pt"))
    assert shared.verify() == []
    flip(files[0])
    capsys.readouterr()
    said = shared.verify()
    assert said == [f"stored router {files[0]} is damaged: digest mismatch; retraining"]
    assert said[0] in capsys.readouterr().err
    assert not files[0].exists() and all(f.exists() for f in files[1:])
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("a sound entry read again"))
    assert shared.verify() == []
    # a write moves the change time, which a restored mtime does not undo: read again
    stat = files[1].stat()
    files[1].write_bytes(files[1].read_bytes())
    os.utime(files[1], ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(pytest.fail.Exception, match="read again"):
        shared.verify()


# ----------------------------------------------------------------------------------------
# A saved router: refused by Router.load, racer records route and route-then-judge


@pytest.fixture(scope="module")
def saved(tmp_path_factory, routing_data):
    """Records on disk with their embeddings beside them, and a router saved from them."""
    records, emb, _, _ = routing_data
    folder = tmp_path_factory.mktemp("saved")
    path = rio.write_records(records, folder / "mix.parquet")
    rio.write_embeddings(rio.embeddings_path(path), [(records["id"].tolist(), emb)], "sim-16d")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = experiments.fit(records, emb, CONFIGS[:1], SETTINGS).result
    finally:
        torch.set_num_threads(threads)
    router = result.router(0, "sim-16d")
    return path, router.save(folder / "router.pt"), router


def test_a_flipped_saved_router_is_refused_naming_the_file(saved, tmp_path):
    _, good, router = saved
    assert pol.Router.load(good).budget == router.budget
    bad = router.save(tmp_path / "flipped.pt")
    flip(bad)
    with pytest.raises(pol.DamagedError) as err:
        pol.Router.load(bad)
    assert str(err.value).startswith(f"{bad}: router file is damaged: digest mismatch")
    assert isinstance(err.value, RacerError)


def test_a_saved_router_without_a_digest_is_refused(saved, tmp_path):
    _, good, _ = saved
    old = tmp_path / "old.pt"
    torch.save({k: v for k, v in torch.load(good).items() if k != "digest"}, old)
    with pytest.raises(pol.DamagedError, match=r"old\.pt: router file carries no digest"):
        pol.Router.load(old)


def test_records_route_refuses_a_flipped_router_in_one_line(saved, tmp_path, capsys):
    path, _, router = saved
    bad = router.save(tmp_path / "flipped.pt")
    flip(bad)
    out = tmp_path / "routes.csv"
    argv = ["records", "route", str(path), "--router", str(bad), "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: router file is damaged: digest mismatch")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()
    assert cli.main([*argv[:4], str(saved[1]), "--out", str(out)]) == 0  # the clean one routes
    assert len(pd.read_csv(out)) == len(rio.read_records(path))


def test_route_then_judge_refuses_a_flipped_router(saved, tmp_path):
    _, _, router = saved
    bad = router.save(tmp_path / "flipped.pt")
    flip(bad)
    spec = judging.RunSpec("pairs.jsonl", "m", str(tmp_path / "out"), router=str(bad))
    with pytest.raises(pol.DamagedError, match=f"{bad}: router file is damaged"):
        routed.execute_routed(spec)
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------------------
# racer book build --force: the chapter runs again and does not reuse a damaged entry

ROUTERS_NOTEBOOK = (
    MYST_HEADER
    + """
# Alpha

Trains two routers through the build's policy store and writes their probabilities.

```{code-cell} ipython3
:tags: [parameters]

profile = None
results_dir = None
seed = 0
label = "default"
policy_store = ""
```

```{code-cell} ipython3
from pathlib import Path

import pandas as pd
import torch

from racer_lib.paper import experiments
from racer_lib.records.simulate import simulate
from racer_lib.routing import train as tr

torch.set_num_threads(1)
records, emb = simulate("qwen3-4b", "training_mix", dim=16, scale=0.03)
configs = experiments.grid([2.0, 4.0], [0])
fit = experiments.fit(records, emb, configs, tr.TrainSettings(epochs=2, lr=1e-3),
                      store=policy_store)
p = fit.result.p_reasoning(emb)
pd.DataFrame({"p0": p[0], "p1": p[1]}).to_csv(Path(results_dir) / "p.csv", index=False)
```
"""
)


@pytest.mark.slow
def test_force_does_not_reuse_a_damaged_stored_router(tmp_path, capsys):
    from tests.test_pipeline import cli as book
    from tests.test_pipeline import make_repo, write_profile

    repo = make_repo(tmp_path / "repo")
    (repo / "notebooks" / "01_alpha.md").write_text(ROUTERS_NOTEBOOK)
    write_profile(repo, "routers", {"01_alpha": {}})
    assert book(repo, "--profile", "routers", "--no-book") == 0
    csv = repo / "results" / "routers" / "01_alpha" / "p.csv"
    first = csv.read_bytes()
    entries = sorted((repo / "build" / "policies").rglob("*.pt"))
    assert len(entries) == 2
    flip(entries[0])
    assert book(repo, "--profile", "routers", "--no-book", "--force") == 0
    assert csv.read_bytes() == first  # retrained as the first run trained it, not reused
    line = f"stored router {entries[0]} is damaged: digest mismatch; retraining"
    assert line in (repo / "build" / "policies" / store.DAMAGE_LOG).read_text()
    assert line in capsys.readouterr().err  # the build checked the store before planning
