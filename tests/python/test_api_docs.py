"""Every public name of the package has a docstring, and the package ships
its type information (py.typed, _kiln.pyi)."""

import inspect
from pathlib import Path

import kiln
import kiln.driver
import kiln.dtype
import kiln.engine
import kiln.graph
import kiln.graph.ops
import kiln.graph.quantization
import kiln.nn

MODULES = [kiln, kiln.driver, kiln.dtype, kiln.engine, kiln.graph, kiln.graph.ops,
           kiln.graph.quantization, kiln.nn]


def public(module):
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue
        if getattr(obj, "__module__", "") == "typing":  # DimLike = Union[...]
            continue
        yield f"{module.__name__}.{name}", obj


def test_every_public_name_has_a_docstring():
    missing = []
    for module in MODULES:
        assert module.__doc__, module.__name__
        for qual, obj in public(module):
            if not inspect.getdoc(obj):
                missing.append(qual)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") or not (callable(member) or
                                                    isinstance(member, property)):
                        continue
                    if not inspect.getdoc(member):
                        missing.append(f"{qual}.{attr}")
    assert not missing, f"no docstring: {missing}"


def test_type_information_is_installed():
    pkg = Path(kiln.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_kiln.pyi").exists()
