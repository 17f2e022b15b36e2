"""A wheel built from the tree works where it is installed (issue 19): resources/ and scenarios/
stay at the top of the repository and are mapped into the package at build time, so an installed
kvviz lists the bundled scenarios, resolves their relative paths and draws in the palette's colours.
"""
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _setuptools_new_enough() -> str | None:
    """Why the wheel cannot be built here without a network, or None."""
    try:
        import setuptools
    except ImportError:
        return "setuptools is not installed"
    need = next(r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools"))
    low = tuple(int(x) for x in re.search(r">=\s*([\d.]+)", need).group(1).split("."))
    have = tuple(int(x) for x in re.findall(r"\d+", setuptools.__version__)[:len(low)])
    if have < low:
        return (f"building offline needs {need} in this interpreter (has {setuptools.__version__}); "
                "pip install -e '.[test]' brings it")
    return None


def _copy_tree(dest: Path) -> Path:
    """The files a wheel is built from, copied (a build writes build/ and *.egg-info beside them)."""
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("kvviz", "app", "resources", "scenarios"):
        shutil.copytree(ROOT / name, src / name, ignore=junk)
    return src


@pytest.mark.slow
def test_an_installed_wheel_lists_the_scenarios_and_draws_in_colour(tmp_path):
    why = _setuptools_new_enough()
    if why:
        pytest.skip(why)
    src = _copy_tree(tmp_path)
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-build-isolation", "--no-deps",
                    "--no-index", "-w", str(dist), str(src)], check=True, capture_output=True, cwd=tmp_path)
    wheel = next(dist.glob("kvviz-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    # every package of the tree is in it (found by setup.py, not listed by hand), README figures are not
    for top in ("kvviz", "app"):
        for init in (ROOT / top).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                assert init.relative_to(ROOT).as_posix() in names
    assert not any("screenshots" in n for n in names)
    assert "kvviz/py.typed" in names  # PEP 561: a type checker reads kvviz's annotations

    # A fresh environment: the wheel alone, with the dependencies of this interpreter reached
    # through a .pth file (no network), and neither the tree nor its copy on the path.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    own = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip())
    # (a site-packages folder added by a .pth file has its own .pth files ignored, so an editable
    # install of the tree there does not reach the new environment; the check below proves it)
    deps = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (own / "zz_dependencies.pth").write_text("\n".join(deps) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True, cwd=tmp_path)
    shutil.rmtree(src)

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KVVIZ_SCENARIOS")}
    work = tmp_path / "elsewhere"
    work.mkdir()

    def run(*argv) -> str:
        p = subprocess.run(argv, capture_output=True, text=True, cwd=work, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout

    where = run(str(py), "-c", "import kvviz; print(kvviz.__file__)").strip()
    assert Path(where).is_relative_to(own), where  # the installed copy, not the tree

    listed = run(str(env_dir / "bin" / "kvviz"), "list")
    names = [line.split()[0] for line in listed.splitlines()]
    assert names == sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))
    assert "INVALID" not in listed  # every one loads: their relative paths (a trace) resolve

    out = work / "rope.svg"
    run(str(env_dir / "bin" / "kvviz"), "run", "rope_prefetch_16", "--svg", str(out))
    svg = out.read_text(encoding="utf-8")
    palette = tomllib.loads((ROOT / "resources" / "palette.toml").read_text(encoding="utf-8"))
    for kind in ("fetch", "load", "stall", "compute"):  # the spans this timeline draws
        assert palette["spans"][kind] in svg, kind
    assert "#888888" not in svg  # the grey drawn for a kind the palette does not name
