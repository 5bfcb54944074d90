"""`rlang compile FILE --emit llvm|asm|obj|shared` (issue #5): the shared library and
its C header are used from a C program built with the system compiler."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

SOURCE = """\
function multiplier(y!, a, b)
    y! += a * b
end

function scale!(x: f64[:], k: f64)
    for i = 0:length(x) - 1
        x[i] += k * i
    end
end

function poke!(x: f64[:], i: i64)
    x[i] += 1.0
end
"""

C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "libprog.h"

int main(void) {
    int64_t ctx[REV_CTX_WORDS];
    memset(ctx, 0, sizeof ctx);
    ctx[REV_CTX_MAX_DEPTH] = 10000;
    double y = 2.0, a = 3.0, b = 5.0;
    int32_t status = rev_multiplier__f64_f64_f64(ctx, &y, &a, &b);
    printf("%d %.17g\n", status, y);
    status = rev_inv_multiplier__f64_f64_f64(ctx, &y, &a, &b);
    printf("%d %.17g\n", status, y);
    double data[4] = {0.0, 0.0, 0.0, 0.0};
    rev_array1 x = {data, {4}, {1}};
    double k = 0.5;
    status = rev_scale___f64a1_f64(ctx, &x, &k);
    printf("%d %g %g %g %g\n", status, data[0], data[1], data[2], data[3]);
    status = rev_inv_scale___f64a1_f64(ctx, &x, &k);
    printf("%d %g %g %g %g\n", status, data[0], data[1], data[2], data[3]);
    int64_t i = 7;
    memset(ctx, 0, sizeof ctx);
    ctx[REV_CTX_MAX_DEPTH] = 10000;
    status = rev_poke___f64a1_i64(ctx, &x, &i);
    printf("%d %d\n", status, ctx[REV_CTX_SITE] != 0);
    /* the gradient of y! after multiplier: run it, seed dy = 1, run its gradient pass */
    memset(ctx, 0, sizeof ctx);
    ctx[REV_CTX_MAX_DEPTH] = 10000;
    y = 2.0;
    rev_multiplier__f64_f64_f64(ctx, &y, &a, &b);
    double gy = 1.0, ga = 0.0, gb = 0.0;
    status = rev_grad_inv_multiplier__f64_f64_f64(ctx, &y, &a, &b, &gy, &ga, &gb);
    printf("%d %g %g %g %g\n", status, y, gy, ga, gb);
    /* d(sum of x)/dk after scale! */
    double grad_data[4] = {1.0, 1.0, 1.0, 1.0};
    rev_array1 gx = {grad_data, {4}, {1}};
    double gk = 0.0;
    rev_scale___f64a1_f64(ctx, &x, &k);
    status = rev_grad_inv_scale___f64a1_f64(ctx, &x, &k, &gx, &gk);
    printf("%d %g %g\n", status, data[3], gk);
    return 0;
}
"""


def rlang(*args, cwd):
    return subprocess.run([sys.executable, "-m", "rlang.cli", *args], cwd=cwd,
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_shared_library_with_a_c_program(tmp_path):
    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler, "the tests need a C compiler"
    (tmp_path / "prog.rev").write_text(SOURCE)
    done = rlang("compile", "prog.rev", "--emit", "shared", "-o", "libprog.so", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "libprog.so").exists() and (tmp_path / "libprog.h").exists()
    (tmp_path / "main.c").write_text(C_PROGRAM)
    build = subprocess.run([compiler, "-o", "main", "main.c", "-L.", "-lprog",
                            "-Wl,-rpath,$ORIGIN"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "0 17", "0 2", "0 0 0.5 1 1.5", "0 0 0 0 0", "1 1", "0 2 1 5 3", "0 0 6"]
    header = (tmp_path / "libprog.h").read_text()
    assert "gradient pass of multiplier" in header


LARGE_ANCILLA_SOURCE = """\
# counts the zeros of a fresh 2.4 MB ancilla, fills it, sums it, empties it again
function zeros_then_sum!(count!: i64, total!: f64, n: i64)
    a ← zeros(f64, n)
    for i = 0:n - 1
        if a[i] == 0.0
            count! += 1
        end
        a[i] += f64(i % 7)
    end
    for i = 0:n - 1
        total! += a[i]
    end
    for i = 0:n - 1
        a[i] -= f64(i % 7)
    end
    a → zeros(f64, n)
end
"""

LARGE_ANCILLA_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "libprog.h"

int main(void) {
    int64_t ctx[REV_CTX_WORDS];
    for (int round = 0; round < 3; round++) {
        memset(ctx, 0, sizeof ctx);
        ctx[REV_CTX_MAX_DEPTH] = 10000;
        int64_t count = 0, n = 300000;
        double total = 0.0;
        int32_t status = rev_zeros_then_sum___i64_f64_i64(ctx, &count, &total, &n);
        printf("%d %lld %.1f\n", status, (long long) count, total);
    }
    return 0;
}
"""


def test_large_ancillas_in_a_shared_library_come_from_calloc(tmp_path):
    """Outside rlang's process the kept-blocks hooks are null (Note [Large ancillas
    kept between calls]): a 2.4 MB ancilla is zero on every call, and freed."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler, "the tests need a C compiler"
    (tmp_path / "prog.rev").write_text(LARGE_ANCILLA_SOURCE)
    done = rlang("compile", "prog.rev", "--emit", "shared", "-o", "libprog.so", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "main.c").write_text(LARGE_ANCILLA_PROGRAM)
    build = subprocess.run([compiler, "-o", "main", "main.c", "-L.", "-lprog",
                            "-Wl,-rpath,$ORIGIN"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, check=True)
    total = float(sum(i % 7 for i in range(300000)))
    assert out.stdout.splitlines() == [f"0 300000 {total:.1f}"] * 3


STACK_SOURCE = """\
function save!(s: stack{f64}, x: f64)
    PUSH(s, x)
end

function main()
    s ← stack(i64)
    n ← 5
    PUSH(s, n)
end
"""

STACK_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libprog.h"

int main(void) {
    int64_t ctx[REV_CTX_WORDS];
    memset(ctx, 0, sizeof ctx);
    ctx[REV_CTX_MAX_DEPTH] = 10000;
    rev_stack s = {0, 0, 0};
    for (int k = 1; k <= 40; k++) {
        double x = 0.5 * k;
        rev_save___f64s_f64(ctx, &s, &x);
    }
    double *items = s.data;
    printf("%lld %g %g\n", (long long) s.length, items[0], items[39]);
    double x = 0.0;
    int32_t status = rev_inv_save___f64s_f64(ctx, &s, &x);
    printf("%d %lld %g\n", status, (long long) s.length, x);
    free(s.data);
    rev_stack store = {0, 0, 0};
    int64_t n = -1;
    status = rev_main(ctx, &store, &n);
    printf("%d %lld %lld %lld\n", status, (long long) store.length,
           (long long) ((int64_t *) store.data)[0], (long long) n);
    free(store.data);
    return 0;
}
"""


def test_stacks_in_a_shared_library(tmp_path):
    compiler = shutil.which("gcc") or shutil.which("cc")
    (tmp_path / "prog.rev").write_text(STACK_SOURCE)
    done = rlang("compile", "prog.rev", "--emit", "shared", "-o", "libprog.so", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "rev_stack *s" in (tmp_path / "libprog.h").read_text()
    (tmp_path / "main.c").write_text(STACK_PROGRAM)
    build = subprocess.run([compiler, "-o", "main", "main.c", "-L.", "-lprog",
                            "-Wl,-rpath,$ORIGIN"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["40 0.5 20", "0 39 20", "0 1 5 0"]


@pytest.mark.parametrize("emit, check", [
    ("llvm", lambda out: "define i32 @\"rev_multiplier__f64_f64_f64\"" in out),
    ("asm", lambda out: "rev_multiplier__f64_f64_f64:" in out),
])
def test_text_outputs(tmp_path, emit, check):
    (tmp_path / "prog.rev").write_text(SOURCE)
    done = rlang("compile", "prog.rev", "--emit", emit, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert check(done.stdout)


def test_object_file(tmp_path):
    (tmp_path / "prog.rev").write_text(SOURCE)
    done = rlang("compile", "prog.rev", "--emit", "obj", "-o", "prog.o", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "prog.o").read_bytes()[:4] == b"\x7fELF"


def test_a_program_nothing_of_which_compiles_is_a_clear_error(tmp_path):
    (tmp_path / "prog.rev").write_text("function f(x: f64)\n    t ← [ulog(x)]\n"
                                       "    t → [ulog(x)]\nend\n")
    done = rlang("compile", "prog.rev", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "can be compiled" in done.stderr


def test_the_same_program_at_two_paths_reports_its_own_path(tmp_path):
    """The disk cache is keyed by the files too: errors quote the file that ran."""
    import rlang as rl

    source = "function f(x: i64)\n    x += 10 // 0\nend\n"
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        path = tmp_path / name / "same.rev"
        path.write_text(source)
        with pytest.raises(rl.RlangError) as error:
            rl.load(str(path), backend="llvm").f(1)
        assert str(error.value).startswith(str(path) + ":2:"), str(error.value)


# ------------------------------------ generic functions: types from use, --signature

GENERIC_SOURCE = """\
function norm(s!, xs)
    for i = 0:length(xs) - 1
        s! += xs[i] * xs[i]
    end
end

function corner(s!, m)
    s! += m[0, size(m, 1) - 1]
end

function pick(s!, xs, k)
    s! += xs[k]
end

function outer(s!, v)
    norm(s!, v)
end
"""


@pytest.mark.parametrize("emit, defined", [
    ("llvm", lambda out, symbol: f'define i32 @"{symbol}"' in out),
    ("asm", lambda out, symbol: f"{symbol}:" in out),
])
def test_parameters_used_as_arrays_are_arrays_of_their_rank(tmp_path, emit, defined):
    # #23: `norm` (whose `xs` is an array only by its use) was left out without a word
    (tmp_path / "prog.rev").write_text(GENERIC_SOURCE)
    done = rlang("compile", "prog.rev", "--emit", emit, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    for symbol in ("rev_norm__f64_f64a1", "rev_inv_norm__f64_f64a1", "rev_corner__f64_f64a2",
                   "rev_pick__f64_f64a1_i64", "rev_outer__f64_f64a1"):
        assert defined(done.stdout, symbol), symbol


def test_an_inferred_signature_runs_from_c(tmp_path):
    import ctypes

    from rlang.backends import abi

    (tmp_path / "prog.rev").write_text(GENERIC_SOURCE)
    done = rlang("compile", "prog.rev", "--emit", "shared", "-o", "libprog.so", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "int32_t rev_norm__f64_f64a1(int64_t *ctx, double *s_, rev_array1 *xs);" in \
        (tmp_path / "libprog.h").read_text()

    class Array1(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * 1),
                    ("strides", ctypes.c_int64 * 1)]

    lib = ctypes.CDLL(str(tmp_path / "libprog.so"))
    ctx = (ctypes.c_int64 * abi.CTX_WORDS)()
    ctx[abi.CTX_MAX_DEPTH] = 10000
    data = (ctypes.c_double * 3)(1.0, 2.0, 3.0)
    xs = Array1(ctypes.cast(data, ctypes.c_void_p), (ctypes.c_int64 * 1)(3),
                (ctypes.c_int64 * 1)(1))
    s = ctypes.c_double(0.5)
    assert lib.rev_norm__f64_f64a1(ctx, ctypes.byref(s), ctypes.byref(xs)) == 0
    assert s.value == 14.5


def test_a_function_left_out_is_named_with_its_reason(tmp_path):
    (tmp_path / "prog.rev").write_text(GENERIC_SOURCE + "function both(s!, v)\n"
                                       "    s! += v[0]\n    s! += v[0, 1]\nend\n")
    done = rlang("compile", "prog.rev", "--emit", "asm", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "`both` is not compiled: f64[:,:] needs 2 indices, got 1" in done.stderr
    assert "rev_norm__f64_f64a1:" in done.stdout


def test_a_signature_on_the_command_line_picks_the_types(tmp_path):
    (tmp_path / "prog.rev").write_text(GENERIC_SOURCE)
    done = rlang("compile", "prog.rev", "--signature", "norm(f64, f32[:])",
                 "--signature=pick(i64, i64[:], i64)", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert 'define i32 @"rev_norm__f64_f32a1"' in done.stdout
    assert 'define i32 @"rev_pick__i64_i64a1_i64"' in done.stdout
    assert 'define i32 @"rev_pick__f64_f64a1_i64"' not in done.stdout


def test_a_signature_against_the_declared_types_leaves_the_function_out(tmp_path):
    (tmp_path / "prog.rev").write_text(SOURCE)
    done = rlang("compile", "prog.rev", "--signature", "poke!(i64[:], i64)", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "`poke!` is not compiled: argument `x` of `poke!` must be an f64[:], got an " \
        "i64[:]" in done.stderr


@pytest.mark.parametrize("signature, message", [
    ("norm(f6, f64[:])", "--signature 'norm(f6, f64[:])': unknown type 'f6'"),
    ("norm(f64, f64[:]", "--signature 'norm(f64, f64[:]': unexpected end of input"),
    ("nosuch(f64)", "--signature 'nosuch(f64)': prog.rev has no function `nosuch`; it "
                    "defines norm, corner, pick, outer"),
    ("norm(f64)", "--signature 'norm(f64)': `norm` takes 2 parameter(s) (s!, xs), the "
                  "signature gives 1"),
])
def test_a_bad_signature_is_a_command_line_error_naming_it(tmp_path, signature, message):
    (tmp_path / "prog.rev").write_text(GENERIC_SOURCE)
    done = rlang("compile", "prog.rev", "--signature", signature, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("rlang: error: " + message), done.stderr


def test_two_signatures_for_one_function_are_refused(tmp_path):
    (tmp_path / "prog.rev").write_text(GENERIC_SOURCE)
    done = rlang("compile", "prog.rev", "--signature", "norm(f64, f64[:])",
                 "--signature", "norm(f64, f32[:])", cwd=tmp_path)
    assert done.returncode == 2
    assert "`norm` has a signature already; give one per function" in done.stderr


def test_compiled_outputs_have_no_polls_for_leaving_quick_code(tmp_path):
    # (only quickly compiled code polls: Note [Leaving the quick code], tiers.py)
    (tmp_path / "prog.rev").write_text(
        "function spin!(y: f64[:], n: i64)\n    for k = 0:n - 1\n        y[0] += 1.0\n"
        "    end\nend\n")
    for emit in ("llvm", "asm"):
        done = rlang("compile", "prog.rev", "--emit", emit, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "define" in done.stdout or "spin" in done.stdout
        assert "rev_preempt" not in done.stdout
