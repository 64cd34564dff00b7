"""env.py — one spade environment as a ``gymnasium.Env`` with text observations and actions.

What it is: a handle on a server-side environment (one instance in one sandboxed worker); reset,
step, hint and solve are one request each. Seeding follows Gymnasium: ``reset(seed=s)`` re-seeds
``self.np_random`` and plays spade's episode of seed ``s`` (the one ``spade run --seed s`` plays);
``reset()`` plays the episode of a seed drawn from ``self.np_random``, so a seeded sequence of
episodes is reproducible.
What it is not: the vector env (vector.py) nor the wire client (_client.py).
"""

from __future__ import annotations

import string
from typing import Any, Dict, List, Optional, SupportsFloat, Tuple, Union

import gymnasium as gym
from gymnasium import spaces

from ._client import Client, SpadeError, default_client, failure_error

OBS_MAX = 65536
#: Printable ASCII and whitespace: what ``sample()`` draws from.
CHARSET = string.printable


class TextSpace(spaces.Text):
    """A ``gymnasium.spaces.Text`` of any characters: ``contains`` accepts every string of an
    allowed length (environments may say any UTF-8 text; bytes that are not UTF-8 arrive as
    U+FFFD), ``sample`` draws printable ASCII as ``Text`` does from its charset."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None):
        super().__init__(max_length, min_length=min_length, charset=CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TextSpace) and other.min_length == self.min_length
                and other.max_length == self.max_length)

    __hash__ = spaces.Text.__hash__


def episode_seed(rng: Any) -> int:
    """The seed of the next episode when reset is given none (shared with vector.py, so a vector
    env and Gymnasium's SyncVectorEnv of single envs play the same episodes)."""
    return int(rng.integers(0, 2**63))


def _load_fields(spec: Optional[str], source: Optional[str], filename: Optional[str],
                 params: Union[None, str, Dict[str, float]]) -> Dict[str, Any]:
    if (spec is None) == (source is None):
        raise ValueError("give spec or source (not both)")
    f: Dict[str, Any] = {"spec": spec} if spec is not None else {"source": source,
                                                                 "filename": filename or "generated.c"}
    if params:
        f["params"] = params
    return f


def step_info(resp: Dict[str, Any], j: int) -> Dict[str, Any]:
    return {"success": bool(resp["success"][j]), "episode_return": float(resp["return"][j])}


def raise_item_failure(resp: Dict[str, Any], j: int) -> None:
    fails = resp.get("failures")
    if fails and fails[j] is not None:
        raise failure_error(fails[j])


class SpadeEnv(gym.Env[str, str]):
    """A spade environment. Build it with :func:`spade.make` (a registry name or file, with params:
    ``"maze:size=5"``) or :func:`spade.compile` (source text).

    Attributes: ``name``, ``description``, ``family``, ``max_steps``, ``has_solve``, ``params``
    (every param's value, defaults filled), ``param_info`` (declared params: type, default, range),
    ``tools`` (tool calls the environment accepts: name, signature, description), ``spade_info``
    (all of it, as the server sent it), ``path``. ``reset`` returns ``info`` with the episode's
    ``seed``, the ``params`` and the tool names; ``step`` returns ``success`` and
    ``episode_return``."""

    # No render modes: the observation is already the text a person or a model reads.
    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self, spec: Optional[str] = None, *, source: Optional[str] = None,
                 filename: Optional[str] = None, params: Union[None, str, Dict[str, float]] = None,
                 client: Optional[Client] = None, render_mode: Optional[str] = None,
                 max_action_length: int = 4096):
        self._client = client or default_client()
        self._handle: Optional[int] = None
        resp = self._client.request("make", instances=1, workers=1,
                                    **_load_fields(spec, source, filename, params))
        self._handle = int(resp["env"])
        self._set_info(resp)
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r}: spade environments do not render "
                             "(the observation is the text)")
        self.render_mode = None
        self.observation_space = TextSpace(OBS_MAX)
        self.action_space = TextSpace(max_action_length)

    def _set_info(self, resp: Dict[str, Any]) -> None:
        info = resp["info"]
        self.spade_info: Dict[str, Any] = info
        self.path: str = resp["path"]
        self.name: str = info["name"]
        self.description: str = info["description"]
        self.family: str = info["family"]
        self.max_steps: int = int(info["max_steps"])
        self.success_threshold: float = float(info["success"])
        self.has_solve: bool = bool(info["has_solve"])
        self.params: Dict[str, float] = dict(resp["param_values"])
        self.param_info: List[Dict[str, Any]] = list(info["params"])
        self.tools: List[Dict[str, Any]] = list(info["tools"])

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise SpadeError("unknown_handle", "the environment is closed")
        return self._handle

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[str, Dict[str, Any]]:
        super().reset(seed=seed)
        s = int(seed) if seed is not None else episode_seed(self.np_random)
        resp = self._client.request("reset", env=self.handle, ids=[0], seeds=[s])
        raise_item_failure(resp, 0)
        obs: str = resp["obs"][0]
        return obs, self.reset_info(s)

    def reset_info(self, seed: int) -> Dict[str, Any]:
        return {"seed": seed, "params": dict(self.params), "tools": [t["name"] for t in self.tools]}

    def step(self, action: str) -> Tuple[str, SupportsFloat, bool, bool, Dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"a spade action is text (str), not {type(action).__name__}")
        resp = self._client.request("step", env=self.handle, ids=[0], actions=[action])
        raise_item_failure(resp, 0)
        obs: str = resp["obs"][0]
        return (obs, float(resp["reward"][0]), bool(resp["terminated"][0]), bool(resp["truncated"][0]),
                step_info(resp, 0))

    def hint(self) -> str:
        """The environment's privileged hint for the current state (the designer's side)."""
        return str(self._client.request("hint", env=self.handle, instance=0)["text"])

    def solve_action(self) -> str:
        """The reference solver's next action (environments with a SOLVE block)."""
        return str(self._client.request("solve", env=self.handle, instance=0)["action"])

    def close(self) -> None:
        """Frees the server-side environment (its worker is killed). Safe to call twice."""
        h, self._handle = self._handle, None
        if h is not None:
            try:
                self._client.request("close", env=h)
            except SpadeError:
                pass  # the connection is gone: the server has freed it already

    def __del__(self) -> None:
        h, self._handle = getattr(self, "_handle", None), None
        if h is not None:
            self._client.defer_close(h)
