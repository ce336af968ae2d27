"""Step-time factors of the software stacks (issue 32 d): cited priors refined only where the data separates them.

A stack's factor is its step time over plain eager PyTorch's for the same model, GPU, precision and batch
(planner.vocab.SOFTWARE_STACKS; pytorch_eager is 1 by definition). `calibration/stack_priors.yaml` holds the prior of
each stack with the public figures it stands on (schema trainplan.stack-priors/1): a multiplier and its spread in
log space. The corpus refines a prior only through **pairs**: rows of one source that time the same model on the
same GPU at the same precision, batch, sequence length and adapter under two stacks (a source that publishes
several stacks). Two different sources on the same GPU never form a pair here: their difference is the sources',
not the stacks' (per-source offsets are the joint model's random effects, a later slice).

The posterior is the least-squares solution in log space of
    Σ_pairs (log(t_a / t_b) − (x_a − x_b))² / σ_pair² + Σ_stacks (x_s − log prior_s)² / σ_s²
with x_eager = 0: linear, deterministic, closed form (a ridge regression whose ridge is the prior). σ_pair = 0.1 (a
pair of one source's figures agrees to about 10%: the run-to-run noise the corpus's repeated rows show).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from planner.inputs import loader
from planner.inputs.check import Reader
from planner.vocab import SOFTWARE_STACKS

SCHEMA = "trainplan.stack-priors/1"
PRIORS_PATH = Path(__file__).resolve().parent / "stack_priors.yaml"
PRIORS_FILE = loader.FileKind("stack priors (YAML)", "yaml", 1 * loader.MIB)
REFERENCE = "pytorch_eager"
PAIR_LOG_SD = 0.1


@dataclass(frozen=True)
class StackPrior:
    stack: str
    factor: float  # time multiplier against pytorch_eager
    log_sd: float  # its spread in log space (1 sigma)
    evidence: tuple[str, ...]  # the citations it stands on


@dataclass(frozen=True)
class Pair:
    """One source's two stacks on one configuration: log(t_a / t_b)."""

    stack_a: str
    stack_b: str
    log_ratio: float
    where: str


def parse_priors(data: object, source: str) -> dict[str, StackPrior]:
    r = Reader(data, source)
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)
    stacks = r.sub("stacks")
    if stacks is None:
        raise r.fail("stacks", None, "an object: stack -> {factor, log_sd, evidence}")
    out: dict[str, StackPrior] = {}
    for name in stacks.data:
        if name not in SOFTWARE_STACKS:
            raise stacks.fail(name, name, "a stack of planner.vocab.SOFTWARE_STACKS")
        entry = stacks.sub(name)
        if entry is None:
            raise stacks.fail(name, None, "an object with factor, log_sd and evidence")
        evidence = tuple(str(e) for e in entry.list_of("evidence", max_items=50))
        if not evidence:
            raise entry.fail("evidence", [], "at least one citation")
        out[name] = StackPrior(name, float(entry.number("factor", minimum=0.05, maximum=20.0)),
                               float(entry.number("log_sd", minimum=0.01, maximum=3.0)), evidence)
    if out.get(REFERENCE) is not None and out[REFERENCE].factor != 1.0:
        raise stacks.fail(REFERENCE, out[REFERENCE].factor, "1 (the reference)")
    return out


def load_priors(path: str | Path = PRIORS_PATH) -> Mapping[str, StackPrior]:
    """The priors file, read once per path (calibration_report refits some thirty times)."""
    return _load_priors(str(path))


@functools.lru_cache(maxsize=8)
def _load_priors(path: str) -> Mapping[str, StackPrior]:
    return MappingProxyType(parse_priors(loader.load_file(path, PRIORS_FILE), path))


def pairs_of(points: Iterable[Any]) -> list[Pair]:
    """Same-source pairs of stacks among calibration_report Points (source, gpu, model, precision, micro_batch,
    seq_len, adapter kind equal; stacks differ): each stack's median time against the first stack's."""
    groups: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        if p.stack not in SOFTWARE_STACKS:
            continue
        adapter = (p.adapter or {}).get("kind") if p.adapter else None
        key = (p.source, p.gpu, p.model, p.precision, p.micro_batch, p.seq_len, adapter)
        groups[key][p.stack].append(p.published_s)
    out = []
    for key, by_stack in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len(by_stack) < 2:
            continue
        stacks = sorted(by_stack)
        medians = {s: sorted(v)[len(v) // 2] for s, v in by_stack.items()}
        first = stacks[0]
        for other in stacks[1:]:
            out.append(Pair(other, first, math.log(medians[other] / medians[first]),
                            f"{key[0]}: {key[2]} on {key[1]}"))
    return out


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the system is small and positive definite)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def posterior(priors: Mapping[str, StackPrior], pairs: Sequence[Pair]) -> tuple[dict[str, float], dict[str, str]]:
    """(factor per stack, basis per stack): the priors refined by the pairs (module docstring). Stacks without a
    prior keep no factor (1, the reference's) unless a pair ties them to one that has."""
    names: list[str] = [s for s in SOFTWARE_STACKS if s != REFERENCE and s in priors]
    index = {s: i for i, s in enumerate(names)}
    n = len(names)
    a = [[0.0] * n for _ in range(n)]
    b = [0.0] * n
    for s, i in index.items():
        w = 1.0 / priors[s].log_sd ** 2
        a[i][i] += w
        b[i] += w * math.log(priors[s].factor)
    used: dict[str, int] = defaultdict(int)
    w_pair = 1.0 / PAIR_LOG_SD ** 2
    for pair in pairs:
        ia, ib = index.get(pair.stack_a), index.get(pair.stack_b)
        if (ia is None and pair.stack_a != REFERENCE) or (ib is None and pair.stack_b != REFERENCE):
            continue
        used[pair.stack_a] += 1
        used[pair.stack_b] += 1
        signed = [(k, sign) for k, sign in ((ia, 1.0), (ib, -1.0)) if k is not None]
        for i, sign_i in signed:
            b[i] += w_pair * sign_i * pair.log_ratio
            for j, sign_j in signed:
                a[i][j] += w_pair * sign_i * sign_j
    x = _solve(a, b) if n else []
    factors = {s: math.exp(x[i]) for s, i in index.items()}
    basis = {s: f"prior + {used[s]} pair{'s' if used[s] != 1 else ''}" if used[s] else "prior" for s in names}
    return factors, basis
