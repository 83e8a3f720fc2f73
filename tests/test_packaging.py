"""The built wheel works outside the checkout: ``kgrag demo`` from an empty folder.

A normal ``pip install kgrag`` gets no ``examples/`` folder, so everything the demo reads must be
package data. This test builds the wheel from the working tree, installs it (without
dependencies) into a fresh virtual environment whose only other import path is the project
venv's site-packages (the dependencies, offline), and runs the ``kgrag`` script that pip wrote
from a temporary directory, with ``PYTHONPATH`` cleared so the checkout cannot leak in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300)
    (built,) = out.glob("kgrag-*.whl")
    return built


def test_wheel_carries_demo_data_license_and_type_markers(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kgrag/data/movies.tsv" in names
    assert "kgrag/py.typed" in names
    # UltRAG's neural executor works offline after pip install: checkpoint + its MIT notice
    assert {"kgrag/methods/ultrag/weights/ultraquery.npz",
            "kgrag/methods/ultrag/weights/LICENSE"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)[-8:]


@pytest.mark.slow
def test_kgrag_demo_runs_from_an_empty_folder_after_installing_the_wheel(wheel, tmp_path):
    # No PYTHONPATH anywhere: a checkout on it (with the egg-info a wheel build leaves) would
    # make pip believe kgrag is installed already and Python import the checkout.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KGRAG_DEMO_DATA")}
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    new_python = env_dir / "bin" / "python"
    site = subprocess.run([str(new_python), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(new_python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)],
                   env=env, check=True, capture_output=True, text=True, timeout=300)
    # Dependencies come from the project venv (offline); a plain path entry, so the project
    # venv's editable-install hooks (.pth files) are not run and the checkout stays invisible.
    # Written after the install: pip would otherwise see the editable kgrag and skip the wheel.
    Path(site, "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    workdir = tmp_path / "empty"
    workdir.mkdir()
    where = subprocess.run([str(new_python), "-c", "import kgrag; print(kgrag.__file__)"],
                           cwd=workdir, env=env, check=True, capture_output=True, text=True)
    assert str(env_dir) in where.stdout, where.stdout  # the wheel, not the checkout
    demo = subprocess.run([str(env_dir / "bin" / "kgrag"), "demo"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "Tokyo Godfathers" in demo.stdout
    assert "executed by UltraQuery (neural, zero-shot)" in demo.stdout  # packaged checkpoint
    assert "Traceback" not in demo.stderr
