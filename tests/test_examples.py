"""The scripts in examples/ run as a person runs them, print what they show, and save their pictures.

Every script examples/*.py (but the helpers, whose names start with "_") runs
as a subprocess from a scratch directory. With matplotlib, headless
(MPLBACKEND=Agg), each plotting example saves the PNGs that PICTURES lists
into $FGRAD_EXAMPLES_OUT and prints where; with matplotlib hidden, every
example still runs, and each plotting example prints its table and the
install hint instead of saving anything.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
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
    "r_mlp_jit_adam.py": (["loss_curve.png"], " step       mse"),
    "t_odeint.py": (["odeint.png"], "    t  x, c = 0.2  x, c = 0.5  x, c = 1.5"),
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


# --- what the examples claim, against closed forms and plain NumPy (never fgrad's own output) ---


def printed(name: str, tmp_path: Path) -> str:
    """What the example `name` prints (matplotlib hidden: no picture is drawn)."""
    return run(EXAMPLES / name, tmp_path, tmp_path / "out", hide_matplotlib=True).stdout


def numbers(pattern: str, text: str) -> list[float]:
    """The numbers of the groups of `pattern`'s first match in `text`."""
    match = re.search(pattern, text)
    assert match, f"no line matches {pattern!r} in:\n{text}"
    return [float(g) for g in match.groups()]


NUMBER = r"(-?[0-9.]+(?:e[-+]?[0-9]+)?)"


def test_the_mlp_starts_from_the_loss_numpy_computes_and_ends_near_the_noise(tmp_path):
    out = printed("r_mlp_jit_adam.py", tmp_path)
    rng = np.random.default_rng(0)  # the example's data and initialisation, in NumPy
    xs = rng.uniform(-1, 1, (64, 1))
    ys = np.sin(3 * xs) + 0.05 * rng.standard_normal((64, 1))
    h = xs
    for i, (m, n) in enumerate([(1, 16), (16, 16), (16, 1)]):
        h = h @ (rng.standard_normal((m, n)) / np.sqrt(m))
        h = np.tanh(h) if i < 2 else h
    assert numbers(rf"step    0: mse = {NUMBER}", out) == [round(np.mean((h - ys) ** 2), 5)]
    assert numbers(rf"step 1000: mse = {NUMBER}", out)[0] < 2 * 0.05**2  # the noise's mse is 0.05^2
    assert numbers(rf"jit - eager\| over the gradient's leaves: {NUMBER}", out)[0] < 1e-12


def test_the_scan_rnn_matches_numpy_and_newtons_derivative_is_the_closed_form(tmp_path):
    out = printed("s_scan_rnn.py", tmp_path)
    assert numbers(rf", grad +: max \|gradient difference\| = {NUMBER}", out)[0] < 1e-12
    assert numbers(rf", jit\(grad\): max \|gradient difference\| = {NUMBER}", out)[0] < 1e-12
    rng = np.random.default_rng(0)  # the example's RNN, in NumPy
    xs = rng.standard_normal((50, 3))
    targets = np.cumsum(xs.mean(axis=1)) / np.arange(1, 51)
    w, u = 0.3 * rng.standard_normal((8, 8)), 0.3 * rng.standard_normal((3, 8))
    h, total = np.zeros(8), 0.0
    for x, target in zip(xs, targets):
        h = np.tanh(h @ w + x @ u)
        total += np.sum((h - target) ** 2)
    assert numbers(rf"loss: scan {NUMBER}, loop {NUMBER}", out) == [round(total / 400, 6)] * 2
    first, last = numbers(rf"step   1: loss = {NUMBER}", out)[0], numbers(rf"step 200: loss = {NUMBER}", out)[0]
    assert last < first / 10
    for a in (0.5, 2.0, 10.0):
        root, grad, grad_jit = numbers(rf"a = +{a}: sqrt = {NUMBER}, grad = {NUMBER}, jit\(grad\) = {NUMBER}", out)
        assert root == pytest.approx(np.sqrt(a), abs=1e-10)
        assert grad == grad_jit == pytest.approx(0.5 / np.sqrt(a), abs=1e-10)


def test_odeint_and_its_gradient_match_the_closed_form_of_the_oscillator(tmp_path):
    out = printed("t_odeint.py", tmp_path)

    def x_exact(c, t=3.0):  # x'' = -4 x - c x', x(0) = 1, x'(0) = 0
        w = np.sqrt(4 - c**2 / 4)
        return np.exp(-c * t / 2) * (np.cos(w * t) + c / (2 * w) * np.sin(w * t))

    x_ode, x_closed = numbers(rf"x\(3\) at c = 0.5: odeint {NUMBER}, closed form {NUMBER}", out)
    assert x_closed == pytest.approx(x_exact(0.5), abs=1e-10)
    assert x_ode == pytest.approx(x_exact(0.5), abs=1e-8)
    h = 1e-5
    slope = (x_exact(0.5 + h) - x_exact(0.5 - h)) / (2 * h)
    d_ode, d_jit, d_closed = numbers(rf"grad\(odeint\) {NUMBER}, jit\(grad\(odeint\)\) {NUMBER}, closed form {NUMBER}",
                                     out)
    assert d_ode == pytest.approx(slope, abs=1e-8) and d_jit == pytest.approx(slope, abs=1e-8)
    assert d_closed == pytest.approx(slope, abs=1e-9)
    assert numbers(rf"max \|odeint - closed form\| for t in \[0, 10\] = {NUMBER}", out)[0] < 1e-8


def test_random_keys_reproduce_and_the_estimates_match_their_expectations(tmp_path):
    out = printed("u_random_keys_vmap.py", tmp_path)
    draws = [line.split(":", 1)[1].strip() for line in out.splitlines()[:4]]
    assert draws[0] == draws[1] == draws[2] != draws[3]  # same key, same numbers; a new key, new ones
    mean, error = numbers(rf"mean {NUMBER} \+- {NUMBER}", out)
    assert abs(mean - np.pi) < 5 * error < 0.01
    p = np.pi / 4
    spread, binomial = numbers(rf"their spread {NUMBER}, binomial {NUMBER}", out)
    assert binomial == pytest.approx(4 * np.sqrt(p * (1 - p) / 1000), abs=1e-4)
    assert spread == pytest.approx(binomial, rel=0.15)
    lines = out.splitlines()
    rows = lines[lines.index("per-example dropout, one key per row of ones((4, 8)):") + 1:][:4]
    masks = np.array([[float(v) for v in row.strip("[] ").split()] for row in rows])
    assert masks.shape == (4, 8) and set(masks.ravel()) == {0.0, 2.0}  # kept ones are scaled by 1 / (1 - 0.5)
    assert len({tuple(row) for row in masks}) == 4  # each example has its own mask
    d_mu, d_sigma = numbers(rf"d/dmu E\[x\^2\] ~ {NUMBER} .*d/dsigma E\[x\^2\] ~ {NUMBER}", out)
    assert d_mu == pytest.approx(2 * 1.5, abs=0.05) and d_sigma == pytest.approx(2 * 0.5, abs=0.05)
