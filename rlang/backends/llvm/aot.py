"""Ahead-of-time compilation: `rlang compile FILE --emit llvm|asm|obj|shared [-o OUT]`.

`compile_file(unit, emit, invcheck, signatures)` specialises every function of the
program (and its inverse) for the types `signatures` gives it, else its declared
parameter types, an undeclared parameter being what its use shows
(rlang/lower/entries.py, docs/backends.md), and returns the LLVM IR text, the
assembly, or the object code, with the functions left out and why.
`write_shared(unit, path, invcheck, signatures)` links a shared library with `cc -shared` and
writes the C header `path` with `.h` beside it, declaring the descriptor types, the
context size and every entry point (forward `rev_NAME__TYPES`, inverse
`rev_inv_NAME__TYPES`, and the gradient passes `rev_grad_inv_NAME__TYPES` (of NAME)
and `rev_grad_NAME__TYPES` (of ~NAME), whose parameters are those of the function
followed by one gradient per float parameter; calling convention:
rlang/backends/abi.py).

Functions the llvm backend cannot compile yet (or cannot type as declared or
inferred) are left out, each named with the reason (returned, and in the header);
BackendUnsupported when none compiles.  `main` is compiled forward only,
with its store as extra pointer parameters after its (no) arguments.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...ir import nodes as ir
from ...errors import RlangError
from ...ad.adjoint_ir import AdjointFunction
from ...ad.derivatives import with_gradient_passes
from ...lower.entries import entries_of
from ...lower.statements import lower_many
from ...types_rules import BackendUnsupported
from .. import abi
from .emit import emit_module
from .jit import optimise, target_machine
from .tiers import without_polls


def compiled_module(unit, invcheck: bool, signatures: dict | None = None):
    """(IR module, its LLVM module, the entry list, the functions left out as
    (name, reason)); `signatures`: name → IR parameter types (entries_of)."""
    entries, skipped = entries_of(unit, invcheck, signatures)
    if not entries:
        raise BackendUnsupported("no function of this program can be compiled yet: " +
                                 "; ".join(f"{n}: {m}" for n, m in skipped))
    module, shared = with_gradient_passes(lower_many(unit, entries, invcheck))
    return module, emit_module(module, Path(unit.file).stem, python_entries=False,
                               shared=shared), entries, skipped


def compile_file(unit, emit: str, invcheck: bool = True,
                 signatures: dict | None = None) -> tuple:
    """(LLVM IR (str), assembly (str) or object code (bytes) of the whole program,
    the functions left out as (name, reason))."""
    _, llvm_module, _, skipped = compiled_module(unit, invcheck, signatures)
    if emit == "llvm":          # (as optimised: no polls for leaving quick code)
        return without_polls(str(llvm_module)), skipped
    machine = target_machine(reloc="pic")
    optimised = optimise(str(llvm_module), machine)
    return (machine.emit_assembly(optimised) if emit == "asm" else
            machine.emit_object(optimised)), skipped


def write_shared(unit, path: str, invcheck: bool = True,
                 signatures: dict | None = None) -> tuple:
    """Write the shared library `path` and its header; return (the files written,
    the functions left out as (name, reason))."""
    module, llvm_module, entries, skipped = compiled_module(unit, invcheck, signatures)
    machine = target_machine(reloc="pic")
    obj = machine.emit_object(optimise(str(llvm_module), machine))
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RlangError("a C compiler (cc or gcc) is needed to link a shared library")
    with tempfile.TemporaryDirectory() as tmp:
        object_path = Path(tmp) / "rev.o"
        object_path.write_bytes(obj)
        done = subprocess.run([compiler, "-shared", "-o", str(path), str(object_path), "-lm"],
                              capture_output=True, text=True)
    if done.returncode != 0:
        raise RlangError(f"linking {path} failed:\n{done.stderr.strip()}")
    header = Path(path).with_suffix(".h")
    try:
        header.write_text(c_header(module, entries, skipped, Path(unit.file).name))
    except OSError as error:
        raise RlangError(f"cannot write {header}: {error.strerror or error}") from None
    return [str(path), str(header)], skipped


def c_header(module: ir.Module, entries, skipped, source: str) -> str:
    functions = list(module.functions.values())
    ranks = sorted({v.type.ndim for fn in functions for v in fn.params + fn.results
                    if isinstance(v.type, ir.ArrayType)})
    lines = [f"/* rlang: entry points compiled from {source}.",
             " * Each returns 0, or 1 when a check failed (see rlang/backends/abi.py).",
             " * ctx: REV_CTX_WORDS int64 words, zeroed, with ctx[REV_CTX_MAX_DEPTH] set",
             " * to the call-depth limit (10000 in rlang). */",
             "#ifndef REV_" + _macro(source) + "_H", "#define REV_" + _macro(source) + "_H",
             "#include <stdint.h>", "",
             f"#define REV_CTX_WORDS {abi.CTX_WORDS}",
             f"#define REV_CTX_SITE {abi.CTX_SITE}",
             f"#define REV_CTX_MAX_DEPTH {abi.CTX_MAX_DEPTH}", ""]
    for rank in ranks:
        lines.append(f"typedef struct {{ void *data; int64_t shape[{rank}]; "
                     f"int64_t strides[{rank}]; }} rev_array{rank};  /* strides in elements */")
    if any(isinstance(v.type, ir.StackType) for fn in functions
           for v in fn.params + fn.results):
        lines += ["/* a stack: `length` items (stored as array elements are) bottom first in",
                  " * `data`, malloc memory with room for `capacity`; a call may realloc it",
                  " * (start from {0, 0, 0}); free `data` when done. */",
                  "typedef struct { void *data; int64_t length; int64_t capacity; } rev_stack;"]
    lines.append("")
    for fn in functions:            # every specialisation, the entries and their callees
        params = ["int64_t *ctx"] + [_c_param(p) for p in fn.params + fn.results]
        types = ", ".join(ir.type_text(p.type) for p in fn.params)
        store = f"; store out: {', '.join(r.name for r in fn.results)}" if fn.results else ""
        lines.append(f"/* {_describe(fn)}({types}){store} */")
        lines.append(f"int32_t {fn.symbol}({', '.join(params)});")
    for name, why in skipped:
        lines.append(f"/* not compiled: {name}: {why} */")
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def _describe(fn: ir.Function) -> str:
    """What an entry point computes, for the header."""
    if not fn.symbol.startswith(AdjointFunction.symbol("rev_")):
        return f"{'~' if fn.inverse else ''}{fn.name}"
    # the adjoint of ~f's IR is the gradient pass of f (and that of f, of ~f)
    of = fn.name if fn.inverse else f"~{fn.name}"
    return (f"gradient pass of {of}: call it with {of}'s outputs and the loss's entry of "
            f"the *_grad arguments set to 1 (others 0); it restores the inputs and leaves "
            f"d loss/d input in the *_grad arguments; arguments")


def _c_param(var: ir.Var) -> str:
    name = ir.c_identifier(var.name)
    if isinstance(var.type, ir.ArrayType):
        return f"rev_array{var.type.ndim} *{name}"
    if isinstance(var.type, ir.StackType):
        return f"rev_stack *{name}"
    return f"{abi.C_TYPES[var.type]} *{name}"


def _macro(source: str) -> str:
    return "".join(c.upper() if c.isalnum() else "_" for c in source)
