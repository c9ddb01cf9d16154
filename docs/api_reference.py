"""Generate docs/api.md, fgrad's API reference, from the docstrings.

Every public name of fgrad and of its public modules (their ``__all__``) gets
its signature and the first paragraph of its docstring; fgrad.numpy, which is
NumPy's API, is summarized by module (how many functions, and a link to the
coverage table that checks each one). Run ``python docs/api_reference.py`` to
rewrite docs/api.md; tests/test_docs.py fails when the committed file differs
from what this script generates.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, ForwardRef

DOCS = Path(__file__).resolve().parent

# Sections in order: (module name, what the section says before its entries).
MODULES = [
    ("fgrad", "The transformations, custom rules, the IR and the errors."),
    ("fgrad.lax", "Structured control flow, each one primitive on closed jaxprs; and JAX's dynamic slices, "
                  "associative scan, general products, convolutions and windowed reductions."),
    ("fgrad.random", "JAX-style explicit keys on NumPy's Philox."),
    ("fgrad.nn", "JAX's activations and normalisations of neural networks (jax.nn)."),
    ("fgrad.nn.initializers", "JAX's weight initializers (jax.nn.initializers), on fgrad.random's keys."),
    ("fgrad.scipy.special", "SciPy's special functions."),
    ("fgrad.scipy.stats", "Densities and distribution functions of SciPy's common distributions."),
    ("fgrad.scipy.linalg", "SciPy's linear algebra."),
    ("fgrad.scipy.signal", "SciPy's convolutions."),
    ("fgrad.scipy.integrate", "Integration of samples, and ODEs."),
    ("fgrad.scipy.optimize", "SciPy's solvers, differentiable by the implicit function theorem."),
    ("fgrad.scipy.sparse.linalg", "SciPy's iterative linear solvers, differentiated through the system they "
                                  "solve."),
    ("fgrad.optim", "Functional optimizers on pytrees."),
    ("fgrad.tree_util", "Pytrees: flattening, mapping, registering."),
    ("fgrad.tree", "The pytree functions under JAX's short names (jax.tree)."),
    ("fgrad.test_util", "Checking derivatives numerically."),
    ("fgrad.debug", "Looking at values and gradients as they flow."),
    ("fgrad.viz", "Pictures of a function's graph, its values and its gradients."),
]
NUMPY_MODULES = ["creation", "ufuncs", "reductions", "sorting", "shaping", "indexing", "products",
                 "linalg", "fft"]
DISTRIBUTION_METHODS = ["logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


class _Text:
    """An annotation or default shown as its source text, without quotes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _default(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return value
    if isinstance(value, type):
        return _Text(f"{value.__module__}.{value.__qualname__}".replace("builtins.", ""))
    text = repr(value)
    return _Text(re.sub(r" at 0x[0-9a-f]+", "", text))  # no addresses: the file must be stable


def _annotation(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return value
    if isinstance(value, ForwardRef):  # NamedTuple fields of modules with postponed annotations
        value = value.__forward_arg__
    return _Text(value if isinstance(value, str) else inspect.formatannotation(value))


def signature(obj: Any) -> str | None:
    """`obj`'s signature as source text, or None when it has none."""
    if getattr(obj, "_is_protocol", False):  # an interface, not something to call
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = [p.replace(annotation=_annotation(p.annotation), default=_default(p.default))
              for p in sig.parameters.values()]
    ret = inspect.Signature.empty if inspect.isclass(obj) else _annotation(sig.return_annotation)
    return str(sig.replace(parameters=params, return_annotation=ret))


def first_paragraph(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    paragraph = doc.split("\n\n")[0].strip()
    generated = inspect.isclass(obj) and paragraph.startswith(f"{obj.__name__}(")  # a NamedTuple's
    if paragraph.startswith(">>>") or generated:
        return ""
    return " ".join(line.strip() for line in paragraph.splitlines())


def _import(name: str) -> ModuleType | None:
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def _anchor(module: str) -> str:
    return module.replace(".", "")


def _entry(module: str, name: str, obj: Any) -> list[str]:
    qual = f"{module}.{name}"
    if isinstance(obj, ModuleType):
        target = obj.__name__
        if any(target == m for m, _ in MODULES):
            return [f"- `{qual}`: see [{target}](#{_anchor(target)})."]
        if target == "fgrad.numpy":
            return [f"- `{qual}`: see [fgrad.numpy](#fgradnumpy)."]
        if target == "fgrad.scipy":
            return [f"- `{qual}`: see the `fgrad.scipy.*` sections below."]
        return [f"- `{qual}`: {first_paragraph(obj)}"]
    lines: list[str] = []
    sig = signature(obj) if callable(obj) else None
    if inspect.isclass(obj) and issubclass(obj, (BaseException, enum.Enum)):
        sig = None
    head = f"`{qual}{sig}`" if sig is not None else f"`{qual}`"
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
        own_doc = obj.__doc__ if isinstance(getattr(obj, "__doc__", None), str) else None
        text = first_paragraph(type(obj)) if own_doc is None else first_paragraph(obj)
        methods = [m for m in DISTRIBUTION_METHODS if callable(getattr(obj, m, None))]
        if module == "fgrad" and name == "config":
            methods = ["update"]
        lines.append(f"- {head}: {text}" if text else f"- {head}")
        if methods:
            lines.append("  Methods: " + ", ".join(f"`{m}`" for m in methods) + ".")
        return lines
    text = first_paragraph(obj)
    lines.append(f"- {head}: {text}" if text else f"- {head}")
    if inspect.isclass(obj) and not issubclass(obj, BaseException):
        methods = [m for m, v in vars(obj).items() if not m.startswith("_") and callable(v)]
        fields = getattr(obj, "_fields", None)
        if issubclass(obj, enum.Enum):
            lines.append("  Members: " + ", ".join(f"`{m.name}`" for m in obj) + ".")
        elif fields:
            lines.append("  Fields: " + ", ".join(f"`{f}`" for f in fields) + ".")
        elif methods:
            lines.append("  Methods: " + ", ".join(f"`{m}`" for m in methods) + ".")
    return lines


def _numpy_section() -> list[str]:
    import fgrad.numpy as fnp

    lines = [
        "## fgrad.numpy",
        "",
        "NumPy's API: the same names, signatures, dtypes and broadcasting, differentiable and traceable. "
        "Each function is documented by NumPy; what fgrad does with each one (traced, forward, reverse, "
        "vmap) is checked and listed in [numpy-coverage.md](numpy-coverage.md).",
        "",
        "| module | functions | for example |",
        "|---|---|---|",
    ]
    for sub in NUMPY_MODULES:
        mod = importlib.import_module(f"fgrad.numpy.{sub}")
        names = list(mod.__all__)
        shown = ", ".join(f"`{n}`" for n in names[:6])
        where = f"`fgrad.numpy.{sub}`" if sub in ("linalg", "fft") else f"`fgrad.numpy` ({sub})"
        lines.append(f"| {where} | {len(names)} | {shown}{', ...' if len(names) > 6 else ''} |")
    extras = [n for n in ("Array", "ArrayLike") if hasattr(fnp, n)]
    lines += [
        "",
        "Also NumPy's dtypes and constants (`float64`, `float32`, `int64`, `pi`, `inf`, `nan`, "
        "`newaxis`, ...), the type aliases " + " and ".join(f"`{n}`" for n in extras)
        + ", and `fgrad.numpy.random`, which is `numpy.random` itself (NumPy's generators, for data; "
        "the differentiable, traceable samplers are [fgrad.random](#fgradrandom)).",
        "",
    ]
    return lines


def table() -> str:
    """The text of docs/api.md."""
    lines = [
        "# API reference",
        "",
        "<!-- Generated by docs/api_reference.py from the docstrings; do not edit by hand. -->",
        "",
        "Every public name of fgrad, with its signature and the first paragraph of its docstring "
        "(`help(name)` shows the rest, examples included). Sections: "
        + ", ".join(f"[{m}](#{_anchor(m)})" for m, _ in MODULES if _import(m) is not None
                    or m == "fgrad") + ", [fgrad.numpy](#fgradnumpy).",
        "",
    ]
    for module, intro in MODULES:
        mod = _import(module)
        if mod is None:
            continue
        lines += [f"## {module}", "", intro, ""]
        for name in mod.__all__:
            lines += _entry(module, name, getattr(mod, name))
        lines.append("")
        if module == "fgrad":
            lines += ["`fgrad.__version__` is the version, as a string.", ""]
    lines += _numpy_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> None:
    (DOCS / "api.md").write_text(table())
    print(f"wrote {DOCS / 'api.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
