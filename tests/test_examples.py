"""The scripts in examples/ run as a person runs them, print what they show, and save their pictures.

Every script examples/*.py (but the helpers, whose names start with "_") runs
as a subprocess from a scratch directory. With matplotlib, headless
(MPLBACKEND=Agg), each plotting example saves the PNGs that PICTURES lists
into $FGRAD_EXAMPLES_OUT and prints where; with matplotlib hidden, every
example still runs, and each plotting example prints its table and the
install hint instead of saving anything.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
SCRIPTS = sorted(path.name for path in EXAMPLES.glob("*.py") if not path.name.startswith("_"))
INSTALL_HINT = 'pip install "fgrad[examples]"'

# script -> (the pictures it saves, a line of the table it prints without matplotlib)
PICTURES = {
    "e_gradient_descent.py": (["gradient_descent.png"], "epoch 20: x = 0.98847"),
    "j_sine_derivative.py": (["sine_derivative.png"], "   x    sin x     d/dx"),
    "p_rosenbrock.py": (["rosenbrock.png"], "loss at step"),
    "q_least_squares.py": (["least_squares.png"], "y (data)  a x + b"),
}


def run(script: Path, cwd: Path, out: Path | None, hide_matplotlib: bool = False) -> subprocess.CompletedProcess:
    """Run `script` with the repository's fgrad, headless; `out` is $FGRAD_EXAMPLES_OUT (unset if None)."""
    env = {**os.environ, "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(cwd / ".mpl"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("FGRAD_EXAMPLES_OUT", None)
    if out is not None:
        env["FGRAD_EXAMPLES_OUT"] = str(out)
    path = [str(REPO)]
    if hide_matplotlib:  # a package named matplotlib, first on the path, whose import fails
        fake = cwd / "hidden" / "matplotlib"
        fake.mkdir(parents=True, exist_ok=True)
        (fake / "__init__.py").write_text('raise ImportError("matplotlib is hidden by tests/test_examples.py")\n')
        path.insert(0, str(fake.parent))
    env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    return result


def written_into_examples() -> set[Path]:
    """What is in examples/ besides the scripts (a picture saved beside them would show here)."""
    return {path for path in EXAMPLES.rglob("*") if path.suffix != ".py" and "__pycache__" not in path.parts}


def test_the_examples_are_found_and_every_plotting_example_lists_its_pictures():
    assert "a_two_variables.py" in SCRIPTS and "_plotting.py" not in SCRIPTS
    assert set(PICTURES) <= set(SCRIPTS), "PICTURES names an example that does not exist"
    plotting = {name for name in SCRIPTS if "matplotlib" in (EXAMPLES / name).read_text()}
    assert plotting <= set(PICTURES), f"list the pictures of {sorted(plotting - set(PICTURES))} in PICTURES"


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs_and_saves_its_pictures(name, tmp_path):
    before = written_into_examples()
    out = tmp_path / "out"
    result = run(EXAMPLES / name, tmp_path, out)
    assert result.stdout.strip(), f"{name} printed nothing"
    for png in PICTURES.get(name, ([], ""))[0]:
        path = out / png
        assert path.is_file(), f"{name} did not save {png}:\n{result.stdout}"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(path) in result.stdout, f"{name} does not say where it saved {png}"
    assert INSTALL_HINT not in result.stdout
    assert written_into_examples() == before, f"{name} wrote into examples/ despite FGRAD_EXAMPLES_OUT"


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs_without_matplotlib_and_prints_its_table(name, tmp_path):
    out = tmp_path / "out"
    result = run(EXAMPLES / name, tmp_path, out, hide_matplotlib=True)
    if name in PICTURES:
        table_line = PICTURES[name][1]
        assert table_line in result.stdout, f"{name} printed no table:\n{result.stdout}"
        assert INSTALL_HINT in result.stdout
        assert not list(out.glob("*.png"))


def test_pictures_go_to_examples_figures_beside_the_example_by_default(tmp_path):
    examples = tmp_path / "examples"
    examples.mkdir()
    for name in ("_plotting.py", "j_sine_derivative.py"):
        shutil.copy(EXAMPLES / name, examples / name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run(examples / "j_sine_derivative.py", elsewhere, out=None)
    path = examples / "figures" / "sine_derivative.png"
    assert path.is_file() and str(path) in result.stdout
    assert not list(elsewhere.glob("**/*.png"))
