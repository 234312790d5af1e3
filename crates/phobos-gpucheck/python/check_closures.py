"""A check of the bundle's Python benchmarks for late-bound closures: a
lambda (or nested def) that reads a variable of its enclosing function
which that function assigns again after the lambda is made. Python looks
the name up when the lambda runs, so the case would run on the later
value: the Triton copy row once timed a 64 KB copy as if it were 1 GiB,
because its lambda read `n` after a later line had set it to 16384.

    python3 check_closures.py FILE.py...

Prints each such read (file:line: name) and exits 1 if there is one.
Bind the value as a default argument (`lambda n=n: ...`) or use a name
of its own.
"""
import ast
import sys


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def own_nodes(scope):
    """The nodes of a function's own scope: not those of functions and
    lambdas nested in it (yielded themselves, but not entered)."""
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def binds(scope):
    """The names a function or lambda binds: its parameters and, in its
    own scope, every assignment target, with their lines."""
    args = scope.args
    out = {}
    for a in args.args + args.kwonlyargs + args.posonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            out.setdefault(a.arg, []).append(scope.lineno)
    for node in own_nodes(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.setdefault(node.id, []).append(node.lineno)
    return out


def reads(scope):
    """The names a closure reads that it does not bind (itself or in a
    closure of its own)."""
    mine = binds(scope)
    out = set()
    for node in own_nodes(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, SCOPES):
            out |= reads(node)
    return out - set(mine)


def check(path):
    tree = ast.parse(open(path).read(), path)
    problems = []
    for func in ast.walk(tree):
        if not isinstance(func, SCOPES):
            continue
        lines = binds(func)
        for inner in own_nodes(func):
            if not isinstance(inner, SCOPES):
                continue
            end = getattr(inner, "end_lineno", inner.lineno)
            for name in sorted(reads(inner)):
                later = [n for n in lines.get(name, []) if n > end]
                if later:
                    problems.append(f"{path}:{inner.lineno}: `{name}` is read when the closure runs, "
                                    f"but line {later[0]} assigns it again")
    return problems


def main():
    problems = [p for path in sys.argv[1:] for p in check(path)]
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
