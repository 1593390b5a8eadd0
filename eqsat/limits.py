"""Limits on saturation, in one object; each can be overridden by an environment variable."""
from __future__ import annotations

import os
from dataclasses import dataclass, field


def _env(name: str, default, cast):
    v = os.environ.get(name)
    return cast(v) if v not in (None, "") else default


@dataclass(frozen=True)
class Limits:
    """Bounds on equality saturation. The best form found so far is used when one is hit.

    nodes:       stop once the e-graph holds more e-nodes than this
    iterations:  rounds of (support rules to saturation + each family once)
    seconds:     wall-clock budget for saturation
    match_limit: back-off scheduler: a rule matching more often than this in a round is
                 banned for `ban_length` rounds (keeps x*y = y*x from exploding)
    chunk:       rounds run per call into egglog while growth is tame (see egraph.saturate)
    support_rounds: at most this many rounds of the fact rules between rewrite rounds
    extract_seconds_per_node: the extraction's cost, used to stop saturation in time for it
    """

    nodes: int = field(default_factory=lambda: _env("EQSAT_NODES", 50_000, int))
    iterations: int = field(default_factory=lambda: _env("EQSAT_ITERATIONS", 30, int))
    seconds: float = field(default_factory=lambda: _env("EQSAT_SECONDS", 10.0, float))
    match_limit: int = field(default_factory=lambda: _env("EQSAT_MATCH_LIMIT", 2_000, int))
    ban_length: int = field(default_factory=lambda: _env("EQSAT_BAN_LENGTH", 3, int))
    chunk: int = field(default_factory=lambda: _env("EQSAT_CHUNK", 6, int))
    support_rounds: int = field(default_factory=lambda: _env("EQSAT_SUPPORT_ROUNDS", 40, int))
    extract_seconds_per_node: float = 3e-5  # measured: bench/stress_bench.py, 2-core VM
