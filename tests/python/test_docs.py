"""test_docs.py — what docs/python.md and docs/protocol.md show is run here: every python block of
docs/python.md, the request/response session of docs/protocol.md (same fields, ok and error code),
and `pip install ./python`. Not a test of behaviour beyond what the pages claim."""
import contextlib
import io
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import SRCDIR, spade_bin


def blocks(path, lang):
    text = open(os.path.join(SRCDIR, path)).read()
    return re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)


@pytest.mark.parametrize("i", range(len(blocks("docs/python.md", "python"))))
def test_python_md_blocks_run(i, monkeypatch):
    monkeypatch.setenv("SPADE_BIN", spade_bin())
    code = blocks("docs/python.md", "python")[i]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"docs/python.md block {i}", "exec"), {"__name__": "__docs__"})
    assert out.getvalue().strip()  # each block prints what it shows


def test_rollout_example_finishes_episodes(monkeypatch):
    monkeypatch.setenv("SPADE_BIN", spade_bin())
    code = [b for b in blocks("docs/python.md", "python") if "def policy" in b][0]
    ns = {"__name__": "__docs__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, ns)
    assert len(ns["finished"]) >= 4
    for steps, ret, won in ns["finished"]:
        assert steps and all(isinstance(p, str) and isinstance(a, str) for p, a, _ in steps)
        assert ret == pytest.approx(sum(r for _, _, r in steps))


def test_protocol_md_session():
    text = open(os.path.join(SRCDIR, "docs/protocol.md")).read()
    reqs = [l[6:] for l in text.splitlines() if l.startswith("    > ")]
    docs = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("    < ")]
    assert len(reqs) == len(docs) >= 8
    out = subprocess.run([spade_bin(), "serve", "--stdio"], input="\n".join(reqs) + "\n", capture_output=True,
                         text=True, timeout=60, cwd=SRCDIR).stdout.splitlines()
    assert len(out) == len(reqs)
    for req, want, got in zip(reqs, docs, map(json.loads, out)):
        assert got["ok"] == want["ok"] and set(got) == set(want), (req, got)
        if not want["ok"]:
            assert got["error"]["code"] == want["error"]["code"], (req, got)
        if "reset" in want:
            assert set(got["reset"]) == set(want["reset"])
    # and the protocol commands it shows parse (`spade serve --help` names every flag the page names)
    helptext = subprocess.run([spade_bin(), "serve", "--help"], capture_output=True, text=True).stdout
    for flag in re.findall(r"`(--[a-z-]+)", text):
        assert flag in helptext, flag


def test_pip_install_python_package(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(tmp_path / "site"), os.path.join(SRCDIR, "python")],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "setuptools" in (r.stderr + r.stdout):
        pytest.skip("no setuptools in this Python to build the package offline: " + r.stderr[-200:])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "site" / "spade" / "__init__.py").exists()
    assert (tmp_path / "site" / "spade" / "py.typed").exists()


def test_readme_python_block_runs(monkeypatch):
    # as written: nothing given to it, SPADE_BIN unset and no spade on PATH, run in the tree
    tree = os.path.dirname(spade_bin())
    monkeypatch.delenv("SPADE_BIN", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + ":/usr/bin:/bin")
    monkeypatch.chdir(tree)
    if not os.path.isdir("stdenv"):
        monkeypatch.chdir(SRCDIR)
    (code,) = blocks("README.md", "python")
    ns = {"__name__": "__docs__"}
    exec(compile(code, "README.md", "exec"), ns)
    assert ns["report"].ok and ns["envs"].num_envs == 256
    assert ns["env"].params["size"] == 7
    ns["envs"].close()
    ns["env"].close()


def test_binary_found_from_the_tree_or_named(monkeypatch, tmp_path):
    from spade._client import find_spade_binary
    monkeypatch.delenv("SPADE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    sub = tmp_path / "tree" / "sub"
    sub.mkdir(parents=True)
    exe = tmp_path / "tree" / "spade"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(sub)
    assert find_spade_binary() == str(exe)  # one directory up, as from python/ in the tree
    exe.chmod(0o644)  # not executable: not taken
    try:
        found = find_spade_binary()
    except FileNotFoundError as e:
        assert str(sub / "spade") in str(e) and "SPADE_BIN" in str(e)
    else:  # the package's own tree has a built ./spade
        assert found != str(exe) and os.access(found, os.X_OK)
