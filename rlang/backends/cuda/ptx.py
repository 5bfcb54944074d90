"""`rlang compile FILE --emit ptx [--cc MAJOR.MINOR]`: PTX of a program's GPU code.

`ptx_text(unit, invcheck, cc, signatures)` specialises every function (and its
inverse, and the gradient passes) for the parameter types that `rlang compile`
picks for the llvm backend (rlang/lower/entries.py: `--signature`, else declared,
else from use), writes the cuda backend's program (rlang/backends/cuda/emit.py), and compiles
with `numba.cuda.compile_ptx` for compute capability `cc` — no GPU needed, only
the CUDA toolkit's NVVM (the `cuda` extra installs it).  Without numba-cuda or
NVVM, or for a `cc` the installed NVVM does not compile for, it raises RlangError
saying so:

- each `@parallel for` kernel, with the signature it is launched with;
- every function that can run on the GPU, as a device function.

Sections are separated by `// ----` comments naming the kernel or function.  This
runs Numba's CUDA compiler, so it cannot run in a process that uses the simulator.
"""
from __future__ import annotations

from ...ir import nodes as ir
from ...errors import RlangError
from ...ad.derivatives import with_gradient_passes
from ...lower.entries import entries_of
from ...lower.statements import lower_many
from ...types_rules import BackendUnsupported
from .emit import write_program
from .privatised import variant_names
from .runtime import constant_array, device_form

#: The oldest compute capability that both CUDA 12's and CUDA 13's NVVM compile for
#: (CUDA 13 dropped 5.x to 7.2); f64 atomic adds need 6.0.
DEFAULT_CC = (7, 5)


def _numba_type(t, narrow_as_wide: bool = False):
    """The Numba type of a value of IR type `t` on the device (backends/cuda/systems.py: a fixed
    is int64, a ulog float64, a complex array float64 pairs)."""
    from numba import types

    scalars = {"bool": types.boolean, "i32": types.int32, "i64": types.int64,
               "f32": types.float32, "f64": types.float64, "fixed": types.int64,
               "ulog": types.float64, "complex": types.complex128}
    if isinstance(t, ir.ArrayType):
        if t.elem == "complex":
            return types.Array(types.float64, t.ndim + 1, "A")
        return types.Array(scalars[t.elem], t.ndim, "A")
    if narrow_as_wide and t in ("i32", "f32"):
        return types.int64 if t == "i32" else types.float64
    return scalars[t]


def ptx_text(unit, invcheck: bool, cc: tuple = DEFAULT_CC,
             signatures: dict | None = None) -> tuple:
    """(The PTX text of `unit` for compute capability `cc` (a (major, minor) pair),
    the functions left out as (name, reason)); `signatures` as for entries_of."""
    try:
        from numba import cuda

        from .device import common_namespace, gpu_namespace
    except ImportError as error:
        raise RlangError(f"--emit ptx needs numba-cuda ({error}): "
                         "pip install 'rlang[cuda]'") from None
    entries, skipped = entries_of(unit, invcheck, signatures)
    if not entries:
        raise BackendUnsupported("no function of this program can be compiled for the GPU: "
                                 + "; ".join(f"{n}: {m}" for n, m in skipped))
    module, shadows = with_gradient_passes(lower_many(unit, entries, invcheck))
    program = write_program(module, shadows, all_device=True)
    space = gpu_namespace()
    space.update(common_namespace())
    for name, c in program.constants.items():
        space[name] = device_form(constant_array(c))
    exec(compile(program.device_source, f"<{unit.file}: cuda>", "exec"), space)
    python_functions = {s: space["D_" + s] for s in program.device}
    for symbol in program.device:
        space["D_" + symbol] = cuda.jit(device=True)(python_functions[symbol])
    out = [f"// PTX of {unit.file} for sm_{cc[0]}{cc[1]} (rlang, cuda backend)"]
    out += [f"// left out: {name}: {reason}" for name, reason in skipped]
    with _target_cc(cc), _nvvm_errors(cc):
        _compile_all(out, program, space, python_functions, program.module, cc)
    return "\n".join(out) + "\n", skipped


class _nvvm_errors:
    """NVVM missing, or refusing the target, as an RlangError (not an internal one)."""

    def __init__(self, cc):
        self.cc = cc

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        from numba.cuda.cudadrv import error as cuda_errors
        from numba.cuda.cudadrv.error import NvvmError, NvvmSupportError

        # newer numba-cuda refuses an unsupported --cc itself, before NVVM
        cc_refused = getattr(cuda_errors, "CCSupportError", ())
        refused = isinstance(error, NvvmError) and "INVALID_OPTION" in str(error) or \
            isinstance(error, NvvmSupportError) and "compute capability" in str(error) or \
            isinstance(error, cc_refused)
        if isinstance(error, NvvmSupportError) and not refused:
            first = str(error).strip().splitlines()[0]
            raise RlangError(f"--emit ptx needs the CUDA toolkit's NVVM, which was not found "
                             f"({first}): pip install 'rlang[cuda]'") from None
        if refused:
            raise RlangError(f"--cc {self.cc[0]}.{self.cc[1]}: the installed CUDA toolkit's "
                             f"NVVM does not compile for sm_{self.cc[0]}{self.cc[1]} (CUDA 13 "
                             "starts at 7.5); give a --cc it supports") from None
        return False


class _target_cc:
    """Note [Device functions without a GPU]: numba-cuda types a call of a device
    function by compiling it for the current device's compute capability, which
    needs a GPU; `compile_ptx` itself takes `cc`.  While PTX is emitted, the device
    the dispatchers ask for is a stand-in with the requested `cc`."""

    def __init__(self, cc):
        self.cc = cc

    def __enter__(self):
        from numba.cuda import dispatcher

        self.saved = dispatcher.get_current_device
        cc = self.cc
        dispatcher.get_current_device = lambda: type("Device", (), {"compute_capability": cc})

    def __exit__(self, *exc):
        from numba.cuda import dispatcher

        dispatcher.get_current_device = self.saved
        return False


def _compile_all(out, program, space, python_functions, module, cc) -> None:
    from numba import types

    ctx = (types.int64[::1], types.float64[::1])
    for plan in program.kernels:
        boxes = tuple(types.float64[::1] for _ in plan.boxes)      # complex: two parts
        signature = ((types.int64[::1], types.float64[::1]) if plan.checked else ()) + \
            boxes + (types.int64, types.int64, types.int64) + \
            tuple(_numba_type(v.type) for v in plan.arrays) + \
            tuple(_numba_type(v.type, True) for v in plan.scalars)
        span = module.sites[plan.loop.step_site].span
        variants = [(plan.name, signature)]
        if plan.private:        # Note [Privatised gradients on the GPU]
            sums = tuple(_numba_type(v.type) for v in plan.private if v in plan.arrays) + \
                tuple(types.float64[::1] for v in plan.private if v in plan.boxes)
            rows = types.float64[:, ::1]
            shared, rows_kernel, sums_kernel = variant_names(plan)
            variants += [(shared, signature), (rows_kernel, signature + (rows,)),
                         (sums_kernel, (rows, types.int64) + sums)]
        for name, types_ in variants:
            ptx = _compile_ptx(space[name], types_, cc)
            out.append(f"// ---- kernel {name}: @parallel for {plan.loop.var.name} at {span}")
            out.append(ptx)
    for symbol in program.device:
        fn = module.functions[symbol]
        signature = ctx + tuple(_numba_type(p.type) for p in fn.params)
        ptx = _compile_ptx(python_functions[symbol], signature, cc, device=True)
        out.append(f"// ---- device function {symbol} ({fn.name}"
                   f"{', inverse' if fn.inverse else ''})")
        out.append(ptx)



def _compile_ptx(function, signature, cc, device: bool = False) -> str:
    """`numba.cuda.compile_ptx` for exactly `cc`: Numba quietly targets the newest
    compute capability it knows when asked for a newer one; that is refused."""
    from numba import cuda

    ptx, _ = cuda.compile_ptx(function, signature, device=device, cc=cc)
    wanted = f".target sm_{cc[0]}{cc[1]}"
    if wanted not in ptx.splitlines():
        got = next((line for line in ptx.splitlines() if line.startswith(".target")), "")
        raise RlangError(f"--cc {cc[0]}.{cc[1]}: the installed CUDA toolkit compiles for "
                         f"`{got.split()[-1] if got else 'another target'}` instead; give a "
                         "--cc it supports")
    return ptx
