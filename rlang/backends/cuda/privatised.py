"""Gradients that many iterations of a kernel add to, gathered per block or per
thread before they reach their arrays: the kernel variants of
rlang/backends/cuda/emit.py `KernelWriter` and the kernel that sums rows.

Note [Privatised gradients on the GPU]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
In a gradient kernel, the gradients of values every iteration reads — GMM's
means, `icf` and `alphas`, a scalar weight `w` — are added to by every thread
(Note [Atomic gradients], emit.py).  With atomic adds on global memory, 10^6
iterations land on the same few hundred addresses, one at a time.  The loops
whose passes only add to such sums (the *private* sums of Note [Parallel loops on
threads], rlang/ir/blocks.py `loop_roles`) get two more variants of their
kernel, which differ from the plain one only in where the sums' names point and
in what runs after the grid-stride loop:

- **shared** (the default where the sums fit, 8 bytes each, in SHARED_BYTES of
  shared memory): each block zeroes a copy of all the sums in dynamic shared
  memory, its threads add into that copy (atomic adds on shared memory, which stay
  within the block's multiprocessor), and after a barrier the block adds each
  non-zero element of its copy into the array in global memory: one atomic add per
  element per block instead of one per iteration.
- **rows** (deterministic mode, `rlang.cuda.set_deterministic(True)`): each thread
  adds into its own row of a zeroed global buffer of threads × sums words, in the
  order of its iterations; a second kernel (`<kernel>_sums`, one thread per sum)
  adds the rows up in thread order and adds the total into the array.  Which
  iterations a thread takes depends only on the launch shape, and in this mode the
  shape depends only on the iteration count and the number of sums (blocks, then
  threads, are capped so that the rows take at most ROWS_BYTES, or one row where
  one row is more), so the same call gives the same
  bits on every run, on the same GPU (the last bits may differ between GPUs, whose
  built-ins differ, and between the GPU and the simulator, whose launch shapes
  differ).  The cost: the rows' memory and one more launch.

The names in the body do not change: `cuda.atomic.add(a, …)` adds to the block's
copy or the thread's row because `a` is bound to it, and device functions that get
`a` add there too.  Scalar gradients (boxes) are gathered the same way, as sums of
one word (two for a complex one).  A kernel whose loop also has other shared
gradients (roles the Note does not give) keeps the plain variant only, and so
does every kernel in invcheck's shared-write check (Note [Shared writes on the
GPU]), which needs the plain kernel's one-thread rerun: deterministic mode orders
the sums of the privatised kernels, and the atomic adds of those stay unordered.  A failed check ends its
thread early: the barrier waits only for threads still running (on a GPU and in the
simulator), and the sums of a failed launch are not used.
"""
from __future__ import annotations

from ...ir import nodes as ir

#: The most shared memory a block's copy of the sums may take (48 KB is what
#: every GPU gives a block without opting in; the rest is left for the launch).
SHARED_BYTES = 32 * 1024
#: The most memory the rows of deterministic mode may take.
ROWS_BYTES = 256 * 1024 * 1024

VARIANTS = ("shared", "rows")


def kernel_name(plan, variant: str) -> str:
    return plan.name if variant == "plain" else f"{plan.name}_{variant}"


def variant_names(plan) -> list:
    """The kernels a privatised loop has besides its plain one: its variants, then
    the kernel that sums the rows."""
    return [kernel_name(plan, v) for v in VARIANTS] + [f"{plan.name}_sums"]


def global_name(name: str) -> str:
    """The parameter that holds a privatised sum's array in global memory."""
    return "_g" + name


def sums(writer, plan) -> list:
    """(Var, its name in the body) of each privatised sum, arrays then boxes: the
    order of their words."""
    arrays = [v for v in plan.private if isinstance(v.type, ir.ArrayType)]
    boxes = [v for v in plan.private if not isinstance(v.type, ir.ArrayType)]
    return [(v, writer.name(v)) for v in arrays] + [(v, writer.boxes[v]) for v in boxes]


def write_prologue(writer, plan, variant: str) -> None:
    """Bind each sum's name to its block's copy (shared) or its thread's row (rows),
    zeroed, and give each part of a box a register, before the grid-stride loop."""
    emit = writer.emit
    ends = _offsets(writer, plan)
    if variant == "shared":
        emit("_sh = cuda.shared.array(0, float64)")
        emit(f"for _j in range(cuda.threadIdx.x, {ends[-1][1]}, cuda.blockDim.x):")
        emit("    _sh[_j] = 0.0")
        emit("cuda.syncthreads()")
        store = "_sh"
    else:
        emit("_row = _rows[cuda.grid(1)]")
        store = "_row"
    for (var, name), (start, end) in zip(sums(writer, plan), ends):
        view = f"{store}[{start}:{end}]"
        if isinstance(var.type, ir.ArrayType):
            view += f".reshape({global_name(name)}.shape)"
        else:
            for part in range(2 if var.type == "complex" else 1):
                register = writer.registers[var, part] = writer.fresh("acc")
                emit(f"{register} = 0.0")
        emit(f"{name} = {view}")


def write_epilogue(writer, plan, variant: str) -> None:
    """After the grid-stride loop: each box's registers into the thread's row, or
    summed over the warp (shuffles) into the block's copy; then (shared) after the
    block's barrier, the copy's non-zero elements added into the arrays in global
    memory."""
    emit = writer.emit
    for (var, part), register in writer.registers.items():
        box = writer.boxes[var]
        if variant == "rows":
            emit(f"{box}[{part}] += {register}")
            continue
        emit(f"add_over_warp({box}, {part}, {register})")
    if variant == "rows":
        return
    emit("cuda.syncthreads()")
    for (var, name), (start, end) in zip(sums(writer, plan), _offsets(writer, plan)):
        emit(f"for _j in range(cuda.threadIdx.x, {end} - {start}, cuda.blockDim.x):")
        emit(f"    _v = _sh[{start} + _j]")
        emit("    if _v != 0.0:")
        emit(f"        cuda.atomic.add({global_name(name)}, {_unravel(var, name)}, _v)")


def write_sums_kernel(writer, plan) -> list:
    """The kernel of deterministic mode that adds the rows up in thread order, one
    thread per word, and adds each total into its array or box."""
    pairs = sums(writer, plan)
    params = ["_rows", "_threads"] + [global_name(name) for _, name in pairs]
    lines = [f"def {plan.name}_sums({', '.join(params)}):"]
    ends = _offsets(writer, plan)
    lines += ["    _j = cuda.grid(1)",
              "    _stride = cuda.gridsize(1)",
              f"    while _j < {ends[-1][1]}:",
              "        _s = 0.0",
              "        for _t in range(_threads):",
              "            _s += _rows[_t, _j]"]
    for k, ((var, name), (start, end)) in enumerate(zip(pairs, ends)):
        keyword = "if" if k == 0 else "elif"
        lines.append(f"        {keyword} _j < {end}:")
        index = _unravel(var, name, f"(_j - {start})")
        lines.append(f"            {global_name(name)}[{index}] += _s")
    lines += ["        _j += _stride", ""]
    return lines


def _offsets(writer, plan) -> list:
    """(start, end) text of each sum's words: array sizes (complex arrays are held as
    pairs, so `.size` counts their words), then 1 or 2 words per box."""
    ends, at = [], "0"
    for var, name in sums(writer, plan):
        if isinstance(var.type, ir.ArrayType):
            size = f"{global_name(name)}.size"
        else:
            size = "2" if var.type == "complex" else "1"
        end = size if at == "0" else f"{at} + {size}"
        ends.append((at, f"({end})"))
        at = f"({end})"
    return ends


def _unravel(var, name: str, flat: str = "_j") -> str:
    """The index into a sum's global array of its `flat`-th word (C order)."""
    if not isinstance(var.type, ir.ArrayType):
        return flat
    ndim = var.type.ndim + (1 if var.type.elem == "complex" else 0)
    if ndim == 1:
        return flat
    array = global_name(name)
    indices, rest = [], flat
    for axis in range(ndim - 1, 0, -1):
        indices.append(f"{rest} % {array}.shape[{axis}]")
        rest = f"({rest} // {array}.shape[{axis}])"
    indices.append(rest)
    return f"({', '.join(reversed(indices))},)"
