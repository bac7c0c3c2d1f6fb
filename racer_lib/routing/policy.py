"""Router policies: the paper's MLP and a linear policy, a batch of them, and a saved router.

A policy maps a pair's embedding ``z`` to ``pi(1 | z) = sigmoid(logit(z))``, the probability of
the reasoning mode. The paper's policy (appendix B.3) is a 4-layer MLP with ReLU activations and
hidden widths 256/128/64; its robustness ablation uses a linear policy.

:class:`PolicyBatch` holds ``P`` independent policies with stacked parameters (layer ``l`` has a
weight of shape ``(P, in, out)``), so one matrix product per layer runs all of them. Each policy is
initialised from its own seed exactly as :func:`reference_policy` initialises a plain
``torch.nn.Sequential`` (uniform in ``±1/sqrt(fan_in)``, as ``nn.Linear`` does), which is what
lets the tests compare the two.

Checked files. A saved router (:meth:`Router.save`) and a stored one
(:mod:`racer_lib.routing.store`) carry the sha256 of their contents (:func:`_state_digest`: every
tensor's dtype, shape and bytes, every setting) under :data:`DIGEST`, inside the file;
:func:`seal_problem` recomputes it on loading. Flipped bytes in a weight, a truncated file or a
file written before files carried a digest are caught: :meth:`Router.load` refuses them
(:class:`DamagedError`, naming the file) and the store retrains them. Files are read with
``torch.load(weights_only=True)``: reading one runs no pickled code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import pickle
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from racer_lib import __version__
from racer_lib.errors import ConfigError, InputError
from racer_lib.records.files import check_file
from racer_lib.records.io import atomic_write

ARCHS: dict[str, tuple[int, ...]] = {"mlp": (256, 128, 64), "linear": ()}
DIGEST = "digest"  # the key of a checked file's digest (:func:`seal`)


class DamagedError(InputError):
    """A router file whose contents do not match the digest it carries, or that carries none."""


def _state_digest(state) -> str:
    """sha256 of a nested structure of tensors, lists, tuples, dicts and plain values: each
    tensor's dtype, shape and bytes, each value's JSON (a list and a tuple hash alike, as
    ``torch.load`` may give back either)."""
    digest = hashlib.sha256()
    _feed(digest, state)
    return digest.hexdigest()


def _feed(digest, item) -> None:
    if isinstance(item, torch.Tensor):
        t = item.detach().cpu()
        if t.dim() and t.stride(-1) != 1:  # e.g. a stride of 0 (one value, or a damaged file)
            t = torch.empty(t.shape, dtype=t.dtype).copy_(t)
        t = t.contiguous()
        digest.update(f"T{t.dtype}{tuple(t.shape)}\0".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(item, dict):
        digest.update(f"D{len(item)}\0".encode())
        for key in sorted(item, key=str):
            _feed(digest, str(key))
            _feed(digest, item[key])
    elif isinstance(item, (list, tuple)):
        digest.update(f"L{len(item)}\0".encode())
        for part in item:
            _feed(digest, part)
    else:
        value = item.item() if isinstance(item, np.generic) else item
        digest.update(f"V{json.dumps(value)}\0".encode())


class _KeepsWriteError:
    """A binary file that keeps the first :class:`OSError` its ``write`` or ``flush`` raised
    (``error``): PyTorch's writer swallows it and fails later with a ``RuntimeError`` of its
    own (``[enforce fail at inline_container.cc:...] unexpected pos ...``)."""

    def __init__(self, stream) -> None:
        self.stream, self.error = stream, None

    def _kept(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def write(self, data) -> int:
        return self._kept(self.stream.write, data)

    def flush(self) -> None:
        self._kept(self.stream.flush)

    def __getattr__(self, name: str):  # tell, seek, ... as the file's own
        return getattr(self.stream, name)


def write_torch(blob: dict, path: str | Path) -> None:
    """``torch.save(blob)`` to ``path`` through a Python file, so that a full disk raises the
    :class:`OSError` (errno 28, ``path`` its filename), as every other write does, not
    PyTorch's ``RuntimeError`` (chained to it) nor the write's own error without a file name:
    :func:`racer_lib.records.io.atomic_write` turns it into ``cannot write PATH: no space left
    on device``. An error with no failed write behind it is raised as it is."""
    with open(path, "wb") as stream:
        kept = _KeepsWriteError(stream)
        try:
            torch.save(blob, kept)
        except (RuntimeError, OSError) as exc:  # PyTorch's, or the write's without its file
            if kept.error is None:
                raise
            with contextlib.suppress(OSError):  # the buffer's rest would fail again on close
                stream.close()
            error = kept.error
            raise OSError(error.errno, error.strerror or str(error), str(path)) from exc


def seal(state: dict) -> dict:
    """``state`` with the digest of its contents (:func:`_state_digest`) under :data:`DIGEST`."""
    return {**state, DIGEST: _state_digest(state)}


def seal_problem(blob) -> str | None:
    """Why ``blob``, a loaded :func:`seal`ed state, cannot be trusted (``"no digest"``,
    ``"digest mismatch"``), or None when its contents match its digest."""
    if not isinstance(blob, dict) or not isinstance(blob.get(DIGEST), str):
        return "no digest"
    try:
        ok = blob[DIGEST] == _state_digest({k: v for k, v in blob.items() if k != DIGEST})
    except (TypeError, ValueError, RuntimeError):  # a value that is no tensor, number, text
        # or container, or a tensor that cannot be read
        ok = False
    return None if ok else "digest mismatch"


#: Why a file that ``torch.load(weights_only=True)`` will not unpickle is refused: a pickle that
#: would build other objects than tensors and plain values (and could run code), or no pickle.
REFUSED = "not a racer router file: refused to unpickle it"


def load_problem(exc: Exception) -> str:
    """Why ``torch.load(weights_only=True)`` failed on a router file or a stored policy, in one
    line: the pickle was refused (:data:`REFUSED`; PyTorch's own message runs over several
    lines, with advice to load the file unchecked, not to follow), or it is truncated or
    unreadable (the exception's class)."""
    if isinstance(exc, pickle.UnpicklingError):
        return REFUSED
    return f"truncated or unreadable ({type(exc).__name__})"


def _torch_load(path: Path):
    """``torch.load(path, weights_only=True)``: tensors and plain values, no pickled code runs;
    PyTorch's warnings silenced (``Detected pickle protocol 4 ...`` runs over two lines). What
    it refuses is an :class:`InputError` in one line naming the file."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.load(path, weights_only=True)
    except Exception as exc:  # not a torch file, a truncated one, or one holding more
        if load_problem(exc) == REFUSED:
            raise InputError(f"{path}: {REFUSED}") from None
        first = " ".join(next(iter(str(exc).strip().splitlines()), "").split())
        raise InputError(
            f"{path}: not a racer router file, or a damaged one ({type(exc).__name__}"
            f"{': ' + first if first else ''})"
        ) from None


def _hidden(arch: str) -> tuple[int, ...]:
    if arch not in ARCHS:
        raise ConfigError(f"unknown policy architecture {arch!r}; choose one of {', '.join(ARCHS)}")
    return ARCHS[arch]


def init_layers(
    seed: int, in_dim: int, arch: str = "mlp"
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One policy's initial ``(W, b)`` per layer, ``W`` of shape ``(in, out)``, from ``seed``."""
    gen = torch.Generator().manual_seed(int(seed))
    sizes = [in_dim, *_hidden(arch), 1]
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        w = (torch.rand(fan_in, fan_out, generator=gen) * 2 - 1) * bound
        b = (torch.rand(fan_out, generator=gen) * 2 - 1) * bound
        layers.append((w, b))
    return layers


def forward(layers, x: torch.Tensor) -> torch.Tensor:
    """Logits of stacked policies: ``x`` is ``(B, D)`` (shared) or ``(P, B, D)``.

    Returns ``(P, B)``.
    """
    h = x
    for i, (w, b) in enumerate(layers):
        h = torch.matmul(h, w) + b.unsqueeze(-2)
        if i < len(layers) - 1:
            h = torch.relu(h)
    return h.squeeze(-1)


def matmul_flops(in_dim: int, arch: str = "mlp", rows: int = 1, backward: bool = False) -> float:
    """FLOPs of one policy's matrix products on ``rows`` pairs.

    Forward: ``2 rows in out`` per layer. With ``backward``, also every layer's weight gradient
    (``2 rows in out``) and every layer's input gradient but the first's (the embeddings need
    no gradient): what one training step on a minibatch of ``rows`` multiplies.
    """
    sizes = [in_dim, *_hidden(arch), 1]
    total = 0.0
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        per = 2.0 * rows * fan_in * fan_out
        total += per + ((per + (per if i > 0 else 0.0)) if backward else 0.0)
    return total


def n_parameters(in_dim: int, arch: str = "mlp") -> int:
    """Weights and biases of one policy."""
    sizes = [in_dim, *_hidden(arch), 1]
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


class PolicyBatch(torch.nn.Module):
    """``P`` independent policies of one architecture, parameters stacked on a leading axis."""

    def __init__(self, seeds: list[int], in_dim: int, arch: str = "mlp"):
        super().__init__()
        self.arch, self.in_dim, self.seeds = arch, int(in_dim), [int(s) for s in seeds]
        per_policy = [init_layers(s, in_dim, arch) for s in self.seeds]
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([layers[l][0] for layers in per_policy]))
            for l in range(len(per_policy[0]))
        )
        self.biases = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([layers[l][1] for layers in per_policy]))
            for l in range(len(per_policy[0]))
        )

    @property
    def size(self) -> int:
        return len(self.seeds)

    def layers(self):
        return list(zip(self.weights, self.biases))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_dim:
            raise ValueError(
                f"embeddings have dimension {x.shape[-1]}, the policies expect {self.in_dim}"
            )
        return forward(self.layers(), x)

    @torch.no_grad()
    def p_reasoning(
        self, x: np.ndarray | torch.Tensor, chunk: int = 8192, which: slice | None = None
    ) -> np.ndarray:
        """``pi(1 | z)`` of every policy (or of the policies ``which``) on every row of ``x``:
        shape ``(P, n)``."""
        x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        device = self.weights[0].device  # chunks go to the policies' device, come back here
        layers = (
            self.layers() if which is None else [(w[which], b[which]) for w, b in self.layers()]
        )
        if x.shape[-1] != self.in_dim:
            raise ValueError(
                f"embeddings have dimension {x.shape[-1]}, the policies expect {self.in_dim}"
            )
        out = [
            torch.sigmoid(forward(layers, x[i : i + chunk].to(device))).cpu()
            for i in range(0, len(x), chunk)
        ]
        size = len(layers[0][0])
        return torch.cat(out, dim=1).numpy() if out else np.zeros((size, 0), np.float32)

    def policy_layers(self, p: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Detached copies of policy ``p``'s ``(W, b)`` per layer."""
        return [(w[p].detach().clone(), b[p].detach().clone()) for w, b in self.layers()]


def reference_policy(seed: int, in_dim: int, arch: str = "mlp") -> torch.nn.Sequential:
    """A plain ``nn.Sequential`` policy with :func:`init_layers`'s initial weights."""
    mods: list[torch.nn.Module] = []
    layers = init_layers(seed, in_dim, arch)
    for i, (w, b) in enumerate(layers):
        lin = torch.nn.Linear(w.shape[0], w.shape[1])
        with torch.no_grad():
            lin.weight.copy_(w.T)
            lin.bias.copy_(b)
        mods.append(lin)
        if i < len(layers) - 1:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


# ----------------------------------------------------------------------------------------
# A saved router


@dataclass
class Router:
    """One trained policy with what it needs to route new pairs.

    ``embedder`` and ``in_dim`` must match the embeddings it is applied to; ``tokens_per_unit``
    is the cost unit of its training set and ``budget`` the budget it was trained for.
    """

    layers: list[tuple[torch.Tensor, torch.Tensor]]
    arch: str
    in_dim: int
    embedder: str
    tokens_per_unit: float
    budget: float
    config: dict = field(default_factory=dict)
    version: str = __version__

    def check(self, dim: int, embedder: str | None, file: str = "<embeddings>") -> None:
        """Refuse embeddings of another dimension or from another embedder."""
        if dim != self.in_dim:
            raise InputError(
                f"{file}: embeddings have dimension {dim}, but this router was "
                f"trained on {self.in_dim}-dimensional embeddings"
            )
        if embedder is not None and embedder != self.embedder:
            raise InputError(
                f"{file}: embeddings come from {embedder!r}, but this router was "
                f"trained on embeddings from {self.embedder!r}"
            )

    @torch.no_grad()
    def p_reasoning(self, embeddings: np.ndarray) -> np.ndarray:
        """``pi(1 | z)`` for every row."""
        self.check(embeddings.shape[1], None)
        x = torch.as_tensor(np.asarray(embeddings, dtype=np.float32))
        return torch.sigmoid(forward(self.layers, x)).numpy()

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {k: v for k, v in asdict(self).items() if k != "layers"}
        blob = seal({"layers": [(w, b) for w, b in self.layers], "meta": meta})
        atomic_write(path, lambda tmp: write_torch(blob, tmp))
        return path

    @classmethod
    def load(cls, path: str | Path) -> Router:
        """The router saved in ``path`` (:meth:`save`), its digest and layers checked. What is
        not one is refused in one line naming the file: a folder, a symlink loop, a FIFO
        (:func:`racer_lib.records.files.check_file`), a file that is no router (a pickle that
        would run code is refused unread, :data:`REFUSED`), a damaged or altered one
        (:class:`DamagedError`)."""
        path = check_file(path, "router file")
        blob = _torch_load(path)
        if not isinstance(blob, dict) or not {"layers", "meta"} <= set(blob):
            raise InputError(
                f"{path}: not a racer router file (no layers and meta; see Router.save)"
            )
        problem = seal_problem(blob)
        if problem == "no digest":
            raise DamagedError(
                f"{path}: router file carries no digest (saved before router files were "
                "checked, or altered), so its weights cannot be checked; save it again with "
                "Router.save"
            )
        if problem:
            raise DamagedError(
                f"{path}: router file is damaged: {problem} (its weights or settings changed "
                "after Router.save); refusing to use it"
            )
        try:
            router = cls(layers=[(w, b) for w, b in blob["layers"]], **blob["meta"])
        except (TypeError, ValueError) as exc:  # meta of another version, layers not pairs
            problem = " ".join(f"{type(exc).__name__}: {exc}".split())
            raise InputError(f"{path}: not a racer router file ({problem})") from exc
        router.check_layers(path)
        return router

    def check_layers(self, file: str | Path = "<router>") -> None:
        """Refuse layers that do not chain ``in_dim`` -> the architecture's hidden widths ->
        1 (``W`` of shape ``(in, out)``, ``b`` of ``(out,)``), or hold a non-finite value; the
        message names ``file`` and the layer (counted from 0)."""
        sizes = [self.in_dim, *_hidden(self.arch), 1]
        if len(self.layers) != len(sizes) - 1:
            raise InputError(
                f"{file}: {len(self.layers)} layers, but a {self.arch!r} router of input "
                f"dimension {self.in_dim} has {len(sizes) - 1} (widths {sizes})"
            )
        for i, (w, b) in enumerate(self.layers):
            want_w, want_b = (sizes[i], sizes[i + 1]), (sizes[i + 1],)
            for name, t, want in (("weight", w, want_w), ("bias", b, want_b)):
                if not isinstance(t, torch.Tensor) or tuple(t.shape) != want:
                    got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                    raise InputError(
                        f"{file}: layer {i} {name} has shape {got}, expected {want} (widths "
                        f"{sizes} of a {self.arch!r} router)"
                    )
                bad = ~torch.isfinite(t)
                if bad.any():
                    raise InputError(
                        f"{file}: layer {i} {name} holds {int(bad.sum())} non-finite value(s) "
                        f"(e.g. {t[bad].flatten()[0].item()}); the router cannot be used"
                    )


def expected(p_reasoning, values):
    """``E_{a ~ pi(.|z)}[v(z, a)]`` averaged over pairs: the objective and the constraint of
    Eq. (1) for a policy, with ``values`` the reward ``r(z, a, l)`` or the cost ``c(z, a)``.

    ``values`` has shape ``(n, 2)`` (instruct, reasoning); ``p_reasoning`` is ``pi(1|z)``, shape
    ``(n,)`` or ``(P, n)`` for ``P`` policies at once, which gives ``P`` means. NumPy arrays and
    torch tensors both work, so the trainer's validation pass and the chapters share this one
    definition.
    """
    return ((1 - p_reasoning) * values[:, 0] + p_reasoning * values[:, 1]).mean(-1)
