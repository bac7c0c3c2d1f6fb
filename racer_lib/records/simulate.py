"""Simulated judge records, calibrated to the paper's published aggregates.

The paper's Qwen3 and Llama judge records are not public, so the book's default chapters run on
records drawn from the generative model below. It has a known ground truth, needs no download
and no GPU, and reproduces the aggregates the paper publishes (checked by :func:`check`).

Generative model, for pair ``i`` of cell ``c`` (a dataset/subset/domain) and judge ``j``
------------------------------------------------------------------------------------------
Pair latents, shared by every judge (the same pair is easy or hard for all of them):
``u_i`` (ease), ``v_i`` (how much explicit reasoning helps), ``w_i`` (length), all N(0, 1).

Correctness (a bivariate probit). For mode ``a`` (0 instruct, 1 reasoning)::

    y_0 = sqrt(rho_j) u + sqrt(1 - rho_j) (-kappa v + sqrt(1 - kappa^2) e_0)
    y_1 = sqrt(rho_j) u + sqrt(1 - rho_j) (+kappa v + sqrt(1 - kappa^2) e_1)
    r(z, a, l) = 1[ mu_a(j) + d_c + a * g_c + y_a > 0 ]

so ``P(correct_a) = Phi(mu_a(j) + d_c + a g_c)`` exactly; ``rho_j`` sets how often the two
modes agree, ``d_c`` is the cell's difficulty and ``g_c`` its reasoning gain (probit units).
``mu_0(j), mu_1(j)`` are solved so that the paper's training mixture reproduces the judge's
All-Instruct and All-Reasoning accuracy (:func:`calibration`). A small share of wrong verdicts
is unparseable (they count as incorrect, as in the records' schema).

Tokens (log-normal, means preserved exactly)::

    tokens_0 = m_j l_c       exp(s0 (0.6 w + 0.8 n_0) - s0^2 / 2)
    tokens_1 = m_j l_c R_jc  exp(s1 (0.4 w - 0.5 u + sqrt(0.59) n_1) - s1^2 / 2)

with ``R_jc = k_j q_c``: ``q_c`` is the cell's cost ratio for the reference judge Qwen3-4B
(the Skywork subsets are Table 1 of the paper verbatim) and ``k_j`` is solved so that the
training mixture has the judge's published cost ratio. Harder pairs think longer.

Self-routing: the instruct mode's yes/no answer to the paper's self-routing prompt is drawn
from its own stream (:func:`_self_route`), with the judge's published share of "yes".

Embeddings (dimension ``dim``): a cell centroid (its domain's direction plus its dataset's),
plus noisy copies of ``u``, ``v``, ``w`` along fixed directions (only a share ``READABLE`` of
each latent's variance is readable), plus isotropic noise. A router can learn the domain and
part of the pair-level signal, never all of it.

Choices: ``READABLE``, ``KAPPA``, the scale of the gains ``g_c``, the judges' ``rho_j``, the
token spreads and the weight of the centroid are not fixed by the paper. They are the knobs of
:class:`racer_lib.records.choices.Simulator` (re-exported here with :data:`CHOICES`, each knob's
plausible range); every generating function takes ``simulator=`` (default: the defaults above).

Determinism: every draw comes from a generator seeded by ``(seed, cell, chunk, stream)``, with a
fixed chunk of :data:`_CHUNK` pairs, so the same seed gives the same records whatever subset or
chunking the caller uses, and 40k pairs x 7680 dims stream through memory chunk by chunk.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import pandas as pd
from scipy import optimize, stats

from racer_lib import __version__
from racer_lib.errors import ConfigError
from racer_lib.records.choices import (  # noqa: F401 (re-exported: the simulator's choices)
    CHOICES,
    DEFAULT,
    KAPPA,
    READABLE,
    SIGMA_TOKENS,
    Simulator,
    null_gain,
    null_simulator,
)
from racer_lib.records.io import embeddings_path, write_embeddings, write_records
from racer_lib.records.schema import MODES, SELF_ROUTE, mode_columns, validate_records

_CHUNK = 4096
SPLIT_SHARES = {"train": 0.8, "valid": 0.1, "test": 0.1}  # in-distribution sources


@dataclass(frozen=True)
class Judge:
    """A judge pair and the paper's aggregates on its training mixture (the calibration targets)."""

    name: str
    instruct_model: str
    reasoning_model: str
    acc_instruct: float  # All-Instruct accuracy (%), training mixture
    acc_reasoning: float  # All-Reasoning accuracy (%)
    cost_ratio: float  # All-Reasoning tokens / All-Instruct tokens
    rho: float  # agreement between the two modes' errors (ours: larger models agree more)
    tokens_instruct: float  # mean instruct-mode tokens on a length-1.0 cell (ours)
    unparseable: tuple[float, float]  # share of wrong verdicts that are unparseable (ours)
    source: str  # the paper table each target comes from
    self_route: float | None = None  # share (%) of self-routing "yes" answers, if reported


#: The judges. Targets: the paper's self-routing table (Qwen3) and its Llama-family table;
#: ``self_route`` is the share (%) of pairs on which the instruct mode asks for reasoning when
#: given the self-routing prompt (the self-routing table; not reported for the Llama pair).
# fmt: off
JUDGES: dict[str, Judge] = {j.name: j for j in [
    #     name            instruct model                reasoning model                  acc_0  acc_1  ratio  rho   tok0 unparseable   source                 self_route
    Judge('qwen3-1.7b',   'Qwen3-1.7B (thinking off)',  'Qwen3-1.7B (thinking on)',      70.04, 78.35, 19.07, 0.30, 150, (0.02, 0.1),  'self-routing table',  99.91),
    Judge('qwen3-4b',     'Qwen3-4B (thinking off)',    'Qwen3-4B (thinking on)',        81.96, 86.50,  6.25, 0.45, 180, (0.02, 0.04), 'self-routing table',  99.51),
    Judge('qwen3-8b',     'Qwen3-8B (thinking off)',    'Qwen3-8B (thinking on)',        82.20, 87.86,  6.36, 0.55, 190, (0.01, 0.03), 'self-routing table',  99.88),
    Judge('llama-3.1-8b', 'Llama-3.1-8B-Instruct',      'DeepSeek-R1-Distill-Llama-8B',  67.32, 79.93,  4.12, 0.15, 320, (0.03, 0.06), 'Llama-family table',  None),
]}
# fmt: on


@dataclass(frozen=True)
class Cell:
    """One (dataset, subset, domain) group of pairs and its judge-independent parameters."""

    dataset: str
    subset: str
    domain: str
    size: int  # pairs the paper uses
    role: str  # "train" (split train/valid/test) or "ood" (held-out benchmark)
    difficulty: float  # d_c, probit shift of both modes (negative = harder)
    gain: float  # g_c, extra probit of the reasoning mode
    length: float  # l_c, instruct-token multiplier
    ratio: float  # q_c, reasoning/instruct token ratio for Qwen3-4B
    source: str  # where size / ratio come from

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.subset}"


# Sizes: the paper's dataset-statistics and OOD-domain tables; Skywork "rest" is the remainder of
# its 77,016 pairs; math and code are the paper's 20k mixture split evenly (the split is ours).
# Difficulty, gain and length are ours, shaped by the paper's qualitative findings: reasoning
# helps most on math and coding, little or negatively on safety and knowledge; JudgeBench is
# the hardest benchmark, RewardBench the easiest.
# fmt: off
CELLS: list[Cell] = [
    #    dataset                  subset                   domain          size  role       d_c    g_c  l_c   q_c   source of size / ratio
    Cell('skywork',               'magpie_ultra',          'chat',        27785, 'train',  0.00,  0.15, 1.2, 11.2, 'Table 1 (dataset statistics)'),
    Cell('skywork',               'wildguardmix',          'safety',       6709, 'train',  0.30, -0.10, 0.8,  3.4, 'Table 1 (dataset statistics)'),
    Cell('skywork',               'offsetbias',            'chat',         8504, 'train', -0.10,  0.05, 1.0,  4.7, 'Table 1 (dataset statistics)'),
    Cell('skywork',               'rest',                  'chat',        34018, 'train',  0.20,  0.00, 1.0,  4.0, 'Skywork 80K v0.2 minus Table 1'),
    Cell('math_step_dpo',         'math_step_dpo',         'math',        10000, 'train', -0.20,  0.35, 1.1,  6.0, '§5.2 training data'),
    Cell('code_preference_pairs', 'code_preference_pairs', 'coding',      10000, 'train', -0.10,  0.25, 1.2,  5.2, '§5.2 training data'),
    Cell('judgebench',            'judgebench',            'coding',         73, 'ood',   -0.90,  0.45, 1.3,  8.0, 'OOD domain table'),
    Cell('judgebench',            'judgebench',            'math',           90, 'ood',   -0.70,  0.55, 1.1,  9.0, 'OOD domain table'),
    Cell('judgebench',            'judgebench',            'reasoning',     149, 'ood',   -0.80,  0.30, 1.0,  8.5, 'OOD domain table'),
    Cell('judgebench',            'judgebench',            'knowledge',     308, 'ood',   -0.60, -0.05, 0.9,  6.0, 'OOD domain table'),
    Cell('rewardbench',           'rewardbench',           'math',          447, 'ood',    0.00,  0.60, 1.1,  7.0, 'OOD domain table'),
    Cell('rewardbench',           'rewardbench',           'coding',        984, 'ood',    0.10,  0.40, 1.3,  5.5, 'OOD domain table'),
    Cell('rewardbench',           'rewardbench',           'chat',          814, 'ood',    0.40,  0.05, 1.0,  4.5, 'OOD domain table'),
    Cell('rewardbench',           'rewardbench',           'safety',        740, 'ood',    0.50, -0.10, 0.7,  3.0, 'OOD domain table'),
    Cell('rewardbench2',          'rewardbench2',          'factuality',    475, 'ood',   -0.20,  0.10, 1.0,  5.0, 'OOD domain table'),
    Cell('rewardbench2',          'rewardbench2',          'precise_if',    160, 'ood',   -0.50,  0.15, 1.0,  6.0, 'OOD domain table'),
    Cell('rewardbench2',          'rewardbench2',          'math',          183, 'ood',   -0.10,  0.50, 1.1,  7.5, 'OOD domain table'),
    Cell('rewardbench2',          'rewardbench2',          'safety',        450, 'ood',    0.30, -0.10, 0.7,  3.2, 'OOD domain table'),
    Cell('rewardbench2',          'rewardbench2',          'focus',         495, 'ood',    0.10,  0.00, 1.0,  4.5, 'OOD domain table'),
]
# fmt: on
# OOD cells share subset = dataset: each benchmark is split only by domain.
_CELLS = {(c.dataset, c.subset, c.domain): c for c in CELLS}


def _skywork_share(subset: str, total: int = 20000) -> int:
    sky = [c for c in CELLS if c.dataset == "skywork"]
    sizes = np.array([c.size for c in sky], dtype=float)
    counts = np.floor(total * sizes / sizes.sum()).astype(int)
    counts[np.argmax(sizes)] += total - counts.sum()
    return int(dict(zip([c.subset for c in sky], counts))[subset])


#: Named sets of pairs: each maps a cell to how many of its pairs it takes.
RECIPES: dict[str, dict[tuple[str, str, str], int]] = {
    # §5.2: 20,000 Skywork pairs (in proportion to its subsets) + 20,000 math and code pairs.
    "training_mix": {
        **{
            (c.dataset, c.subset, c.domain): _skywork_share(c.subset)
            for c in CELLS
            if c.dataset == "skywork"
        },
        ("math_step_dpo", "math_step_dpo", "math"): 10000,
        ("code_preference_pairs", "code_preference_pairs", "coding"): 10000,
    },
    **{
        name: {(c.dataset, c.subset, c.domain): c.size for c in CELLS if c.dataset == name}
        for name in ["judgebench", "rewardbench", "rewardbench2"]
    },
    **{
        sub: {(c.dataset, c.subset, c.domain): c.size}
        for c in CELLS
        if c.dataset == "skywork"
        for sub in [c.subset]
    },
}
OOD_BENCHMARKS = ("judgebench", "rewardbench", "rewardbench2")


# ----------------------------------------------------------------------------------------
# Calibration


def _mix_weights(recipe: str) -> tuple[list[Cell], np.ndarray]:
    cells = [_CELLS[k] for k in RECIPES[recipe]]
    w = np.array(list(RECIPES[recipe].values()), dtype=float)
    return cells, w / w.sum()


@cache
def calibration(judge: str, simulator: Simulator = DEFAULT) -> dict[str, float]:
    """Solve ``mu_0, mu_1`` and ``k_j`` so the training mixture meets the judge's targets
    (under ``simulator``'s gains; with ``reasoning_gain = False``, ``mu_1 = mu_0``)."""
    j = _judge(judge)
    cells, w = _mix_weights("training_mix")
    d = np.array([c.difficulty for c in cells])
    g = np.array([simulator.gain(c.gain) for c in cells])
    mu = []
    for a, target in enumerate([j.acc_instruct, j.acc_reasoning]):
        if a == 1 and not simulator.reasoning_gain:
            mu.append(mu[0])
            break

        def gap(m, a=a, target=target):
            return float(w @ stats.norm.cdf(m + d + a * g)) - target / 100

        mu.append(optimize.brentq(gap, -10, 10, xtol=1e-12))
    l = np.array([c.length for c in cells])
    q = np.array([c.ratio for c in cells])
    k = j.cost_ratio * (w @ l) / (w @ (l * q))
    return {"mu_instruct": mu[0], "mu_reasoning": mu[1], "ratio_scale": float(k)}


def _judge(name: str) -> Judge:
    if name not in JUDGES:
        raise ConfigError(f"unknown judge {name!r}; simulated judges are {', '.join(JUDGES)}")
    return JUDGES[name]


def cell_expectations(judge: str, simulator: Simulator = DEFAULT) -> pd.DataFrame:
    """Exact accuracies, agreement cells and cost ratio of every cell for one judge."""
    j, cal = _judge(judge), calibration(judge, simulator)
    rho, kappa = simulator.rho(j.rho), simulator.kappa
    corr = rho - (1 - rho) * kappa**2  # correlation of y_0 and y_1
    rows = []
    for c in CELLS:
        z0 = cal["mu_instruct"] + c.difficulty
        z1 = cal["mu_reasoning"] + c.difficulty + simulator.gain(c.gain)
        p0, p1 = stats.norm.cdf(z0), stats.norm.cdf(z1)
        if simulator.reasoning_gain:
            both = stats.multivariate_normal(cov=[[1, corr], [corr, 1]]).cdf([z0, z1])
        else:  # the null-gain control: both modes right on the same pairs
            both = p0
        rows.append(
            dict(
                judge=judge,
                dataset=c.dataset,
                subset=c.subset,
                domain=c.domain,
                acc_instruct=100 * p0,
                acc_reasoning=100 * p1,
                both_right=both,
                only_reasoning=p1 - both,
                only_instruct=p0 - both,
                both_wrong=1 - p0 - p1 + both,
                cost_ratio=cal["ratio_scale"] * c.ratio,
            )
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------
# Generation


def _key(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _rng(seed: int, *stream) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=[_key(*stream)]))


@lru_cache(maxsize=8)
def _world(seed: int, dim: int) -> dict[str, np.ndarray]:
    """Fixed directions of the embedding space: domains, datasets and the three latents."""
    rng = _rng(seed, "world", dim)

    def unit(n):
        x = rng.standard_normal((n, dim))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    domains = sorted({c.domain for c in CELLS})
    datasets = sorted({c.dataset for c in CELLS})
    dom, dat, lat = unit(len(domains)), unit(len(datasets)), unit(3)
    centroids = {}
    for c in CELLS:
        v = dom[domains.index(c.domain)] + 0.5 * dat[datasets.index(c.dataset)]
        centroids[c.key + "/" + c.domain] = (v / np.linalg.norm(v)).astype(np.float32)
    return {"centroids": centroids, "latents": lat.astype(np.float32)}


def _pair_chunk(
    seed: int, cell: Cell, chunk: int, n: int, dim: int, simulator: Simulator = DEFAULT
) -> dict[str, np.ndarray]:
    """Judge-independent draws of one chunk: latents, labels, splits and embeddings.

    Each quantity has its own stream and is drawn row by row, so the first ``n`` pairs of a
    chunk are the same whatever ``n`` is.
    """

    def rng(what):
        return _rng(seed, what, cell.key, cell.domain, chunk)

    u, v, w = rng("latents").standard_normal((n, 3)).T
    out = {"u": u, "v": v, "w": w, "label": (rng("label").random(n) < 0.5).astype(np.int8)}
    if cell.role == "train":
        edges = np.cumsum(list(SPLIT_SHARES.values()))
        pick = np.minimum(
            np.searchsorted(edges, rng("split").random(n), side="right"), len(edges) - 1
        )
        out["split"] = np.array(list(SPLIT_SHARES))[pick]
    else:
        out["split"] = np.full(n, "ood")
    if dim > 0:
        world = _world(seed, dim)
        noise = rng("readable").standard_normal((n, 3))
        readable = simulator.readable
        seen = np.sqrt(readable) * np.column_stack([u, v, w]) + np.sqrt(1 - readable) * noise
        emb = _rng(seed, "embedding", cell.key, cell.domain, chunk, dim).standard_normal(
            (n, dim), dtype=np.float32
        )
        emb *= np.float32(0.5 / np.sqrt(dim))
        centroid = world["centroids"][cell.key + "/" + cell.domain]
        if simulator.cell_signal != 1:
            centroid = np.float32(simulator.cell_signal) * centroid
        emb += centroid
        emb += (0.5 * seen).astype(np.float32) @ world["latents"]
        out["embedding"] = emb
    return out


def _judge_chunk(
    seed: int, cell: Cell, chunk: int, pairs: dict, judge: str, simulator: Simulator = DEFAULT
) -> pd.DataFrame:
    """One judge's verdicts and token counts on one chunk of pairs."""
    j, cal = _judge(judge), calibration(judge, simulator)
    rng = _rng(seed, "judge", judge, cell.key, cell.domain, chunk)
    u, v, w, label = pairs["u"], pairs["v"], pairs["w"], pairs["label"]
    n = len(u)
    e0, e1, n0, n1, flip0, flip1, think = rng.standard_normal((n, 7)).T
    rho, kappa = simulator.rho(j.rho), simulator.kappa
    s = np.sqrt(1 - rho)
    y0 = np.sqrt(rho) * u + s * (-kappa * v + np.sqrt(1 - kappa**2) * e0)
    y1 = np.sqrt(rho) * u + s * (kappa * v + np.sqrt(1 - kappa**2) * e1)
    if not simulator.reasoning_gain:  # the null-gain control: reasoning changes no verdict
        y1 = y0
    correct = [
        cal["mu_instruct"] + cell.difficulty + y0 > 0,
        cal["mu_reasoning"] + cell.difficulty + simulator.gain(cell.gain) + y1 > 0,
    ]

    s0, s1 = simulator.sigma_tokens()
    m0 = j.tokens_instruct * cell.length
    m1 = m0 * cal["ratio_scale"] * cell.ratio
    tokens = [
        np.maximum(1, np.rint(m0 * np.exp(s0 * (0.6 * w + 0.8 * n0) - s0**2 / 2))),
        np.maximum(
            1, np.rint(m1 * np.exp(s1 * (0.4 * w - 0.5 * u + np.sqrt(0.59) * n1) - s1**2 / 2))
        ),
    ]
    # Thinking takes most of a reasoning answer: a share centred on 0.85.
    share = 1 / (1 + np.exp(-(1.75 + 0.4 * think)))
    thinking = [np.zeros(n, dtype=np.int64), np.rint(tokens[1] * share).astype(np.int64)]

    right = np.where(label == 1, "A", "B")
    wrong = np.where(label == 1, "B", "A")
    cols = {}
    for a, (mode, flip) in enumerate(zip(MODES, (flip0, flip1))):
        unparseable = ~correct[a] & (stats.norm.cdf(flip) < j.unparseable[a])
        verdict = np.where(correct[a], right, np.where(unparseable, "unparseable", wrong))
        mc = mode_columns(mode)
        cols[mc["verdict"]] = verdict
        cols[mc["correct"]] = correct[a]
        cols[mc["tokens"]] = tokens[a].astype(np.int64)
        cols[mc["thinking_tokens"]] = thinking[a]
    cols[SELF_ROUTE] = _self_route(seed, cell, chunk, v, j)
    return pd.DataFrame(cols)


SELF_ROUTE_SIGNAL = 0.3  # weight of the "reasoning helps" latent v in the yes/no answer


def _self_route(seed: int, cell: Cell, chunk: int, v: np.ndarray, j: Judge) -> pd.Series:
    """The instruct mode's answer to the self-routing prompt (its own stream of draws).

    ``yes`` iff ``Phi^-1(share) + 0.3 v + sqrt(1 - 0.3^2) e > 0``, so ``P(yes)`` is the judge's
    published share exactly, leaning slightly towards pairs where reasoning helps. Missing for
    a judge whose share the paper does not report.
    """
    if j.self_route is None:
        return pd.Series(pd.NA, index=range(len(v)), dtype="string")
    e = _rng(seed, "self_route", j.name, cell.key, cell.domain, chunk).standard_normal(len(v))
    k = SELF_ROUTE_SIGNAL
    yes = stats.norm.ppf(j.self_route / 100) + k * v + np.sqrt(1 - k**2) * e > 0
    return pd.Series(np.where(yes, "yes", "no"), dtype="string")


def iter_simulate(
    judge: str,
    recipe: str | list[str] = "training_mix",
    *,
    seed: int = 0,
    dim: int = 64,
    scale: float = 1.0,
    simulator: Simulator = DEFAULT,
) -> Iterator[tuple[pd.DataFrame, np.ndarray | None]]:
    """Yield ``(records, embeddings)`` chunk by chunk (at most :data:`_CHUNK` pairs each).

    ``recipe`` names a set of pairs (:data:`RECIPES`: ``training_mix``, a benchmark, or a
    Skywork subset) or a list of them; ``scale`` multiplies every cell's count (at least one
    pair per cell); ``dim = 0`` skips embeddings; ``simulator``: the uncalibrated choices
    (:class:`~racer_lib.records.choices.Simulator`; a non-default one is named in ``source``).
    """
    _judge(judge)
    recipes = [recipe] if isinstance(recipe, str) else list(recipe)
    for name in recipes:
        if name not in RECIPES:
            raise ConfigError(f"unknown recipe {name!r}; recipes are {', '.join(RECIPES)}")
    if scale <= 0 or dim < 0:
        raise ConfigError(f"scale must be > 0 and dim >= 0 (got scale={scale}, dim={dim})")
    source = f"simulated:racer_lib-{__version__}:seed={seed}"
    if simulator.changes():
        source += f":simulator={simulator.tag()}"
    for name in recipes:
        for key, count in RECIPES[name].items():
            cell = _CELLS[key]
            n_total = max(1, int(round(count * scale)))
            for chunk in range(-(-n_total // _CHUNK)):
                n = min(_CHUNK, n_total - chunk * _CHUNK)
                pairs = _pair_chunk(seed, cell, chunk, n, dim, simulator)
                idx = np.arange(chunk * _CHUNK, chunk * _CHUNK + n)
                head = pd.DataFrame(
                    {
                        "id": [f"{cell.dataset}/{cell.subset}/{cell.domain}/{i:06d}" for i in idx],
                        "dataset": cell.dataset,
                        "subset": cell.subset,
                        "domain": cell.domain,
                        "split": pairs["split"],
                        "label": pairs["label"],
                        "judge": judge,
                        "source": source,
                    }
                )
                body = _judge_chunk(seed, cell, chunk, pairs, judge, simulator)
                yield pd.concat([head, body], axis=1), pairs.get("embedding")


def simulate(
    judge: str,
    recipe: str | list[str] = "training_mix",
    *,
    seed: int = 0,
    dim: int = 64,
    scale: float = 1.0,
    simulator: Simulator = DEFAULT,
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Simulated records (validated) and their embeddings, in one piece.

    See :func:`iter_simulate`.
    """
    parts = list(iter_simulate(judge, recipe, seed=seed, dim=dim, scale=scale, simulator=simulator))
    records = validate_records(
        pd.concat([p[0] for p in parts], ignore_index=True), file=f"<simulated {judge}>"
    )
    emb = np.concatenate([p[1] for p in parts]) if dim > 0 else None
    return records, emb


def write_simulated(
    path,
    judge: str,
    recipe: str | list[str] = "training_mix",
    *,
    seed: int = 0,
    dim: int = 64,
    scale: float = 1.0,
    simulator: Simulator = DEFAULT,
):
    """Write records (``path``) and embeddings (beside it), streaming the embeddings."""

    records = []

    def chunks():
        sims = iter_simulate(judge, recipe, seed=seed, dim=dim, scale=scale, simulator=simulator)
        for rec, emb in sims:
            records.append(rec)
            yield rec["id"].to_numpy(), emb

    epath = None
    if dim > 0:
        epath = write_embeddings(embeddings_path(path), chunks(), embedder=f"simulated-{dim}d")
    else:
        for _ in chunks():
            pass
    rpath = write_records(pd.concat(records, ignore_index=True), path)
    return rpath, epath


# ----------------------------------------------------------------------------------------
# The calibration check: simulated aggregates next to the paper's numbers


#: Tolerances of the check (the README states them): accuracy in points, cost ratio relative; the
#: self-routing share in points (a binomial share of 99.5% on 40k pairs has an sd of 0.04).
TOL_ACC, TOL_RATIO, TOL_SELF_ROUTE = 1.5, 0.10, 0.15


def check(seed: int = 0, scale: float = 1.0) -> pd.DataFrame:
    """Regenerate the records and compare their aggregates with the paper's targets.

    Rows: All-Instruct / All-Reasoning accuracy and cost ratio of every judge on the training
    mixture (self-routing and Llama tables), the share of self-routing "yes" answers where the
    paper reports it, and Qwen3-4B's cost ratio on the three Skywork subsets of the
    dataset-statistics table. Column ``ok`` applies the tolerances.
    """
    from racer_lib.records.summary import mode_summary

    rows = []

    def add(what, judge, subset, paper, sim, source, rel=False, tol=TOL_ACC):
        tol = TOL_RATIO * paper if rel else tol
        rows.append(
            dict(
                quantity=what,
                judge=judge,
                set=subset,
                paper=paper,
                simulated=round(sim, 2),
                tolerance=round(tol, 3),
                ok=abs(sim - paper) <= tol,
                paper_table=source,
            )
        )

    for name, j in JUDGES.items():
        recs, _ = simulate(name, "training_mix", seed=seed, dim=0, scale=scale)
        s = mode_summary(recs).iloc[0]
        add(
            "All-Instruct accuracy (%)",
            name,
            "training_mix",
            j.acc_instruct,
            s["acc_instruct"],
            j.source,
        )
        add(
            "All-Reasoning accuracy (%)",
            name,
            "training_mix",
            j.acc_reasoning,
            s["acc_reasoning"],
            j.source,
        )
        add("cost ratio", name, "training_mix", j.cost_ratio, s["cost_ratio"], j.source, rel=True)
        if j.self_route is not None:
            add(
                "self-routing reasoning share (%)",
                name,
                "training_mix",
                j.self_route,
                100 * float((recs[SELF_ROUTE] == "yes").mean()),
                "self-routing table",
                tol=TOL_SELF_ROUTE,
            )
    for c in CELLS:
        if c.dataset == "skywork" and c.source.startswith("Table 1"):
            recs, _ = simulate("qwen3-4b", c.subset, seed=seed, dim=0, scale=scale)
            add(
                "cost ratio",
                "qwen3-4b",
                c.subset,
                c.ratio,
                mode_summary(recs).iloc[0]["cost_ratio"],
                c.source,
                rel=True,
            )
    return pd.DataFrame(rows)
