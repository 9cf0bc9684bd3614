"""Python 3.9 compatibility, proved without a 3.9 interpreter (the npm test wrapper also runs the
whole suite under 3.9 when one is installed): every file parses with the 3.9 grammar, no
annotation uses ``X | Y`` (PEP 604, 3.10), and nothing imports or calls what 3.9 lacks."""
import ast
import os
import unittest
from typing import Iterator, List

import support

NEWER_TYPING = {
    "TypeAlias", "ParamSpec", "Concatenate", "TypeGuard", "Self", "NotRequired", "Required", "LiteralString",
    "Never", "assert_never", "assert_type", "reveal_type", "Unpack", "TypeVarTuple", "dataclass_transform", "override",
    "TypeIs", "ReadOnly",
}
NEWER_MODULES = {"tomllib", "zoneinfo._tzpath"}
NEWER_CALL_KEYWORDS = {("zip", "strict"), ("dataclass", "slots"), ("dataclass", "kw_only"), ("dataclass", "match_args")}


def python_files() -> Iterator[str]:
    for folder in ("src", "tests"):
        for root, _dirs, files in os.walk(os.path.join(support.SDK_ROOT, folder)):
            for name in files:
                if name.endswith(".py"):
                    yield os.path.join(root, name)


class Python39CompatibilityTest(unittest.TestCase):
    def test_files_parse_with_the_39_grammar_and_avoid_newer_features(self) -> None:
        problems: List[str] = []
        files = list(python_files())
        self.assertGreater(len(files), 10)
        for path in files:
            with open(path, encoding="utf-8") as f:
                source = f.read()
            rel = os.path.relpath(path, support.SDK_ROOT)
            try:
                tree = ast.parse(source, filename=rel, feature_version=(3, 9))
            except SyntaxError as error:
                problems.append(f"{rel}:{error.lineno}: not 3.9 syntax: {error.msg}")
                continue
            for node in ast.walk(tree):
                annotations = []
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = node.args
                    annotations += [a.annotation for a in args.args + args.kwonlyargs + args.posonlyargs if a.annotation]
                    annotations += [a.annotation for a in (args.vararg, args.kwarg) if a is not None and a.annotation]
                    if node.returns:
                        annotations.append(node.returns)
                if isinstance(node, ast.AnnAssign):
                    annotations.append(node.annotation)
                for annotation in annotations:
                    for inner in ast.walk(annotation):
                        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.BitOr):
                            problems.append(f"{rel}:{inner.lineno}: PEP 604 union in an annotation (3.10+)")
                if isinstance(node, ast.ImportFrom) and node.module in ("typing", "typing_extensions"):
                    for alias in node.names:
                        if alias.name in NEWER_TYPING or node.module == "typing_extensions":
                            problems.append(f"{rel}:{node.lineno}: {node.module}.{alias.name} is not in 3.9's standard library")
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                    for name in names:
                        if name in NEWER_MODULES:
                            problems.append(f"{rel}:{node.lineno}: module {name} is 3.11+")
                if isinstance(node, ast.Call):
                    func = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
                    for kw in node.keywords:
                        if (func, kw.arg) in NEWER_CALL_KEYWORDS:
                            problems.append(f"{rel}:{node.lineno}: {func}({kw.arg}=...) is 3.10+")
        self.assertEqual(problems, [])

    def test_package_declares_39_and_ships_py_typed(self) -> None:
        with open(os.path.join(support.SDK_ROOT, "pyproject.toml"), encoding="utf-8") as f:
            pyproject = f.read()
        self.assertIn('requires-python = ">=3.9"', pyproject)
        self.assertIn("dependencies = []", pyproject)
        self.assertIn('cds_client = ["py.typed"]', pyproject)
        self.assertTrue(os.path.exists(os.path.join(support.SDK_ROOT, "src", "cds_client", "py.typed")))
        from cds_client import __version__

        self.assertIn(f'version = "{__version__}"', pyproject)

    def test_only_the_standard_library_is_imported(self) -> None:
        import sys

        stdlib = getattr(sys, "stdlib_module_names", None)
        if stdlib is None:  # 3.9 has no list; the 3.10+ runs check it
            self.skipTest("sys.stdlib_module_names needs Python 3.10+")
        for path in python_files():
            if os.sep + "tests" + os.sep in path:
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    roots = [a.name.split(".")[0] for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    roots = [node.module.split(".")[0]]
                else:
                    continue
                for root in roots:
                    self.assertIn(root, stdlib, f"{path}: imports {root}")


if __name__ == "__main__":
    unittest.main()
