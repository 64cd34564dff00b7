"""vector.py — N instances of one spade environment as a ``gymnasium.vector.VectorEnv``.

What it is: Gymnasium's vector API over spade's batched stepping. A step is one request (one
round trip) whatever N is: the actions of the running instances and, under the NEXT_STEP
autoreset mode (Gymnasium's default), the resets of the instances that ended on the previous
step travel together, and the server steps them in one batch per worker (several workers step in
parallel). Seeds follow Gymnasium's SyncVectorEnv exactly: ``reset(seed=s)`` gives instance i the
seed ``s + i``; an instance reset without a seed (an autoreset) draws its episode seed from its own
``np_random`` as :class:`spade.SpadeEnv` does, so ``make_vec(spec, n)`` plays the same episodes as
``SyncVectorEnv([lambda: make(spec)] * n)`` (tests/python/test_vector.py checks it).
A vector env given the ``address`` of a server (what ``make_vec(servers=...)`` does for each of
its servers, multi.py) survives the server's restart: it records each instance's episode seed and
actions, and when the connection breaks it reconnects (``retries`` tries, waits doubling from
``backoff`` seconds), makes the environment again, replays every live episode to where it was, and
sends the request again, so the episodes go on as if nothing happened; a server still unreachable
after the retries raises :class:`ServerGone` naming it.
What it is not: an async vector env (the batch is already parallel on the server's side).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._client import Client, ConnectionLost, ServerGone, SpadeError, default_client, failure_error
from .env import OBS_MAX, TextSpace, _load_fields, episode_seed


class SpadeVectorEnv(VectorEnv):
    """``num_envs`` instances of one environment (see :func:`spade.make_vec`). ``workers``
    sandboxed worker processes share the instances (instance i on worker i % workers).
    Observations are a tuple of str, actions a sequence of str; rewards float64, terminations
    and truncations bool arrays; infos follow Gymnasium's vector convention (``key`` and
    ``_key`` arrays)."""

    def __init__(self, spec: Optional[str] = None, num_envs: int = 1, *, source: Optional[str] = None,
                 filename: Optional[str] = None, params: Union[None, str, Dict[str, float]] = None,
                 workers: int = 1, client: Optional[Client] = None,
                 autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.NEXT_STEP,
                 max_action_length: int = 4096, address: Optional[str] = None, token: Optional[str] = None,
                 retries: int = 5, backoff: float = 0.25):
        if num_envs < 1:
            raise ValueError("num_envs must be at least 1")
        if retries < 0 or backoff < 0:
            raise ValueError("retries and backoff must not be negative")
        self._address, self._token, self._retries, self._backoff = address, token, retries, backoff
        self._handle: Optional[int] = None
        self._make_fields: Dict[str, Any] = dict(instances=num_envs, workers=workers,
                                                 **_load_fields(spec, source, filename, params))
        if client is None and address is not None:
            client = self._connect_retrying(None)
        self._client = client or default_client()
        # what a replay after a reconnect needs: each instance's episode seed and its actions since
        self._replayable = address is not None
        self._ep_seed: List[Optional[int]] = [None] * num_envs
        self._hist: List[List[str]] = [[] for _ in range(num_envs)]
        resp = self._client.request("make", **self._make_fields)
        self._handle = int(resp["env"])
        info = resp["info"]
        self.spade_info: Dict[str, Any] = info
        self.name: str = info["name"]
        self.params: Dict[str, float] = dict(resp["param_values"])
        self.tools: List[Dict[str, Any]] = list(info["tools"])
        self.has_solve: bool = bool(info["has_solve"])
        self.path: str = resp["path"]
        self.workers: int = int(resp["workers"])
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.single_observation_space = TextSpace(OBS_MAX)
        self.single_action_space = TextSpace(max_action_length)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rngs: List[Optional[np.random.Generator]] = [None] * num_envs
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)
        self._obs: List[str] = [""] * num_envs
        self._all_ids = list(range(num_envs))
        self._step_prefix: Optional[bytes] = None

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise SpadeError("unknown_handle", "the vector environment is closed")
        return self._handle

    # ---- a server that restarts: reconnect, make again, replay --------------------------------------
    def _connect_retrying(self, cause: Optional[BaseException]) -> Client:
        """A new connection to self._address: a try now, then up to ``retries`` more after waits that
        double from ``backoff`` s (at most 5 s each); ServerGone when none succeeds."""
        assert self._address is not None
        t0 = time.monotonic()
        last: Optional[BaseException] = cause
        delay = self._backoff
        for k in range(self._retries + 1):
            if k:
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
            try:
                return Client(self._address, token=self._token, timeout=10.0)
            except SpadeError as e:
                if e.code == "unauthorized":
                    raise  # a wrong token stays wrong
                last = e
            except OSError as e:
                last = e
        raise ServerGone(self._address, f"server {self._address} is gone: no connection after {self._retries + 1} "
                                        f"tries over {time.monotonic() - t0:.1f} s (last: {last})")

    def _reconnect(self, cause: BaseException) -> None:
        """After a broken connection: a new one, the environment made again, every episode replayed."""
        try:
            self._client.close()
        except OSError:
            pass
        for _ in range(self._retries + 1):
            self._client = self._connect_retrying(cause)
            try:
                self._restore()
                logging.getLogger("spade").warning("spade: %s: reconnected after %s; replayed the live episodes",
                                                   self._address, cause)
                return
            except ConnectionLost as e:  # it went away again during the replay
                cause = e
        raise ServerGone(str(self._address), f"server {self._address} keeps going away (last: {cause})")

    def _restore(self) -> None:
        resp = self._client.request("make", **self._make_fields)
        self._handle = int(resp["env"])
        self._step_prefix = None
        live = [i for i in range(self.num_envs) if self._ep_seed[i] is not None]
        if live:
            self._client.request("reset", env=self._handle, ids=live, seeds=[self._ep_seed[i] for i in live])
        t = 0
        while True:  # the recorded actions, round by round (an instance's t-th action in round t)
            ids = [i for i in live if len(self._hist[i]) > t]
            if not ids:
                break
            self._client.request("step", env=self._handle, ids=ids, actions=[self._hist[i][t] for i in ids])
            t += 1

    def _req(self, op: str, **fields: Any) -> Dict[str, Any]:
        if not self._replayable:
            return self._client.request(op, **fields)
        for _ in range(self._retries + 1):
            try:
                if "env" in fields:
                    fields["env"] = self.handle
                return self._client.request(op, **fields)
            except ConnectionLost as e:
                self._reconnect(e)
        raise ServerGone(str(self._address), f"server {self._address} keeps going away")

    def _started(self, ids: Sequence[int], seeds: Sequence[int]) -> None:
        if self._replayable:
            for i, sd in zip(ids, seeds):
                self._ep_seed[i] = int(sd)
                self._hist[i] = []

    def _played(self, ids: Sequence[int], acts: Sequence[str]) -> None:
        if self._replayable:
            for i, a in zip(ids, acts):
                self._hist[i].append(a)

    def _seed_for(self, i: int, seed: Optional[int]) -> int:
        if seed is not None:
            self._rngs[i], _ = seeding.np_random(int(seed))
            return int(seed)
        if self._rngs[i] is None:
            self._rngs[i], _ = seeding.np_random()
        return episode_seed(self._rngs[i])

    def _reset_info(self, i: int, seed: int) -> Dict[str, Any]:
        return {"seed": seed, "params": dict(self.params), "tools": [t["name"] for t in self.tools]}

    def _add_reset_infos(self, infos: Dict[str, Any], ids: Sequence[int], seeds: Sequence[int]) -> Dict[str, Any]:
        """What _add_info(infos, self._reset_info(i, seed), i) for each i gives, built at once (the
        same arrays and dtypes: int64 seeds, a params dict of arrays, an object array of tool lists)."""
        n = self.num_envs
        if not ids:
            return infos
        mask = np.zeros(n, dtype=np.bool_)
        mask[list(ids)] = True
        seed_arr = np.zeros(n, dtype=int)
        seed_arr[list(ids)] = seeds
        infos["seed"], infos["_seed"] = seed_arr, mask
        params: Dict[str, Any] = {}
        for k, v in self.params.items():
            arr = np.zeros(n, dtype=type(v))
            arr[list(ids)] = v
            params[k], params["_" + k] = arr, mask.copy()
        infos["params"], infos["_params"] = params, mask.copy()
        tools = np.full(n, fill_value=None, dtype=object)
        names = [t["name"] for t in self.tools]
        for i in ids:
            tools[i] = list(names)
        infos["tools"], infos["_tools"] = tools, mask.copy()
        return infos

    @staticmethod
    def _check(resp: Dict[str, Any]) -> None:
        fails = resp.get("failures")
        if fails:
            for f in fails:
                if f is not None:
                    raise failure_error(f)

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
        mask = np.ones(n, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({n},) with a True")
        ids = [i for i in range(n) if mask[i]]
        ep_seeds = [self._seed_for(i, seeds[i]) for i in ids]
        resp = self._req("reset", env=self.handle, ids=ids, seeds=ep_seeds)
        self._started(ids, ep_seeds)
        self._check(resp)
        for j, i in enumerate(ids):
            self._obs[i] = resp["obs"][j]
            self._autoreset[i] = False
        return tuple(self._obs), self._add_reset_infos({}, ids, ep_seeds)

    def step(self, actions: Sequence[str]) -> Tuple[Tuple[str, ...], np.ndarray, np.ndarray, np.ndarray,
                                                    Dict[str, Any]]:
        n = self.num_envs
        if len(actions) != n:
            raise ValueError(f"{len(actions)} actions for {n} environments")
        if self.autoreset_mode != AutoresetMode.SAME_STEP and not self._autoreset.any():
            return self._step_all(actions)
        rewards = np.zeros(n, dtype=np.float64)
        terms = np.zeros(n, dtype=np.bool_)
        truncs = np.zeros(n, dtype=np.bool_)
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            raise SpadeError("bad_value", "autoreset is disabled: reset the ended environments first "
                                          "(reset(options={'reset_mask': ...}))")
        if next_step:
            resetting: List[int] = np.flatnonzero(self._autoreset).tolist()
            stepping: List[int] = np.flatnonzero(~self._autoreset).tolist()
        else:
            resetting, stepping = [], self._all_ids
        acts = [actions[i] for i in stepping]
        for i, a in zip(stepping, acts):
            if not isinstance(a, str):
                raise TypeError(f"action {i} is {type(a).__name__}; spade actions are text (str)")
        fields: Dict[str, Any] = {"env": self.handle, "ids": stepping, "actions": acts}
        r_seeds = [self._seed_for(i, None) for i in resetting]
        if resetting:
            fields["reset"] = {"ids": resetting, "seeds": r_seeds}
        resp = self._req("step", **fields)
        self._started(resetting, r_seeds)
        self._played(stepping, acts)
        if "failures" in resp:
            self._check(resp)
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        # Infos as SyncVectorEnv's _add_info builds them (bool and float64 arrays with "_key" masks),
        # but for all stepped instances at once: per instance it would cost more than the step.
        infos: Dict[str, Any] = {}
        if stepping:
            if len(stepping) == n:
                self._obs = list(resp["obs"])
                rewards[:] = resp["reward"]
                terms[:] = resp["terminated"]
                truncs[:] = resp["truncated"]
            else:
                idx = np.asarray(stepping)
                for j, i in enumerate(stepping):
                    self._obs[i] = resp["obs"][j]
                rewards[idx] = resp["reward"]
                terms[idx] = resp["terminated"]
                truncs[idx] = resp["truncated"]
            ended = [i for i in stepping if terms[i] or truncs[i]] if same_step else []
            shown = np.zeros(n, dtype=np.bool_)
            shown[stepping] = True
            shown[ended] = False  # SAME_STEP: their step info goes into final_info
            succ = np.zeros(n, dtype=np.bool_)
            rets = np.zeros(n, dtype=np.float64)
            succ[stepping] = resp["success"]
            rets[stepping] = resp["return"]
            succ[~shown] = False
            rets[~shown] = 0.0
            if shown.any():
                infos = {"success": succ, "_success": shown, "episode_return": rets, "_episode_return": shown.copy()}
        else:
            ended = []
        if resetting:
            rr = resp["reset"]
            if "failures" in rr:
                self._check(rr)
            for j, i in enumerate(resetting):
                self._obs[i] = rr["obs"][j]
            infos = self._add_reset_infos(infos, resetting, r_seeds)
        if ended:
            pos = {i: j for j, i in enumerate(stepping)}
            for i in ended:
                j = pos[i]
                final = {"success": bool(resp["success"][j]), "episode_return": float(resp["return"][j])}
                infos = self._add_info(infos, {"final_obs": self._obs[i], "final_info": final}, i)
            e_seeds = [self._seed_for(i, None) for i in ended]
            rr = self._req("reset", env=self.handle, ids=ended, seeds=e_seeds)
            self._started(ended, e_seeds)
            self._check(rr)
            for j, i in enumerate(ended):
                self._obs[i] = rr["obs"][j]
            infos = self._add_reset_infos(infos, ended, e_seeds)
        self._autoreset = np.logical_or(terms, truncs) if not same_step else np.zeros(n, dtype=np.bool_)
        return tuple(self._obs), rewards, terms, truncs, infos

    def _step_all(self, actions: Sequence[str]) -> Tuple[Tuple[str, ...], np.ndarray, np.ndarray, np.ndarray,
                                                        Dict[str, Any]]:
        # Every instance steps (no autoreset due): the common case, built column by column.
        acts = list(actions)
        for i, a in enumerate(acts):
            if type(a) is not str and not isinstance(a, str):
                raise TypeError(f"action {i} is {type(a).__name__}; spade actions are text (str)")
        body = json.dumps(acts).encode() + b"}\n"
        for attempt in range(self._retries + 1 if self._replayable else 1):
            if self._step_prefix is None:
                self._step_prefix = ('{"op":"step","env":%d,"ids":%s,"actions":'
                                     % (self.handle, json.dumps(self._all_ids, separators=(",", ":")))).encode()
            try:
                resp = self._client.request_line(self._step_prefix + body)
                break
            except ConnectionLost as e:
                if not self._replayable:
                    raise
                self._reconnect(e)  # a new handle: the prefix is made again
        else:
            raise ServerGone(str(self._address), f"server {self._address} keeps going away")
        self._played(self._all_ids, acts)
        if "failures" in resp:
            self._check(resp)
        n = self.num_envs
        self._obs = resp["obs"]
        rewards = np.array(resp["reward"], dtype=np.float64)
        terms = np.array(resp["terminated"], dtype=np.bool_)
        truncs = np.array(resp["truncated"], dtype=np.bool_)
        infos = {"success": np.array(resp["success"], dtype=np.bool_), "_success": np.ones(n, dtype=np.bool_),
                 "episode_return": np.array(resp["return"], dtype=np.float64),
                 "_episode_return": np.ones(n, dtype=np.bool_)}
        self._autoreset = terms | truncs
        return tuple(self._obs), rewards, terms, truncs, infos

    def hint(self, i: int = 0) -> str:
        """Instance i's privileged hint."""
        return str(self._req("hint", env=self.handle, instance=i)["text"])

    def solve_actions(self) -> List[str]:
        """The reference solver's next action for every instance (one request each)."""
        return [str(self._req("solve", env=self.handle, instance=i)["action"])
                for i in range(self.num_envs)]

    def close_extras(self, **kwargs: Any) -> None:
        h, self._handle = self._handle, None
        if h is not None:
            try:
                self._client.request("close", env=h)
            except SpadeError:
                pass
            if self._address is not None:  # the connection is this env's own
                self._client.close()

    def __del__(self) -> None:
        h, self._handle = getattr(self, "_handle", None), None
        if h is not None:
            self._client.defer_close(h)
