"""companion's layout: every import points down its groups, and no modules import each other in
a circle. The groups, from the bottom up, are :data:`GROUPS`; a module may import a module of its
own group or of a lower one, never of a higher one, not even lazily inside a function. And
``import companion`` leaves matplotlib alone: the plotting names are imported on first use."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "companion"

# Bottom to top. Each group is a list of module prefixes: a module belongs to the group of the
# longest prefix that is its name or a package above it.
GROUPS: list[tuple[str, list[str]]] = [
    (
        "helpers",  # argument checks and what a chapter needs besides layers
        [
            "companion._validate",
            "companion.modes",
            "companion.device",
            "companion.repro",
            "companion.claims",
            "companion.source",
            "companion.measure",
        ],
    ),
    ("layers", ["companion.layers"]),
    ("generation", ["companion.generation"]),  # models' generate and decode run these loops
    ("models", ["companion.models"]),
    ("data", ["companion.tokenizer", "companion.data"]),
    ("training", ["companion.training"]),
    ("experiments", ["companion.experiments"]),
    ("figures", ["companion.figures"]),
    ("api", ["companion"]),  # companion/__init__.py: `from companion import X`
    ("exercises", ["companion.exercises"]),
    ("bench", ["companion.bench"]),
]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of companion by its dotted name."""
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def shown(path: Path) -> str:
    """``companion/...``: the path of a module from the folder that holds the package."""
    parts = path.parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("companion") :])


def group_of(module: str, groups: list[tuple[str, list[str]]] = GROUPS) -> tuple[int, str] | None:
    """(rank, group name) of ``module``, or None if no group holds it."""
    best: tuple[int, int, str] | None = None
    for rank, (name, prefixes) in enumerate(groups):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank, name)
    return None if best is None else (best[1], best[2])


def resolve(name: str, known: dict[str, Path]) -> str:
    """The module that importing ``name`` runs: ``name`` itself, or the closest package above
    it (``companion.x.Thing`` is a name in module ``companion.x``)."""
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, companion module) for each import of a companion module in ``path``, at any depth:
    inside functions and ``if TYPE_CHECKING:`` blocks too."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, `level - 1` packages up
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import submodule` imports the submodule; other names live in base
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target == "companion" or target.startswith("companion."):
                yield node.lineno, resolve(target, known)


def import_graph(known: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in known.items():
        edges: dict[str, int] = {}
        for line, target in imports(module, path, known):
            if target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def upward_imports(
    known: dict[str, Path], groups: list[tuple[str, list[str]]] = GROUPS
) -> list[str]:
    """Each import of a module of a higher group, as a readable line."""
    found = []
    for module, edges in import_graph(known).items():
        own = group_of(module, groups)
        for target, line in edges.items():
            theirs = group_of(target, groups)
            if own is not None and theirs is not None and theirs[0] > own[0]:
                where = shown(known[module])
                found.append(f"{where}:{line} ({own[1]}) imports {target} ({theirs[1]})")
    return found


def circles(known: dict[str, Path]) -> list[list[str]]:
    """The sets of modules that import each other in a circle (strongly connected components of
    more than one module; Tarjan's algorithm)."""
    graph = import_graph(known)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def circle_lines(known: dict[str, Path], component: list[str]) -> str:
    """One shortest circle through the first module of ``component``, import by import."""
    graph = import_graph(known)
    members, start = set(component), component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:  # breadth first, within the component, back to start
        module = queue.pop(0)
        for target in graph[module]:
            if target == start:
                circle = [*paths[module], start]
                return ", then ".join(
                    f"{shown(known[a])}:{graph[a][b]} imports {b}"
                    for a, b in zip(circle, circle[1:])
                )
            if target in members and target not in paths:
                paths[target] = [*paths[module], target]
                queue.append(target)
    raise AssertionError(f"no circle through {start}")


def test_every_module_has_a_group():
    homeless = [module for module in modules() if group_of(module) is None]
    assert not homeless, f"give these modules a group in tests/test_layout.py: {homeless}"


def test_imports_point_down():
    known = modules()
    assert len(known) > 50, "the modules of companion were not found"
    upward = upward_imports(known)
    assert not upward, "imports from a higher group:\n" + "\n".join(upward)


def test_no_circles():
    known = modules()
    found = circles(known)
    assert not found, "modules that import each other in a circle:\n" + "\n".join(
        circle_lines(known, component) for component in found
    )


def test_the_training_loop_knows_no_task():
    """The loop takes a task's batches and loss as arguments; it imports no task, and no plot."""
    known = modules()
    loop = "companion.training.train"
    imported = import_graph(known)[loop]
    bad = [m for m in imported if m.startswith(("companion.data.tasks", "companion.figures"))]
    assert not bad, f"{shown(known[loop])} imports {bad}"


def test_the_check_sees_a_bad_import(tmp_path):
    """A layer that imports the training loop inside a function, and two layers that import each
    other, are both caught."""
    (tmp_path / "companion" / "layers").mkdir(parents=True)
    (tmp_path / "companion" / "training").mkdir()
    files = {
        "companion/__init__.py": "",
        "companion/layers/__init__.py": "",
        "companion/layers/a.py": "def f():\n    from companion.training.train import fit\n",
        "companion/layers/b.py": "from companion.layers import c\n",
        "companion/layers/c.py": "import companion.layers.b\n",
        "companion/training/__init__.py": "",
        "companion/training/train.py": "from companion.layers import b\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    known = modules(tmp_path / "companion")
    assert upward_imports(known) == [
        "companion/layers/a.py:2 (layers) imports companion.training.train (training)"
    ]
    assert circles(known) == [["companion.layers.b", "companion.layers.c"]]
    assert circle_lines(known, circles(known)[0]) == (
        "companion/layers/b.py:1 imports companion.layers.c, "
        "then companion/layers/c.py:1 imports companion.layers.b"
    )


def test_import_companion_stays_light():
    """``import companion`` (and its models and data modules) imports neither pyplot, the
    figures nor sklearn; a plotting name or the explorer imports from companion on first use,
    and the explorer needs no pyplot. One fresh process: the interpreter's start is the cost."""
    code = (
        "import sys, companion, companion.data.tasks.digits\n"
        "import companion.models.vit, companion.models.cnn\n"
        "heavy = ('matplotlib.pyplot', 'companion.figures', 'sklearn')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "assert not loaded, f'import companion imported {loaded}'\n"
        "from companion import show_attention\n"
        "from companion.figures.explorer import show_attention as original\n"
        "assert show_attention is original\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'the explorer imported pyplot'\n"
        "assert 'show_attention' in dir(companion) and 'show_attention' in companion.__all__\n"
        "from companion import plot_attention\n"
        "from companion.figures.plot import plot_attention as original\n"
        "assert plot_attention is original\n"
        "assert 'plot_attention' in dir(companion)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
