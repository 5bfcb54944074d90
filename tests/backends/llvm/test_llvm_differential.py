"""The llvm backend agrees with the interpreter (LANGUAGE.md §10, issue #5).

- every example runs `main` on both backends with the same store and output, or the
  llvm backend refuses it with a clean `BackendUnsupported` error naming the
  construct (`NOT_YET` lists those; a listed example that starts working fails the
  test, so the list stays true);
- on generated programs (tests/property/generators.py, stacks included), the top
  function gives the same results on both backends, forward and inverse, with the
  same `@safe` output, and the inverse gives back the inputs exactly;
- `rlang.vmap` of a generated top function on llvm gives every item what the
  interpreter gives it alone (or fails at the same item).
"""
from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlang
from rlang.types_rules import BackendUnsupported

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "property"))
from generators import cases  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.rev"))

#: Examples the llvm backend does not compile yet, and the construct it names.
NOT_YET: dict = {}


def _store(module):
    out = io.StringIO()
    with redirect_stdout(out):
        store = module.run_main()
    return store, out.getvalue()


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            a.dtype == b.dtype and a.shape == b.shape and \
            np.allclose(a, b, rtol=1e-12, atol=0.0, equal_nan=True)
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and (a == b or abs(a - b) <= 1e-12 * abs(b)
                                       or (a != a and b != b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_agrees_with_interpreter(path):
    interp = rlang.load(path)
    if path.stem in NOT_YET:
        with pytest.raises(BackendUnsupported, match=NOT_YET[path.stem].replace("(", r"\(")
                           .replace(")", r"\)")):
            rlang.load(path, backend="llvm").run_main()
        return
    expected, expected_out = _store(interp)
    got, got_out = _store(rlang.load(path, backend="llvm"))
    assert [n for n, _ in got] == [n for n, _ in expected]
    for (name, a), (_, b) in zip(got, expected):
        assert _same(a, b), f"{name}: llvm {a!r}, interpreter {b!r}"
    assert got_out == expected_out


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@settings(max_examples=25, deadline=None,     # (40 took 53 s; tests/fuzz runs more)
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_generated_programs_agree(case):
    gp, args = case
    interp = rlang.loads(gp.source)
    llvm = rlang.loads(gp.source, backend="llvm")
    for direction in (lambda m: m[gp.top], lambda m: ~m[gp.top]):
        out_i, out_l = io.StringIO(), io.StringIO()
        with redirect_stdout(out_i):
            expected = direction(interp)(*_copy(args))
        with redirect_stdout(out_l):
            got = direction(llvm)(*_copy(args))
        for a, b in zip(got, expected):
            assert _same(a, b), f"{gp.source}\nargs {args}: llvm {a!r}, interpreter {b!r}"
        assert out_l.getvalue() == out_i.getvalue(), gp.source
    forward = llvm[gp.top](*_copy(args))
    back = (~llvm[gp.top])(*_copy(list(forward)))
    for a, b in zip(back, args):
        assert _same(a, b if not isinstance(b, np.ndarray) else b), gp.source


def test_import_rlang_does_not_import_llvmlite():
    import subprocess

    code = "import sys, rlang; print('llvmlite' in sys.modules or 'numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout.strip()
    assert out == "False"


def test_llvm_errors_match_the_interpreter():
    """Run-time checks in compiled code become the interpreter's error: class,
    message, span and call chain (function, call site, direction)."""
    source = '''
function inner(a: f64[:], i)
    a[i] += 1.0
end

function outer(a: f64[:], i)
    inner(a, i)
end

function dealloc(x)
    t ← x * 2.0
    t += 1.0
    t → x * 2.0
end

function divide(q, n)
    q += 10 // n
end

function grow(x, n)
    while (x < n, x > 0)
        x += 1
    end
end
'''
    interp, llvm = rlang.loads(source), rlang.loads(source, backend="llvm")
    calls = [("outer", (np.zeros(3), 5)), ("outer", (np.zeros(3), -1)),
             ("dealloc", (1.5,)), ("divide", (0, 0)), ("grow", (1, 5))]
    for name, args in calls:
        with pytest.raises(rlang.RlangError) as expected:
            interp[name](*_copy(args))
        with pytest.raises(rlang.RlangError) as got:
            llvm[name](*_copy(args))
        assert type(got.value) is type(expected.value)
        assert got.value.message == expected.value.message
        assert got.value.span == expected.value.span
        assert [(f.function, f.call_site, f.backward) for f in got.value.frames] == \
            [(f.function, f.call_site, f.backward) for f in expected.value.frames]


def test_unbounded_recursion_is_a_clean_error():
    """The call depth is limited in compiled code as in the interpreter."""
    source = "function down(n)\n    DEC(n)\n    down(n)\nend\n"
    for backend in ("interp", "llvm"):
        m = rlang.loads(source, backend=backend)
        with pytest.raises(rlang.RlangError, match="call depth exceeded the limit of 10000"):
            m.down(5)


def test_deep_recursion_within_the_limit_runs():
    source = """
function triangle(n, acc)
    if n > 0
        acc += n
        m ← n - 1
        triangle(m, acc)
        m → n - 1
    end
end
"""
    m = rlang.loads(source, backend="llvm")
    assert m.triangle(9000, 0) == (9000, 9000 * 9001 // 2)
    assert (~m.triangle)(9000, 9000 * 9001 // 2) == (9000, 0)


def test_array_deallocation_checks():
    """`a → zeros(…)`, `a → [literal]` and `a → b` compare every element (floats
    within the tolerance) in compiled code, with strided arguments too."""
    source = """
function keep(x: f64[:,:], k)
    a ← zeros(f64, size(x, 0), size(x, 1))
    for i = 0:size(x, 0) - 1
        for j = 0:size(x, 1) - 1
            a[i, j] += x[i, j] * k
        end
    end
    for i = 0:size(x, 0) - 1
        for j = 0:size(x, 1) - 1
            a[i, j] -= x[i, j]
        end
    end
    a → x
end

function literal(k)
    c ← [1.0, 2.0]
    c[0] += k
    c → [1.0, 2.0]
end
"""
    m = rlang.loads(source, backend="llvm")
    base = np.arange(12.0).reshape(3, 4)
    view = base[:, ::2]                           # strides (4, 2) in elements
    assert m.keep(view, 2.0)[1] == 2.0
    reference = rlang.loads(source, backend="interp")
    for name, args, shown in (
            ("keep", (view, 3.0), "a = [[0.0, 4.0], [8.0, 12.0], [16.0, 20.0]], "
                                  "expected [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]"),
            ("literal", (1.0,), "c = [2.0, 2.0], expected [1.0, 2.0]")):
        messages = []
        for module in (m, reference):
            with pytest.raises(rlang.ReversibilityError) as caught:
                module[name](*args)
            messages.append(str(caught.value))
        assert messages[0] == messages[1] and messages[0].endswith(shown)
    assert m.literal(0.0) == (0.0,)


@pytest.mark.parametrize("argument, type_name", [(1.5, "an f64"), (2, "an i64"),
                                                   (True, "a bool")])
def test_conj_of_anything_but_a_complex_is_refused(argument, type_name):
    """LANGUAGE.md §3: CONJ updates complex numbers only (a real number is its own
    conjugate: CONJ of one is most likely a mistake); both backends refuse it."""
    source = "function f(x, y)\n    CONJ(x)\n    y += x\nend\n"
    for backend in ("interp", "llvm"):
        m = rlang.loads(source, backend=backend)
        with pytest.raises(rlang.RlangTypeError,
                           match=f"CONJ needs a complex, got {type_name}"):
            m.f(argument, 0.0)


def _varied(value, rng):
    """Another argument of the same kind and shape as `value` (a batch item)."""
    if isinstance(value, np.ndarray):
        if value.dtype == np.bool_:
            return rng.integers(0, 2, value.shape).astype(np.bool_)
        return np.array([v if abs(v) > 2 ** 62 else v + int(rng.integers(-3, 4))
                         for v in value.tolist()], dtype=np.int64)
    if isinstance(value, (bool, np.bool_)):
        return bool(rng.integers(0, 2))
    return value if abs(value) > 2 ** 62 else value + int(rng.integers(-3, 4))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(), st.integers(0, 2 ** 32 - 1))
def test_vmap_agrees_with_the_interpreter_item_by_item(case, seed):
    """rlang.vmap on llvm (one native call for the batch, rlang/backends/llvm/batch.py)
    gives each item what the interpreter gives it alone, or fails at the item where
    the interpreter first fails, with the same error class."""
    gp, args = case
    rng = np.random.default_rng(seed)
    items = [tuple(args)] + [tuple(_varied(a, rng) for a in args) for _ in range(2)]
    interp = rlang.loads(gp.source, backend="interp")
    llvm = rlang.loads(gp.source, backend="llvm")
    batches = [np.stack([np.asarray(item[j]) for item in items]) for j in range(len(args))]
    expected, failure = [], None
    for k, item in enumerate(items):
        try:
            with redirect_stdout(io.StringIO()):
                expected.append(interp[gp.top](*_copy(item)))
        except rlang.RlangError as error:
            failure = (k, type(error))
            break
    with redirect_stdout(io.StringIO()):
        if failure is not None:
            with pytest.raises(failure[1]) as caught:
                rlang.vmap(llvm[gp.top])(*batches)
            assert caught.value.batch_item == failure[0], gp.source
            return
        got = rlang.vmap(llvm[gp.top])(*batches)
    for k, outputs in enumerate(expected):
        for j, value in enumerate(outputs):
            mine = got[j][k]
            if isinstance(value, np.ndarray):
                assert np.array_equal(mine, value), f"{gp.source}\nitem {k} argument {j}"
            else:
                assert mine.item() == value, f"{gp.source}\nitem {k} argument {j}"


def _bits(value):
    """A value as bytes and type, for comparing results bit for bit."""
    array = np.asarray(value)
    return type(value).__name__, array.dtype.str, array.shape, array.tobytes()


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(), st.integers(0, 2 ** 32 - 1))
def test_vmap_on_threads_gives_the_bits_of_one_thread(case, seed):
    """A batch big enough to run in blocks on threads (Note [Batches on threads],
    rlang/backends/llvm/batch.py) gives, on 2 and 3 threads, the outputs of one
    thread bit for bit, with the same printed lines, or the same error at the same
    item with the batches left the same.  (About one generated program in ten
    neither recurses nor prints, the ones that run on threads.)"""
    gp, args = case
    rng = np.random.default_rng(seed)
    items = [tuple(args)] + [tuple(_varied(a, rng) for a in args) for _ in range(599)]
    llvm = rlang.loads(gp.source, backend="llvm")
    batches = [np.stack([np.asarray(item[j]) for item in items]) for j in range(len(args))]
    outcomes = []
    try:
        for count in (1, 2, 3):
            rlang.set_num_threads(count)
            copies = [b.copy() for b in batches]
            out = io.StringIO()
            try:
                with redirect_stdout(out):
                    got = rlang.vmap(llvm[gp.top])(*copies)
                outcome = ["ok", [_bits(g) for g in got]]
            except rlang.RlangError as error:
                outcome = [type(error), getattr(error, "batch_item", None), str(error)]
            outcomes.append(outcome + [[_bits(c) for c in copies], out.getvalue()])
    finally:
        from rlang import threads

        threads._state["count"] = None
    assert outcomes[1] == outcomes[0], gp.source
    assert outcomes[2] == outcomes[0], gp.source
