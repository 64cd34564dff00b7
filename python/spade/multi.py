"""multi.py — one Gymnasium vector env over the instances of several spade servers
(``spade.make_vec(spec, n, servers=["host:port", ...], token=...)``, docs/scale.md).

What it is: the ``n`` instances split in contiguous blocks, one per server (the first ``n % S``
servers get one more), each block a :class:`SpadeVectorEnv` on its own connection; a step sends
every block its actions at once (one thread per server: the servers step in parallel) and joins
the answers in instance order. Instance ``i`` gets the seed ``s + i`` from ``reset(seed=s)`` and
its autoreset seeds from its own generator, as in one vector env, so the episodes are the ones
``make_vec(spec, n)`` plays on one server (tests/python/test_servers.py checks it step by step).
A server that restarts is reconnected and its episodes replayed (vector.py); one that stays
away raises :class:`spade.ServerGone` naming it.
What it is not: a load balancer (the split is fixed when the env is made) nor a pool that moves
instances off a server that is gone.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._client import tcp_address
from .vector import SpadeVectorEnv


def _merge(parts: Sequence[Dict[str, Any]], starts: Sequence[int], n: int) -> Dict[str, Any]:
    """The infos of the blocks as one vector env's: every array of length n, a block's entries at
    its offset, zeros (None for object arrays) where a block had none (as Gymnasium's _add_info)."""
    out: Dict[str, Any] = {}
    keys: List[str] = []
    for d in parts:
        keys += [k for k in d if k not in keys]
    for key in keys:
        have = [(k, d[key]) for k, d in enumerate(parts) if key in d]
        first = have[0][1]
        if isinstance(first, dict):
            out[key] = _merge([d.get(key, {}) for d in parts], starts, n)
            continue
        arr = np.asarray(first)
        full = np.full(n, None, dtype=object) if arr.dtype == object else np.zeros(n, dtype=arr.dtype)
        for k, v in have:
            full[starts[k]:starts[k + 1]] = v
        out[key] = full
    return out


class SpadeMultiVectorEnv(VectorEnv):
    """``num_envs`` instances of one environment spread over ``servers`` (``"host:port"``,
    ``"tcp:host:port"`` or ``"unix:PATH"``); see :func:`spade.make_vec`. ``token`` is the servers'
    shared token; ``retries`` and ``backoff`` bound the reconnection to a server that went away."""

    def __init__(self, spec: Optional[str] = None, num_envs: int = 1, *, servers: Sequence[str],
                 token: Optional[str] = None, workers: int = 1, retries: int = 5, backoff: float = 0.25,
                 autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.NEXT_STEP, **kwargs: Any):
        if not servers:
            raise ValueError("servers: give at least one HOST:PORT")
        if num_envs < 1:
            raise ValueError("num_envs must be at least 1")
        addrs = [tcp_address(s) for s in servers]
        S = len(addrs)
        sizes = [num_envs // S + (1 if k < num_envs % S else 0) for k in range(S)]
        self.servers = [a for a, m in zip(addrs, sizes) if m]
        sizes = [m for m in sizes if m]
        self._starts = [0]
        for m in sizes:
            self._starts.append(self._starts[-1] + m)
        self.parts: List[SpadeVectorEnv] = []
        try:
            for a, m in zip(self.servers, sizes):
                self.parts.append(SpadeVectorEnv(spec, m, workers=workers, address=a, token=token, retries=retries,
                                                 backoff=backoff, autoreset_mode=autoreset_mode, **kwargs))
        except BaseException:
            for p in self.parts:
                p.close()
            raise
        head = self.parts[0]
        self.spade_info, self.name, self.params = head.spade_info, head.name, head.params
        self.tools, self.has_solve, self.path = head.tools, head.has_solve, head.path
        self.num_envs = num_envs
        self.autoreset_mode = head.autoreset_mode
        self.metadata = dict(head.metadata)
        self.single_observation_space = head.single_observation_space
        self.single_action_space = head.single_action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._pool = ThreadPoolExecutor(max_workers=len(self.parts)) if len(self.parts) > 1 else None

    def _each(self, fn: Any, args: Sequence[Any]) -> List[Any]:
        if self._pool is None:
            return [fn(p, a) for p, a in zip(self.parts, args)]
        futs = [self._pool.submit(fn, p, a) for p, a in zip(self.parts, args)]
        return [f.result() for f in futs]  # the first error (ServerGone, EnvFailure) is raised here

    def _slices(self, xs: Sequence[Any]) -> List[Sequence[Any]]:
        return [xs[self._starts[k]:self._starts[k + 1]] for k in range(len(self.parts))]

    def reset(self, *, seed: Union[None, int, Sequence[Optional[int]]] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[Tuple[str, ...], Dict[str, Any]]:
        n = self.num_envs
        if seed is None:
            seeds: List[Optional[int]] = [None] * n
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"seed list of length {len(seeds)}; num_envs is {n}")
        mask = None
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({n},) with a True")
        masks = self._slices(mask) if mask is not None else [None] * len(self.parts)

        def one(p: SpadeVectorEnv, a: Tuple[Sequence[Optional[int]], Any]) -> Tuple[Tuple[str, ...], Dict[str, Any]]:
            sd, m = a
            if m is not None and not np.any(m):
                return tuple(p._obs), {}  # nothing of this block is reset
            opts = dict(options or {})
            if m is not None:
                opts["reset_mask"] = np.asarray(m).copy()
            return p.reset(seed=list(sd), options=opts or None)

        got = self._each(one, list(zip(self._slices(seeds), masks)))
        obs = tuple(o for g in got for o in g[0])
        return obs, _merge([g[1] for g in got], self._starts, n)

    def step(self, actions: Sequence[str]) -> Tuple[Tuple[str, ...], np.ndarray, np.ndarray, np.ndarray,
                                                    Dict[str, Any]]:
        n = self.num_envs
        if len(actions) != n:
            raise ValueError(f"{len(actions)} actions for {n} environments")
        got = self._each(lambda p, a: p.step(a), self._slices(list(actions)))
        obs = tuple(o for g in got for o in g[0])
        rewards = np.concatenate([g[1] for g in got])
        terms = np.concatenate([g[2] for g in got])
        truncs = np.concatenate([g[3] for g in got])
        return obs, rewards, terms, truncs, _merge([g[4] for g in got], self._starts, n)

    def _part_of(self, i: int) -> Tuple[SpadeVectorEnv, int]:
        if not 0 <= i < self.num_envs:
            raise IndexError(f"instance {i} of {self.num_envs}")
        k = max(j for j in range(len(self.parts)) if self._starts[j] <= i)
        return self.parts[k], i - self._starts[k]

    def hint(self, i: int = 0) -> str:
        """Instance i's privileged hint."""
        p, j = self._part_of(i)
        return p.hint(j)

    def solve_actions(self) -> List[str]:
        """The reference solver's next action for every instance."""
        return [a for p in self.parts for a in p.solve_actions()]

    def close_extras(self, **kwargs: Any) -> None:
        for p in self.parts:
            p.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
