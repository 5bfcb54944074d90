"""The `source` family: programs from the corpus, mutated, through the command line.

`make` picks a program (a file of the corpus, or a generated one) and one to three
mutations; `run` writes the bytes to a file and runs `rlang check`, `rlang invert`,
the printer's round trip and, when the file has a `main`, `rlang run` on the
interpreter under a time limit and — when that finished — on llvm, whose output must
then be the interpreter's.
"""
from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path

from .clirun import cli
from .outcome import Disagreement, Outcome, guarded, worst

REPO = Path(__file__).resolve().parents[2]
CORPUS_DIRS = ("examples", "rlang/std", "tests/golden", "tests/jax/programs")
TOKEN = re.compile(rb'\s+|[A-Za-z_][A-Za-z0-9_]*!?|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|"[^"\n]*"|.',
                   re.S)
VOCABULARY = (b"function", b"end", b"if", b"else", b"elseif", b"for", b"from", b"do", b"loop",
              b"until", b"while", b"begin", b"~begin", b"@routine", b"~@routine", b"@safe",
              b"@parallel", b"@invcheckoff", b"@inbounds", b"@zeros", b"~@zeros", b"call",
              b"uncall", b"~", b"\xe2\x86\x90", b"\xe2\x86\x92", b"<-", b"->", b"+=", b"-=",
              b"*=", b"/=", b"^=", b"SWAP", b"NEG", b"INC", b"DEC", b"FLIP", b"CONJ", b"ROT",
              b"PUSH", b"POP", b"zeros", b"stack", b"length", b"(", b")", b"[", b"]", b",",
              b":", b"=", b"==", b"!", b"&&", b"||", b"**", b"^", b"%", b"im", b"f64", b"i64",
              b"i32", b"f32", b"bool", b"fixed", b"ulog", b"complex", b"const", b"include",
              b"main", b"true", b"false", b"\n", b"  ", b"#", b"0", b"-1", b"1.0")
EXTREME_NUMBERS = (b"0", b"-0.0", b"1e308", b"1e309", b"-1e309", b"4.9e-324", b"1e-400",
                   b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
                   b"18446744073709551616", b"1" * 400, b"0.1e99999", b"2147483648", b"1e0",
                   b"0.0000000000000000000000000000001", b"1.7976931348623157e308")
BAD_BYTES = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\x00", b"\xef\xbb\xbf", b"\r", b"\t",
             b"\xe2\x80\xae", "\u00e9t\u00e9".encode(), "\u2211".encode(), b"\x1b[2J", b"\\")
#: depths and lengths for nesting and long-text mutations
SIZES = (8, 64, 300, 1000, 5000, 30000)
RUN_SECONDS = 2.0


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[Path, ...]:
    files = []
    for folder in CORPUS_DIRS:
        files += sorted((REPO / folder).rglob("*.rev"))
    return tuple(files)


def _generated(rng) -> bytes:
    from .paths import share_test_helpers

    share_test_helpers()
    from gen_parts import RandomDraws
    from systems import build_system_program

    from generators import build_program
    build = build_program if rng.random() < 0.5 else build_system_program
    return build(RandomDraws(rng)).source.encode()


def make(rng) -> dict:
    if rng.random() < 0.25:
        origin, source = "generated", _generated(rng)
    else:
        path = rng.choice(corpus())
        origin, source = str(path.relative_to(REPO)), path.read_bytes()
    tokens = TOKEN.findall(source) or [b""]
    applied = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(tuple(MUTATIONS))
        mutated = MUTATIONS[name](rng, tokens) or [b"\n"]
        if sum(map(len, mutated)) > MAX_SOURCE_BYTES:
            continue        # mutations compound (a long sum of a deep nest): 3.6 GB once
        tokens = mutated
        applied.append(name)
    return {"origin": origin, "mutations": applied, "source": b"".join(tokens)}


#: A mutated source larger than this is not made (rlang reads what a file holds;
#: the fuzzer's own memory is the limit here).
MAX_SOURCE_BYTES = 64 * 2 ** 20


# ---------------------------------------------------------------------- mutations
# each takes (rng, tokens) and returns new tokens (bytes; whitespace is a token)

def _at(rng, tokens) -> int:
    return rng.randrange(len(tokens))


def _where(rng, tokens, pattern: bytes) -> int:
    """A random index of a token matching `pattern` (any token when none does)."""
    found = [k for k, t in enumerate(tokens) if re.fullmatch(pattern, t)]
    return rng.choice(found) if found else _at(rng, tokens)


def drop(rng, tokens):
    k = _at(rng, tokens)
    return tokens[:k] + tokens[k + 1:]


def repeat(rng, tokens):
    k = _at(rng, tokens)
    return tokens[:k] + [tokens[k]] * rng.randint(2, 4) + tokens[k + 1:]


def swap(rng, tokens):
    i, j = _at(rng, tokens), _at(rng, tokens)
    tokens = list(tokens)
    tokens[i], tokens[j] = tokens[j], tokens[i]
    return tokens


def insert(rng, tokens):
    k = _at(rng, tokens)
    return tokens[:k] + [rng.choice(VOCABULARY), b" "] + tokens[k:]


def extreme_number(rng, tokens):
    k = _where(rng, tokens, rb"\d.*")
    return tokens[:k] + [rng.choice(EXTREME_NUMBERS)] + tokens[k + 1:]


def deep_parentheses(rng, tokens):
    k, n = _where(rng, tokens, rb"\d.*|[A-Za-z_]\w*"), rng.choice(SIZES)
    opener, closer = rng.choice(((b"(", b")"), (b"[", b"]"), (b"-", b""), (b"!", b""),
                                 (b"abs(", b")"), (b"(1.0 + ", b")")))
    return tokens[:k] + [opener * n, tokens[k], closer * n] + tokens[k + 1:]


def deep_statements(rng, tokens):
    k, n = _where(rng, tokens, rb"\n"), rng.choice(SIZES)
    opener, closer = rng.choice(((b"if true\n", b"end\n"), (b"begin\n", b"end\n"),
                                 (b"@routine begin\n", b"end\n"),
                                 (b"for q = 1:1\n", b"end\n")))
    return tokens[:k + 1] + [opener * n, closer * n] + tokens[k + 1:]


def long_sum(rng, tokens):
    k, n = _where(rng, tokens, rb"\d.*|[A-Za-z_]\w*"), rng.choice(SIZES)
    term = tokens[k]
    return tokens[:k] + [b" + ".join([term] * n)] + tokens[k + 1:]


def long_name(rng, tokens):
    k, n = _where(rng, tokens, rb"[A-Za-z_]\w*!?"), rng.choice(SIZES)
    old, new = tokens[k], tokens[k] + b"x" * n
    return [new if t == old else t for t in tokens]


def long_line(rng, tokens):
    k, n = _where(rng, tokens, rb"\n"), rng.choice(SIZES)
    return tokens[:k] + [b" " * n + b"# " + b"y" * n] + tokens[k:]


def bad_bytes(rng, tokens):
    k = _at(rng, tokens)
    return tokens[:k] + [rng.choice(BAD_BYTES)] + tokens[k:]


def truncate(rng, tokens):
    return tokens[:_at(rng, tokens)]


MUTATIONS = {f.__name__: f for f in (drop, repeat, swap, insert, extreme_number,
                                      deep_parentheses, deep_statements, long_sum, long_name,
                                      long_line, bad_bytes, truncate)}


# ---------------------------------------------------------------------- running

def run(spec: dict) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="rlang-fuzz-") as folder:
        path = Path(folder) / "case.rev"
        path.write_bytes(spec["source"])
        checked = cli("check", str(path))
        outcomes = [checked]
        if checked.kind == "ok":
            outcomes += [cli("invert", str(path)), guarded(lambda: _round_trip(path))]
            if b"function main(" in spec["source"]:
                outcomes.append(_run_both(path))
        return worst(outcomes)


def _round_trip(path: Path) -> None:
    """format(parse(format(parse(src)))) must be format(parse(src))."""
    from rlang.frontend.parser import parse
    from rlang.frontend.printer import format_program

    once = format_program(parse(path.read_text(encoding="utf-8"), str(path)))
    twice = format_program(parse(once, str(path)))
    if once != twice:
        raise Disagreement(f"the printer's output does not print back the same:\n{once}")


def _run_both(path: Path) -> Outcome:
    """`rlang run FILE` on the interpreter in the sandbox (under a time limit), then on
    llvm when the interpreter finished: the same status, and the same output when both
    ran.  An llvm refusal of a construct it does not handle (BackendUnsupported,
    LANGUAGE.md §10) is not a disagreement, nor a type error in code the
    interpreter did not run (`_llvm_refuses`)."""
    interp = cli("run", str(path), "--json", "--sandbox", "--time-limit", str(RUN_SECONDS))
    if interp.kind not in ("ok", "error") or _stopped_by_limit(interp) or \
            _unchecked_index(interp, path):
        return interp
    llvm = cli("run", str(path), "--json", "--backend", "llvm")
    if llvm.is_defect:
        return llvm
    if interp.kind == "ok" and llvm.kind == "error" and _llvm_refuses(path):
        return Outcome("unsupported", llvm.detail)
    if interp.kind != llvm.kind:
        return Outcome("disagree", f"interp: {interp.kind} {interp.detail[:2000]}\n"
                                   f"llvm: {llvm.kind} {llvm.detail[:2000]}")
    if interp.kind == "ok" and not _same_json(interp.value[1], llvm.value[1]):
        return Outcome("disagree", f"interp printed\n{interp.value[1][:3000]}\n"
                                   f"llvm printed\n{llvm.value[1][:3000]}")
    return llvm


def _llvm_refuses(path: Path) -> bool:
    """Whether llvm refuses the program (BackendUnsupported), including the
    CompiledTypeError of a statement the interpreter never ran (`for i = 0:-1`
    around `t += !k`: docs/backends.md, "What auto runs where llvm cannot")."""
    import rlang
    from rlang.deep import run_deep
    from rlang.types_rules import BackendUnsupported

    module = rlang.load(str(path), backend="llvm")
    try:
        run_deep(module.compiled.run_main)      # (Module.run_main makes the refusal
    except BackendUnsupported:                  # of a named backend a plain error)
        return True
    except Exception:
        return False
    return False


def _unchecked_index(outcome: Outcome, path: Path) -> bool:
    """Whether the interpreter found an index out of bounds in a program that has
    `@inbounds`: compiled code skips those checks there (LANGUAGE.md §6), so its
    run would read or write outside the array, which the user asked for."""
    return outcome.kind == "error" and "out of bounds" in outcome.detail and \
        b"@inbounds" in path.read_bytes()


def _stopped_by_limit(outcome: Outcome) -> bool:
    """Whether the sandbox ended the run (time, memory or call depth)."""
    return outcome.kind == "error" and "sandbox's" in outcome.detail


def _same_json(a: str, b: str) -> bool:
    import json

    from .compare import same_values
    try:
        last_a, last_b = (json.loads(x.strip().splitlines()[-1]) for x in (a, b))
    except (ValueError, IndexError):
        return a == b
    return same_values(last_a, last_b)


def describe(spec: dict) -> str:
    return (f"# from {spec['origin']}, mutated by {', '.join(spec['mutations'])}\n"
            f"# the source ({len(spec['source'])} bytes; non-UTF-8 bytes shown escaped):\n"
            + spec["source"][:20000].decode("utf-8", "backslashreplace"))
