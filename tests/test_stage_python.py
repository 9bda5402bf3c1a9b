"""Stages run under the interpreter of the DVC that launched them (stages/python): a real
`dvc repro` of a one-stage pipeline, started as `.venv/bin/dvc` with a PATH that lacks the venv,
runs its stage with the venv's python (the one that imports mambomeme)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DVC = Path(sys.executable).parent / "dvc"
BARE_PATH = "/usr/bin:/bin"  # no venv


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    """A DVC repository whose one stage records the interpreter it ran under."""
    repo = tmp_path / "repo"
    (repo / "stages").mkdir(parents=True)
    shutil.copy2(ROOT / "stages" / "python", repo / "stages" / "python")
    (repo / "stages" / "probe.py").write_text(
        "import sys\nimport mambomeme\n"
        "open('ran.txt', 'w').write(sys.executable + '\\n' + mambomeme.__file__)\n"
    )
    stage = {"cmd": "stages/python stages/probe.py", "deps": ["stages/probe.py"],
             "outs": [{"ran.txt": {"cache": False}}]}  # fmt: skip
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"probe": stage}}))
    env = {**os.environ, "PATH": BARE_PATH}
    subprocess.run([str(DVC), "init", "--no-scm", "-q"], cwd=repo, env=env, check=True)
    return repo


def _repro(repo: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": BARE_PATH, "HOME": os.environ.get("HOME", "/tmp"),
           "PYTHONPATH": str(ROOT), **extra}  # fmt: skip
    return subprocess.run(
        [str(DVC), "repro", "--no-commit"], cwd=repo, env=env, capture_output=True, text=True
    )


def test_dvc_from_the_venv_runs_stages_with_the_venv_python(tiny_repo: Path) -> None:
    assert shutil.which("dvc", path=BARE_PATH) is None  # the venv is really off PATH
    done = _repro(tiny_repo)
    assert done.returncode == 0, done.stdout + done.stderr
    executable, module = (tiny_repo / "ran.txt").read_text().splitlines()
    assert Path(executable) == Path(sys.executable).parent / Path(executable).name
    assert Path(executable).parent == DVC.parent  # the interpreter named by dvc's shebang
    assert Path(module).is_relative_to(ROOT / "mambomeme")


def test_mambomeme_python_overrides(tiny_repo: Path) -> None:
    done = _repro(tiny_repo, MAMBOMEME_PYTHON=sys.executable)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tiny_repo / "ran.txt").read_text().splitlines()[0] == sys.executable


def test_every_pipeline_stage_runs_through_stages_python() -> None:
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        cmd = stage.get("do", stage)["cmd"]
        assert cmd.startswith("stages/python "), (name, cmd)
