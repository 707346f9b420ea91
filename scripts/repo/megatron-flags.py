"""Lists every command-line flag of one Megatron-LM release, for tests/fixtures/megatron-flags.json.

Usage: python3 scripts/repo/megatron-flags.py GIT_DIR TAG > tests/fixtures/megatron-flags.json
(GIT_DIR: a clone of NVIDIA/Megatron-LM; only `git show TAG:PATH` is used; standard library only.)

Since core_v0.16 megatron/training/arguments.py declares flags two ways, and both are read here
from the source (nothing of Megatron-LM is imported, so torch is not needed):
  1. literal `add_argument('--flag', ...)` calls;
  2. `ArgumentGroupFactory(SomeConfig, exclude=[...]).build_group(...)`, which turns every init
     field of the dataclass (and its dataclass bases) into `--field-name`; a bool field whose
     default is not False becomes `--no-field-name` and `--disable-field-name`;
     `metadata={"argparse_meta": {"arg_names": [...]}}` overrides the names
     (megatron/training/argument_utils.py, ArgumentGroupFactory._build_argparse_kwargs_from_field).
"""

import ast
import json
import subprocess
import sys

CONFIG_SOURCES = [
    "megatron/core/transformer/transformer_config.py",
    "megatron/core/model_parallel_config.py",
    "megatron/core/fault_injector.py",
    "megatron/training/config/common_config.py",
    "megatron/training/config/resilience_config.py",
    "megatron/training/config/training_config.py",
]
ARGS = "megatron/training/arguments.py"


def show(git_dir, tag, path):
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{tag}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def literal(node, scope):
    """A Python literal, or a name bound to one in `scope` (a function's local assignments)."""
    if isinstance(node, ast.Name) and node.id in scope:
        return literal(scope[node.id], scope)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def dataclasses_in(sources):
    classes = {}
    for tree in sources:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = node
    return classes


def field_call(value):
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) == "field":
        return {k.arg: k.value for k in value.keywords}
    return None


def is_bool(annotation):
    """bool, Optional[bool] or bool | None (argparse then takes the bool path)."""
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("bool", "Optional[bool]", "bool|None", "None|bool", "typing.Optional[bool]")


def config_flags(cls_name, classes, exclude, seen=None):
    seen = seen if seen is not None else set()
    cls = classes.get(cls_name)
    if cls is None:
        raise SystemExit(f"megatron-flags: class {cls_name} not found in {CONFIG_SOURCES}")
    flags = []
    for base in cls.bases:
        name = getattr(base, "id", getattr(base, "attr", None))
        if name in classes:
            flags += config_flags(name, classes, exclude, seen)
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        if name in exclude or name.startswith("_") or name in seen:
            continue
        seen.add(name)
        kw = field_call(stmt.value) or {}
        if "init" in kw and literal(kw["init"], {}) is False:
            continue
        meta = literal(kw["metadata"], {}) if "metadata" in kw else None
        names = (meta or {}).get("argparse_meta", {}).get("arg_names") if isinstance(meta, dict) else None
        if names:
            flags += names
            continue
        default = literal(kw["default"], {}) if "default" in kw else (
            literal(stmt.value, {}) if stmt.value is not None and not kw else None
        )
        dashed = name.replace("_", "-")
        if is_bool(stmt.annotation) and default is not False:
            flags += [f"--no-{dashed}", f"--disable-{dashed}"]
        else:
            flags.append(f"--{dashed}")
    return flags


def main():
    git_dir, tag = sys.argv[1], sys.argv[2]
    commit = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", f"{tag}^{{commit}}"], check=True, capture_output=True, text=True
    ).stdout.strip()
    args_tree = ast.parse(show(git_dir, tag, ARGS))
    classes = dataclasses_in([ast.parse(show(git_dir, tag, p)) for p in CONFIG_SOURCES])
    flags = set()
    for fn in ast.walk(args_tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        scope = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            attr = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
            if attr == "add_argument":
                for a in call.args:
                    v = literal(a, scope)
                    if isinstance(v, str) and v.startswith("-"):
                        flags.add(v)
            elif attr == "ArgumentGroupFactory" and call.args:
                kw = {k.arg: k.value for k in call.keywords}
                exclude = set(literal(kw["exclude"], scope) or []) if "exclude" in kw else set()
                flags.update(config_flags(call.args[0].id, classes, exclude))
    json.dump(
        {
            "repository": "NVIDIA/Megatron-LM",
            "tag": tag,
            "commit": commit,
            "sources": [ARGS, *CONFIG_SOURCES],
            "extractedBy": "scripts/repo/megatron-flags.py",
            "flags": sorted(flags),
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
