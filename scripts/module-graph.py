#!/usr/bin/env python3
"""The module graph of a Rust crate, and whether it has cycles.

    scripts/module-graph.py inject/src/lib.rs            # fails if there is a cycle
    scripts/module-graph.py --edges inject/src/lib.rs    # prints "a -> b" lines too
    scripts/module-graph.py --layers cli,collect,output,analysis,store collector/src/lib.rs
                                                         # also fails on an upward import

A module is a file (`foo.rs`, `foo/mod.rs`, or an inline `mod foo { .. }` counts as
part of its file). Module A depends on module B when A's code names a path into B:
`crate::b::..`, `super::..`, `self::b::..` (in `use` or inline). A parent declaring
`mod b;` is not a dependency; a parent calling `b::f()` is. Test-only modules
(`#[cfg(test)] mod tests;` files and `*_tests.rs`) are left out: they may use
anything.

With `--layers A,B,C` (highest first), the top-level modules named are layers: a
module inside layer B may import from B and the layers after it (C), never from one
before it (A); each such import is printed. Top-level modules not named, and the
crate root, are outside the layers (a root declaring its layers is not an import).

Exit status: 0 without cycles (and upward imports), 1 with (each strongly connected
component, each upward import printed), 2 on bad input.
"""

import re
import sys
from pathlib import Path

MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)
CFG_TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;')


def code_only(text):
    """The text with comments and string, char and byte literals blanked out."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif (m := re.match(r'b?r(#*)"', text[i : i + 260])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            i = n if j < 0 else j + len(close)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := re.match(r"'(\\.[^']*|[^\\'])'", text[i : i + 12])):
            i += m.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


INLINE_TESTS = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+[a-z_][a-z0-9_]*\s*\{")


def strip(text):
    """Comments, literals and the inline test module (by convention the file's last
    item) out, so paths in docs, messages and tests do not count."""
    text = code_only(text)
    tests = INLINE_TESTS.search(text)
    return text[: tests.start()] if tests else text


def discover(root):
    """{module path tuple: file}. The crate root is ()."""
    modules = {(): root}
    pending = [((), root)]
    while pending:
        path, file = pending.pop()
        text = file.read_text()
        tests = set(CFG_TEST_MOD.findall(text))
        explicit = {name: rel for rel, name in PATH_ATTR.findall(text)}
        if file.name in ("lib.rs", "main.rs", "mod.rs"):
            base = file.parent
        else:
            base = file.parent / file.stem
        for name in MOD_DECL.findall(strip(text)):
            if name in tests or name.endswith("_tests") or name == "tests":
                continue
            if name in explicit:
                child = file.parent / explicit[name]
            elif (base / f"{name}.rs").exists():
                child = base / f"{name}.rs"
            elif (base / name / "mod.rs").exists():
                child = base / name / "mod.rs"
            else:
                print(f"module-graph: {file}: cannot find the file of `mod {name};`", file=sys.stderr)
                sys.exit(2)
            modules[path + (name,)] = child
            pending.append((path + (name,), child))
    return modules


def resolve(modules, segments):
    """The longest known module a path starts with (a path may name an item in it)."""
    for n in range(len(segments), 0, -1):
        if tuple(segments[:n]) in modules:
            return tuple(segments[:n])
    return None


def edges(modules):
    out = {m: set() for m in modules}
    for path, file in modules.items():
        text = strip(file.read_text())
        # `use` trees: expand `crate::{a, b::c}` one level, enough for this code base.
        refs = []
        for m in re.finditer(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{([^{}]*)\})?", text):
            head, tail, group = m.group(1), m.group(2), m.group(4)
            if not tail and group is None:
                continue  # `pub(crate)`, `&self`, `Self`: not a path
            segs = [s for s in tail.split("::") if s]
            if group is not None:
                for item in group.split(","):
                    item = item.strip().split(" as ")[0].strip()
                    if item and item != "self":
                        refs.append((head, segs + [s for s in item.split("::") if s]))
                    else:
                        refs.append((head, segs))
            else:
                refs.append((head, segs))
        # Bare paths into a child module: `policy::Policy` in `counters.rs`.
        children = {m[-1] for m in modules if len(m) == len(path) + 1 and m[: len(path)] == path}
        for m in re.finditer(r"(?<![A-Za-z0-9_:$])([a-z_][a-z0-9_]*)::", text):
            if m.group(1) in children:
                out[path].add(path + (m.group(1),))
        for head, segs in refs:
            if head == "crate":
                base = []
            elif head == "super":
                base = list(path[:-1])
                while segs and segs[0] == "super":
                    base = base[:-1]
                    segs = segs[1:]
            else:
                base = list(path)
            target = resolve(modules, base + segs) if base + segs else ()
            if target is None:
                target = tuple(base) if tuple(base) in modules else None
            if target is None or target == path:
                continue
            # Naming your own descendant through `self::`/`crate::` is a real dependency;
            # naming an ancestor's item is too. Both count.
            out[path].add(target)
    return out


def cycles(graph):
    """Tarjan's strongly connected components of size > 1."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return comps


def upward(graph, layers):
    """(from, to) edges whose target's layer is above its source's."""
    rank = {layer: i for i, layer in enumerate(layers)}
    out = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if a and b and a[0] in rank and b[0] in rank and rank[b[0]] < rank[a[0]]:
                out.append((a, b))
    return out


def name(path):
    return "/".join(path) if path else "(crate root)"


def self_test():
    """The checks fail where they must: a cycle, an upward import; and pass without."""
    import tempfile

    def run(files, layers):
        with tempfile.TemporaryDirectory() as d:
            for name, text in files.items():
                (Path(d) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(d) / name).write_text(text)
            graph = edges(discover(Path(d) / "lib.rs"))
            return bool(cycles(graph)), upward(graph, layers)

    lib = "pub mod high;\npub mod low;\n"
    down = {"lib.rs": lib, "high/mod.rs": "use crate::low::f;\n", "low/mod.rs": "pub fn f() {}\n"}
    up = dict(down, **{"low/mod.rs": "// crate::high in a comment does not count\nuse crate::high::g;\n"})
    cycle = dict(up, **{"high/mod.rs": "use crate::low::f;\npub fn g() {}\n"})
    checks = [
        (run(down, ["high", "low"]), (False, [])),
        (run(down, ["low", "high"]), (False, [(("high",), ("low",))])),
        (run(up, ["high", "low"]), (True, [(("low",), ("high",))])),
        (run(cycle, []), (True, [])),
    ]
    for n, (got, want) in enumerate(checks):
        if got != want:
            print(f"module-graph: self-test {n}: got {got}, want {want}", file=sys.stderr)
            return 1
    print(f"module-graph: self-test: {len(checks)} checks pass", file=sys.stderr)
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    show = "--edges" in argv
    layers = []
    if "--layers" in argv:
        i = argv.index("--layers")
        if i + 1 >= len(argv):
            print("module-graph: --layers needs a list: --layers cli,collect,...", file=sys.stderr)
            return 2
        layers = [s for s in argv[i + 1].split(",") if s]
        argv = argv[:i] + argv[i + 2 :]
    roots = [a for a in argv if not a.startswith("--")]
    if not roots:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for root in roots:
        root = Path(root)
        if not root.is_file():
            print(f"module-graph: {root}: no such file", file=sys.stderr)
            return 2
        modules = discover(root)
        graph = edges(modules)
        if show:
            for a in sorted(graph):
                for b in sorted(graph[a]):
                    print(f"{name(a)} -> {name(b)}")
        found = cycles(graph)
        for comp in found:
            failed = True
            members = ", ".join(sorted(name(m) for m in comp))
            print(f"module-graph: {root}: import cycle between {members}", file=sys.stderr)
        missing = [layer for layer in layers if (layer,) not in modules]
        if missing:
            print(f"module-graph: {root}: no top-level module for layer(s) {', '.join(missing)}", file=sys.stderr)
            return 2
        wrong = upward(graph, layers)
        for a, b in wrong:
            failed = True
            print(f"module-graph: {root}: {name(a)} (layer {a[0]}) imports {name(b)} (layer {b[0]}, above it)", file=sys.stderr)
        if not found and not wrong:
            what = f", layers {' > '.join(layers)} import downward only" if layers else ""
            print(f"module-graph: {root}: {len(modules)} modules, no import cycle{what}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
