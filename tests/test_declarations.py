"""Each lab's ``lab.toml`` against the lab's own files (read, never run), and the loader's messages.

The declaration is what the registry, the grader and the repository's checks read; these tests keep it
true to the code: the API the starter exposes, the given modules, the labkit names they import, the
earlier labs' references they load."""

from __future__ import annotations

import ast
import re

import pytest

from labkit.course import declaration, registry
from labkit.course.declaration import DeclarationError


def starter_api(lab_dir) -> dict[str, str]:
    """The starter's public names: name -> "callable" (a function or class), "value" (an assignment of a
    value), or "any" (a name taken from elsewhere: ``BlockPool = _allocator.BlockPool``, or ``from _device
    import Stream`` where ``_device.py`` is a given module of the lab)."""
    api = {}
    for node in ast.parse((lab_dir / "starter.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            api[node.name] = "callable"
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and (lab_dir / f"{node.module}.py").is_file()
        ):
            api.update({(alias.asname or alias.name): "any" for alias in node.names if alias.name != "*"})
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kind = "any" if isinstance(node.value, ast.Name | ast.Attribute) else "value"
            api.update({t.id: kind for t in targets if isinstance(t, ast.Name)})
    return {name: kind for name, kind in api.items() if not name.startswith("_")}


def labkit_names(path) -> set[str]:
    """The labkit names a file imports: ``from labkit import X`` -> X, ``from labkit.testing import child`` ->
    testing.child, ``labkit.X`` after ``import labkit`` -> X."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "labkit":
            names |= {".".join([*node.module.split(".")[1:], alias.name]) for alias in node.names}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "labkit":
            names.add(node.attr)
    return names


LOADS = re.compile(r"""load_reference\(\s*["'](\d{2}-\d{2})["']\s*\)""")


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_the_declared_api_is_the_starters(lab):
    declared, found = lab.declared.api.kinds(), starter_api(lab.path)
    assert declared == found, (
        f"{lab.folder}/lab.toml: [api] does not match starter.py: declared only {sorted(set(declared) - set(found))}, "
        f"defined only {sorted(set(found) - set(declared))}, of another kind "
        f"{sorted(n for n in set(declared) & set(found) if declared[n] != found[n])} (functions and classes are "
        "defined in starter.py, constants assigned a value there, reexports taken from a given module or a reference)"
    )


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_the_declared_given_modules_and_their_labkit_imports_are_the_labs(lab):
    d = lab.declared
    on_disk = sorted(p.name for p in lab.path.glob("_*.py"))
    assert list(d.given) == on_disk, f"{lab.folder}/lab.toml: given {list(d.given)}, the folder holds {on_disk}"
    for name in ("starter.py", *d.given):
        found = labkit_names(lab.path / name)
        assert set(d.labkit.get(name, ())) == found, (
            f'{lab.folder}/lab.toml: [labkit] "{name}" declares {sorted(d.labkit.get(name, ()))}, the file imports '
            f"{sorted(found)}: the grading sandbox stages only what the declarations name"
        )


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_the_declared_references_are_the_ones_the_lab_loads(lab):
    loaded = set()
    for file in lab.path.glob("*.py"):
        if not file.name.startswith("test_"):
            loaded |= set(LOADS.findall(file.read_text(encoding="utf-8")))
    loaded.discard(lab.id)
    assert set(lab.declared.references) == loaded, (
        f"{lab.folder}/lab.toml: references {sorted(lab.declared.references)}, its files load {sorted(loaded)}"
    )


PATCHES = re.compile(r"""monkeypatch\.setattr\((np|numpy|math|np\.linalg|numpy\.linalg), ["'](\w+)["']""")


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_the_declared_patches_are_the_numpy_functions_the_tests_replace(lab):
    """Under grading only the declared functions of numpy and math reach the submission as a test replaced
    them: a test that wraps one more must say so."""
    found = {
        f"{module.replace('np', 'numpy', 1) if module.startswith('np') else module}.{name}"
        for module, name in PATCHES.findall((lab.path / "test_lab.py").read_text(encoding="utf-8"))
    }
    assert set(lab.declared.patches) == found, (
        f"{lab.folder}/lab.toml: patches {sorted(lab.declared.patches)}, its tests replace {sorted(found)}"
    )


def test_study_order_puts_each_lab_after_what_it_needs():
    seen = set()
    for lab in registry.LABS:
        assert seen.issuperset(lab.needs), f"{lab.id} comes before {sorted(set(lab.needs) - seen)}"
        seen.add(lab.id)


GOOD = """id = "01-01"
title = "A lab"
builds = "something"
tags = ["cpu"]
needs = ["00-01"]
references = ["00-01"]
given = ["_checks.py"]
patches = ["numpy.exp"]

[api]
functions = ["f"]
constants = ["N"]

[labkit]
"starter.py" = ["triton_env"]
"""


def _declare(tmp_path, text):
    (tmp_path / "_checks.py").write_text("")
    (tmp_path / "lab.toml").write_text(text)
    return declaration.read(tmp_path)


def test_a_declaration_is_read_as_data(tmp_path):
    d = _declare(tmp_path, GOOD)
    assert (d.id, d.tags, d.needs, d.references, d.given) == (
        "01-01",
        ("cpu",),
        ("00-01",),
        ("00-01",),
        ("_checks.py",),
    )
    assert d.api.kinds() == {"f": "callable", "N": "value"} and d.labkit == {"starter.py": ("triton_env",)}
    assert d.patches == ("numpy.exp",)


@pytest.mark.parametrize(
    "edit, message",
    [
        (('title = "A lab"', ""), "title: missing"),
        (('id = "01-01"', 'id = "1-1"'), "is not NN-MM"),
        (('tags = ["cpu"]', 'tags = ["gpu"]'), "tags: ['gpu']"),
        (
            ('needs = ["00-01"]', "needs = []"),
            "references: ['00-01']: a lab loads the reference of a lab it needs only",
        ),
        (('given = ["_checks.py"]', 'given = ["checks.py"]'), "given: a list of names"),
        (('functions = ["f"]', 'functions = ["_f"]'), "public names only"),
        (('constants = ["N"]', 'constants = ["f"]'), "a name listed under two kinds"),
        (('"starter.py" = ["triton_env"]', '"starter.py" = ["assert_close"]'), "the grading sandbox's labkit has only"),
        (('"starter.py"', '"solution.py"'), "starter.py or a given module only"),
        (("[api]", "colour = 1\n[api]"), "colour: not a key"),
        (("[api]", "[api"), "not valid TOML"),
        (('patches = ["numpy.exp"]', 'patches = ["np.exp"]'), "patches: ['np.exp']: a function of numpy"),
    ],
)
def test_a_mistake_in_a_declaration_names_the_file_and_the_key(tmp_path, edit, message):
    with pytest.raises(DeclarationError, match=re.escape(message)) as err:
        _declare(tmp_path, GOOD.replace(*edit))
    assert str(tmp_path / "lab.toml") in str(err.value)


def test_a_missing_declaration_says_where_it_belongs(tmp_path):
    with pytest.raises(DeclarationError, match="missing; every lab declares itself in its folder"):
        declaration.read(tmp_path)


def test_study_order_refuses_unknown_needs_and_circles(tmp_path):
    labs = []
    for lab_id, needs in (("01-01", ["01-02"]), ("01-02", ["01-01"])):
        (tmp_path / lab_id).mkdir()
        (tmp_path / lab_id / "_checks.py").write_text("")
        labs.append(
            _declare(
                tmp_path / lab_id,
                GOOD.replace('"01-01"', f'"{lab_id}"').replace('["00-01"]', f"{needs}".replace("'", '"')),
            )
        )
    with pytest.raises(DeclarationError, match=r"need each other in a circle"):
        declaration.study_order(labs)
    with pytest.raises(DeclarationError, match=r"needs: \['01-02'\]: no such lab"):
        declaration.study_order(labs[:1])
