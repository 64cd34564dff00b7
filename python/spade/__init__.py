"""spade — environments written as short C files, compiled and sandboxed by spade, as Gymnasium
environments (docs/python.md).

What it is: ``make``/``make_vec``/``compile`` build ``gymnasium.Env`` and
``gymnasium.vector.VectorEnv`` objects backed by a ``spade serve --stdio`` process (started on
first use; $SPADE_BIN or ``spade`` on PATH); ``check`` runs spade's environment checker; ``info``
and ``list_envs`` describe environments. Pure Python: every environment runs in spade's sandbox,
never in this interpreter.
What it is not: a trainer; see docs/python.md for plugging it into one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from ._client import Client, CompileError, ConnectionLost, EnvFailure, ServerGone, SpadeError, default_client
from .env import SpadeEnv, TextSpace
from .multi import SpadeMultiVectorEnv
from .vector import SpadeVectorEnv

__all__ = ["GYM_ID", "make", "make_vec", "compile", "check", "info", "list_envs", "CheckReport", "CheckLine",
           "Client", "SpadeEnv", "SpadeVectorEnv", "SpadeMultiVectorEnv", "TextSpace", "SpadeError", "EnvFailure",
           "CompileError", "ConnectionLost", "ServerGone", "default_client"]
__version__ = "0.1.0"

#: ``gymnasium.make(GYM_ID, spec="maze:size=5")`` builds a :class:`SpadeEnv` through Gymnasium's
#: registry (with its spec, wrappers and env checker).
GYM_ID = "spade/Spade-v0"


def _register() -> None:
    import gymnasium

    if GYM_ID not in gymnasium.registry:
        gymnasium.register(id=GYM_ID, entry_point="spade.env:SpadeEnv",
                           vector_entry_point="spade.vector:SpadeVectorEnv")


_register()

Params = Union[None, str, Dict[str, float]]


def make(spec: str, *, params: Params = None, client: Optional[Client] = None, **kwargs: Any) -> SpadeEnv:
    """An environment by registry name or file, with params: ``make("maze:size=5")`` or
    ``make("maze", params={"size": 5})``. Raises :class:`CompileError` when the file does not
    compile, :class:`SpadeError` (code ``not_found``, ``bad_params``) for a bad spec."""
    return SpadeEnv(spec, params=params, client=client, **kwargs)


def make_vec(spec: str, num_envs: int = 1, *, workers: int = 1, params: Params = None,
             client: Optional[Client] = None, servers: Optional[List[str]] = None, token: Optional[str] = None,
             **kwargs: Any) -> Union[SpadeVectorEnv, SpadeMultiVectorEnv]:
    """``num_envs`` instances stepped together, one round trip per step, over ``workers``
    sandboxed processes. Follows ``gymnasium.vector.VectorEnv`` (autoreset NEXT_STEP by default;
    ``autoreset_mode="same-step"`` or ``"disabled"`` as in Gymnasium).

    ``servers=["host:port", ...]`` spreads the instances over running ``spade serve --listen``
    servers (``workers`` each), ``token`` their shared token: a :class:`SpadeMultiVectorEnv` that
    plays the same episodes, reconnects to a server that restarts (``retries``, ``backoff``) and
    raises :class:`ServerGone` for one that stays away (docs/scale.md)."""
    if servers is not None:
        if client is not None:
            raise ValueError("give client or servers, not both")
        return SpadeMultiVectorEnv(spec, num_envs, servers=servers, token=token, workers=workers, params=params,
                                   **kwargs)
    return SpadeVectorEnv(spec, num_envs, workers=workers, params=params, client=client, **kwargs)


def compile(source: str, *, params: Params = None, filename: str = "generated.c",
            client: Optional[Client] = None, num_envs: Optional[int] = None,
            **kwargs: Any) -> Union[SpadeEnv, SpadeVectorEnv]:
    """An environment from C source text (what a model just wrote): a :class:`SpadeEnv`, or a
    :class:`SpadeVectorEnv` when ``num_envs`` is given. A source that does not compile raises
    :class:`CompileError` with ``outcome``, ``line`` and tcc's message naming ``filename``."""
    if num_envs is not None:
        return SpadeVectorEnv(None, num_envs, source=source, filename=filename, params=params, client=client,
                              **kwargs)
    return SpadeEnv(None, source=source, filename=filename, params=params, client=client, **kwargs)


@dataclass
class CheckLine:
    """One check of the report: ``status`` pass/fail/warn/skip/info, ``name`` (compile, reset,
    step_deterministic, ...), ``detail`` (the reason or the figures)."""
    status: str
    name: str
    detail: str
    line: str


@dataclass
class CheckReport:
    """spade's checker report as data (core/check.h)."""
    path: str
    passed: int
    failed: int
    warned: int
    result: str
    checks: List[CheckLine] = field(default_factory=list)
    text: str = ""

    @property
    def ok(self) -> bool:
        """Every check passed (warnings allowed)."""
        return self.result == "pass"

    def __getitem__(self, name: str) -> CheckLine:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)


def _looks_like_source(text: str) -> bool:
    return "\n" in text or "ENV(" in text


def check(source_or_spec: Optional[str] = None, *, spec: Optional[str] = None, source: Optional[str] = None,
          params: Params = None, filename: str = "generated.c", seeds: Optional[int] = None,
          solve_seeds: Optional[int] = None, first_seed: Optional[int] = None,
          client: Optional[Client] = None) -> CheckReport:
    """Runs the checker on a spec (``"maze:size=9"``, ``"plugins/x.c"``) or on source text (a
    string with a newline or ``ENV(`` in it is taken as source; say ``spec=``/``source=`` to be
    explicit). A source that does not compile is a report whose ``compile`` check failed, not an
    exception."""
    if source_or_spec is not None:
        if spec is not None or source is not None:
            raise ValueError("give the positional argument or spec=/source=, not both")
        if _looks_like_source(source_or_spec):
            source = source_or_spec
        else:
            spec = source_or_spec
    if (spec is None) == (source is None):
        raise ValueError("give a spec or a source")
    f: Dict[str, Any] = {"spec": spec} if spec is not None else {"source": source, "filename": filename}
    if params:
        f["params"] = params
    for k, v in (("seeds", seeds), ("solve_seeds", solve_seeds), ("first_seed", first_seed)):
        if v is not None:
            f[k] = v
    r = (client or default_client()).request("check", **f)
    return CheckReport(path=r["path"], passed=r["passed"], failed=r["failed"], warned=r["warned"],
                       result=r["result"], checks=[CheckLine(**c) for c in r["checks"]], text=r["text"])


def info(spec: str, *, params: Params = None, client: Optional[Client] = None) -> Dict[str, Any]:
    """An environment's metadata without making it: name, description, family, max_steps, params
    (declared, with ranges), tools, and ``param_values`` for the params given."""
    f: Dict[str, Any] = {"spec": spec}
    if params:
        f["params"] = params
    r = (client or default_client()).request("info", **f)
    out: Dict[str, Any] = dict(r["info"])
    out["path"] = r["path"]
    out["param_values"] = r["param_values"]
    return out


def list_envs(*, load: bool = True, client: Optional[Client] = None) -> List[Dict[str, Any]]:
    """The environments on the server's search path: name, path, shadowed, and (``load``) whether
    it compiled, with its info or its error."""
    envs: List[Dict[str, Any]] = (client or default_client()).request("list", load=load)["envs"]
    return envs
