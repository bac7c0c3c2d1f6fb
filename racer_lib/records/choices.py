"""The simulator's uncalibrated choices, named in one place, with a plausible range for each.

:mod:`racer_lib.records.simulate` is calibrated to the paper's published aggregates (each
judge's All-Instruct and All-Reasoning accuracy, its cost ratio, the self-routing share), but
several of its numbers are not fixed by anything the paper publishes: how much of what makes a
pair hard the embedding carries, how strongly the two modes' errors hinge on one "reasoning
helps" latent, how unequal the cells' reasoning gains are, how often the two modes agree, how
spread out the token counts are, how well the embedding separates the domains. Each is a knob
of :class:`Simulator`, whose defaults are this module's constants (the values every chapter has
always used, so the default simulator gives the same records byte for byte), and :data:`CHOICES`
states each knob's range and the argument for it (the sensitivity chapter,
``16_simulator_sensitivity``, shows the table and re-runs the emergent claims across it).

Two controls lie outside the ranges on purpose (:func:`null_simulator`, :func:`null_gain`):
an embedding that says nothing about which mode is right (no router can then beat Random beyond
noise: a build whose router does has a leak), and a reasoning mode that gains nothing on any pair
(the paper's Fig. 2 findings must then fail).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from racer_lib.errors import ConfigError

#: Share of each pair latent's variance that the embedding carries.
READABLE = 0.5
#: Weight of the "reasoning helps" latent ``v`` in each mode's noise.
KAPPA = 0.6
#: Log-normal spread of instruct / reasoning tokens.
SIGMA_TOKENS = (0.35, 0.5)
#: Where a judge's mode agreement ``rho_j + rho_shift`` is clipped.
RHO_RANGE = (0.0, 0.95)


@dataclass(frozen=True)
class Choice:
    """One knob of :class:`Simulator`: its default, a plausible range and why."""

    name: str
    default: float
    low: float
    high: float
    argument: str


# fmt: off
#: The uncalibrated choices, one row each: the knob, its default, the plausible range, and the
#: argument for that range (the sensitivity chapter prints this table).
CHOICES: tuple[Choice, ...] = (
    Choice("readable", READABLE, 0.1, 0.9,
           "share of each pair latent (ease, reasoning helps, length) the embedding carries; "
           "general-purpose sentence embeddings are not trained to predict a judge's errors, so "
           "a probe reads some but neither none nor all of it"),
    Choice("kappa", KAPPA, 0.3, 0.9,
           "weight of the 'reasoning helps' latent in the modes' noise: how much of the "
           "disagreement between the modes is pair-level structure rather than chance; the "
           "paper publishes no per-pair agreement of the two modes"),
    Choice("gain_scale", 1.0, 0.5, 1.5,
           "multiplies every cell's reasoning gain g_c; the gains are ours, shaped by Fig. 2's "
           "ordering (math and coding gain most); half to one and a half times keeps that "
           "ordering and the calibrated mixture accuracies, and moves how unequal cells are"),
    Choice("rho_shift", 0.0, -0.1, 0.2,
           "added to each judge's agreement rho (0.15 to 0.55, ours; clipped to [0, 0.95]): "
           "how often the two modes fail on the same pairs, which the paper does not report"),
    Choice("token_spread", 1.0, 0.5, 1.5,
           "multiplies the log-normal spreads of the token counts (0.35 and 0.5, ours; means "
           "kept): how heavy the tail of costly pairs is, which cost reweighting acts on"),
    Choice("cell_signal", 1.0, 0.5, 1.5,
           "weight of the cell's centroid (domain and dataset) in the embedding against its "
           "noise: how well the embedding separates the domains, which real encoders do well "
           "but by an unmeasured margin"),
)
# fmt: on
KNOBS: tuple[str, ...] = tuple(c.name for c in CHOICES)


@dataclass(frozen=True)
class Simulator:
    """The simulator's uncalibrated choices (:data:`CHOICES`); the defaults are the book's.

    ``reasoning_gain = False`` is the null-gain control: ``g_c = 0`` in every cell, the
    reasoning mode's intercept equals the instruct mode's and its noise is the instruct mode's,
    so reasoning is right on exactly the pairs where instruct is: as accurate in every cell of
    every sample, only costlier (its accuracy target is given up on purpose).
    """

    readable: float = READABLE
    kappa: float = KAPPA
    gain_scale: float = 1.0
    rho_shift: float = 0.0
    token_spread: float = 1.0
    cell_signal: float = 1.0
    reasoning_gain: bool = True

    def __post_init__(self):
        if not 0 <= self.readable <= 1:
            raise ConfigError(f"readable must be in [0, 1] (got {self.readable})")
        if not 0 <= self.kappa <= 1:
            raise ConfigError(f"kappa must be in [0, 1] (got {self.kappa})")
        for name in ("gain_scale", "token_spread", "cell_signal"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0 (got {getattr(self, name)})")

    def gain(self, g: float) -> float:
        """A cell's reasoning gain ``g_c`` (probit units) under these choices."""
        return g * self.gain_scale if self.reasoning_gain else 0.0

    def rho(self, rho: float) -> float:
        """A judge's agreement ``rho_j`` under these choices (clipped to :data:`RHO_RANGE`)."""
        return min(max(rho + self.rho_shift, RHO_RANGE[0]), RHO_RANGE[1])

    def sigma_tokens(self) -> tuple[float, float]:
        """The log-normal spreads of instruct and reasoning tokens."""
        return tuple(s * self.token_spread for s in SIGMA_TOKENS)

    def changes(self) -> dict[str, float | bool]:
        """The knobs that differ from the defaults (empty for the default simulator)."""
        return {k: v for k, v in asdict(self).items() if v != getattr(DEFAULT, k)}

    def tag(self) -> str:
        """``"readable=0.1,kappa=0.3"``: the changed knobs, for a records' ``source``."""
        return ",".join(
            f"{k}={v:g}" if not isinstance(v, bool) else f"{k}={v}"
            for k, v in self.changes().items()
        )

    def with_knobs(self, **knobs) -> Simulator:
        """A copy with ``knobs`` changed."""
        return replace(self, **knobs)


DEFAULT = Simulator()


def null_simulator() -> Simulator:
    """The negative control of the embedding: ``readable = 0`` and ``cell_signal = 0``, so the
    embedding is noise, independent of both modes' correctness and costs."""
    return Simulator(readable=0.0, cell_signal=0.0)


def null_gain() -> Simulator:
    """The negative control of Fig. 2: reasoning gains nothing on any pair (``reasoning_gain =
    False``), so no domain gains more than another and no router can gain over Random."""
    return Simulator(reasoning_gain=False)
