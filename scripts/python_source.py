"""Reads a Python framework's source without importing it: modules, the names they define or
re-export, classes, dataclass fields and whether a value fits a field's annotation.

Shared by check-torchtitan-emit.py and check-megatron-bridge-emit.py, whose frameworks do not
import with this machine's Python (torch 1.13, no omegaconf, hydra or tyro). Everything here is
`ast` on the files of one or more source roots (folders holding the top-level packages); a name is
resolved as Python would import it, following `from X import Y`, `from .x import *` and `import
X as Y` through re-exporting modules, and a class's fields through its bases in those roots
(bases outside them, such as typing.Generic, contribute none).
"""
import ast
import os


class SourceTree:
    """The modules under `roots`, parsed on demand."""

    def __init__(self, roots):
        self.roots = [os.path.abspath(r) for r in roots]
        self._parsed = {}

    def module_path(self, module):
        """The file of dotted `module` (its .py, or its package's __init__.py), or None."""
        parts = module.split(".")
        for root in self.roots:
            base = os.path.join(root, *parts)
            for path in (base + ".py", os.path.join(base, "__init__.py")):
                if os.path.isfile(path):
                    return path
        return None

    def parse(self, path):
        if path not in self._parsed:
            with open(path, encoding="utf-8") as f:
                self._parsed[path] = ast.parse(f.read(), filename=path)
        return self._parsed[path]

    def where(self, path, node):
        """file:line of `node`, the file relative to its root."""
        for root in self.roots:
            if path.startswith(root + os.sep):
                return f"{os.path.relpath(path, root)}:{node.lineno}"
        return f"{path}:{node.lineno}"

    def absolute(self, module, level, name):
        """The module that `from <level dots><name> import ...` names inside `module`."""
        if not level:
            return name
        path = self.module_path(module)
        package = module if path and path.endswith("__init__.py") else module.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{name}" if name else package

    def find(self, module, name, seen=None):
        """Where `name` is bound at module level in `module`, following re-exports: (module, node)
        with node the def, class, assignment or (for a submodule) None; None when not found."""
        seen = seen if seen is not None else set()
        if (module, name) in seen:
            return None
        seen.add((module, name))
        path = self.module_path(module)
        if path is None:
            return None
        stars = []
        for node in _top_level(self.parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return module, node
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return module, node
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                return module, node
            if isinstance(node, ast.ImportFrom):
                source = self.absolute(module, node.level, node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        stars.append(source)
                    elif (alias.asname or alias.name) == name:
                        found = self.find(source, alias.name, seen)
                        if found is None and self.module_path(f"{source}.{alias.name}"):
                            return f"{source}.{alias.name}", None  # a submodule
                        return found
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname == name and self.module_path(alias.name):
                        return alias.name, None
        for source in stars:  # `from X import *`: X's public names, or its __all__
            exported = self.all_names(source)
            if (exported is None and not name.startswith("_")) or (exported is not None and name in exported):
                found = self.find(source, name, seen)
                if found is not None:
                    return found
        if self.module_path(f"{module}.{name}"):
            return f"{module}.{name}", None
        return None

    def all_names(self, module):
        """`__all__` of `module` as a list of strings, or None when it has none (or it isn't literal)."""
        path = self.module_path(module)
        if path is None:
            return None
        for node in _top_level(self.parse(path)):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                try:
                    return list(ast.literal_eval(node.value))
                except ValueError:
                    return None
        return None

    def resolve_expr(self, module, expr):
        """The (module, node) a Name or dotted Attribute expression names in `module`; for
        `A.B` with A a class, B's nested class or assignment in it."""
        if isinstance(expr, ast.Subscript):  # Base[T] as a base class
            return self.resolve_expr(module, expr.value)
        if isinstance(expr, ast.Name):
            return self.find(module, expr.id)
        if isinstance(expr, ast.Attribute):
            outer = self.resolve_expr(module, expr.value)
            if outer is None:
                return None
            outer_module, node = outer
            if node is None:  # a module
                return self.find(outer_module, expr.attr)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.ClassDef) and item.name == expr.attr:
                        return outer_module, item
        return None

    def resolve_class(self, module, expr):
        found = self.resolve_expr(module, expr)
        if found and isinstance(found[1], ast.ClassDef):
            return found
        return None

    def fields(self, module, cls, seen=None):
        """A dataclass's fields, its bases' first: {name: (annotation, default or None, owner
        (module, class), node)}. Class-level `name: T` entries other than ClassVar."""
        seen = seen if seen is not None else set()
        key = (module, cls.name, cls.lineno)
        if key in seen:
            return {}
        seen.add(key)
        out = {}
        for base in reversed(cls.bases):
            resolved = self.resolve_class(module, base)
            if resolved:
                out.update(self.fields(resolved[0], resolved[1], seen))
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                text = ast.unparse(item.annotation)
                if "ClassVar" in text or "InitVar" in text:
                    continue
                out[item.target.id] = (item.annotation, item.value, (module, cls), item)
        return out


def _top_level(tree):
    """Module-level statements, descending into if/try blocks (guarded imports)."""
    for node in tree.body:
        if isinstance(node, ast.If):
            yield from _top_level(ast.Module(body=node.body + node.orelse, type_ignores=[]))
        elif isinstance(node, ast.Try):
            handlers = [s for h in node.handlers for s in h.body]
            yield from _top_level(ast.Module(body=node.body + handlers + node.orelse, type_ignores=[]))
        else:
            yield node


# --- does a value fit an annotation ------------------------------------------------------------

_SCALARS = {"int": int, "float": float, "bool": bool, "str": str}


def _same(a, b):
    return type(a) is type(b) and a == b


def fits(annotation, value, tree=None, module=None):
    """(True, "") when `value` (a Python literal) fits the annotation expression, else (False,
    why). Understands int, float (an int too), bool, str, None, Optional, Union, X | Y,
    Literal, Annotated, list[...] / List[...], tuple, dict, Any, torch.dtype (a string, as
    Bridge's overrides convert it) and string forward references; a class it cannot read takes
    no literal."""
    if isinstance(annotation, ast.Constant):
        if annotation.value is None:
            return (value is None, "not None")
        if isinstance(annotation.value, str):  # a forward reference
            return fits(ast.parse(annotation.value, mode="eval").body, value, tree, module)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _any([annotation.left, annotation.right], value, tree, module)
    if isinstance(annotation, ast.Name) or isinstance(annotation, ast.Attribute):
        name = ast.unparse(annotation)
        if name in _SCALARS:
            want = _SCALARS[name]
            if want is float:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            elif want is int:
                ok = isinstance(value, int) and not isinstance(value, bool)
            else:
                ok = isinstance(value, want)
            return ok, f"{value!r} is not {name}"
        if name in ("Any", "typing.Any", "object"):
            return True, ""
        if name in ("None", "NoneType"):
            return value is None, f"{value!r} is not None"
        if name in ("list", "List", "tuple", "Tuple", "dict", "Dict"):
            kind = {"list": list, "List": list, "tuple": (list, tuple), "Tuple": (list, tuple)}.get(name, dict)
            return isinstance(value, kind), f"{value!r} is not {name}"
        if name == "torch.dtype":
            return isinstance(value, str), f"{value!r} is not a dtype name"
        return False, f"{value!r} is not a {name}"
    if isinstance(annotation, ast.Subscript):
        head = ast.unparse(annotation.value).rpartition(".")[2]
        args = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if head == "Optional":
            return (True, "") if value is None else fits(args[0], value, tree, module)
        if head == "Union":
            return _any(args, value, tree, module)
        if head == "Annotated":
            return fits(args[0], value, tree, module)
        if head == "Literal":
            members = [a.value for a in args if isinstance(a, ast.Constant)]
            return any(_same(value, m) for m in members), f"{value!r} is not one of {members}"
        if head in ("list", "List", "Sequence"):
            if not isinstance(value, list):
                return False, f"{value!r} is not a list"
            for item in value:
                ok, why = fits(args[0], item, tree, module)
                if not ok:
                    return False, f"an item: {why}"
            return True, ""
        if head in ("tuple", "Tuple"):
            return isinstance(value, (list, tuple)), f"{value!r} is not a tuple"
        if head in ("dict", "Dict", "Mapping"):
            return isinstance(value, dict), f"{value!r} is not a dict"
    return False, f"{value!r} against {ast.unparse(annotation)}: not a type this check reads"


def _any(options, value, tree, module):
    reasons = []
    for option in options:
        ok, why = fits(option, value, tree, module)
        if ok:
            return True, ""
        reasons.append(why)
    return False, "; ".join(reasons)
