"""`rlang.hessian` on a compiled backend, W columns per pass: the tangent transforms
"tan<W>" and "tan_grad<W>" (ad/derivatives.py) carry W directions at once.

`laned_hessian(functions, name, args, loss, inverse, chosen)` returns the Hessian as
`compiled_hessian` builds it (one row and column per float scalar input of the
arguments at the positions `chosen`, None: all; arrays in C order), or None where
the laned passes do not apply (an argument that is a stack, a fixed, ulog or
complex value; a pass that cannot carry lanes): the caller then takes one column
per pass, as before.

Note [Hessians in lanes]
~~~~~~~~~~~~~~~~~~~~~~~~
A Hessian by forward over reverse is one tangent run of f and one tangent run of
its gradient pass per input direction e_k.  The values (f's, and in the gradient
pass the first-order gradients too) are the same in every column; only the
tangents differ, and no value is ever computed from a tangent.  So the passes carry
W tangents at once (the laning of Note [Gradient lanes], ad/lanes.py, applied to
the tangent shadows): the values are computed once per W columns, the statements
that compute tangents run once per lane, next to each other, where LLVM can put
them in SIMD registers.  A 100 × 100 Hessian is then 13 pairs of native calls
(W = 8) instead of 100, each doing the primal work once.  The last group leaves its
unused lanes at zero: one compiled W serves every group.

The laned passes cost more to compile: for the graph embedding 3.1 s against 1.0 s
for the one-column passes, and a test suite's one-off Hessians of GMM, an MLP or an
n-body step took 2-4x longer.  So the first Hessian of a function (for arguments of
given kinds) takes one column a pass, and the laned passes are compiled from the
second call on (`LANED_FROM_CALL`), where a Newton iteration or a benchmark starts
to repay them.

Note [A Hessian's later calls]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Once a Hessian ran in one native call (Note [Hessian groups in one call],
backends/llvm/groups.py), its plan is kept under what decides it: the function,
the direction, the arguments' kinds (`signature_of`) and shapes, the loss and the
chosen arguments, where that call's arguments bound as they were.  A later call
with the same finds the plan by that key alone, checks what binding would (a
read-only array the function writes; with invcheck, aliasing), and runs it: no
binding, layout, pass lookup or key over the inputs.  The graph embedding's
Hessian (k = 10) spent about 80 of its 420-440 µs in that Python.
"""
from __future__ import annotations

import struct
import threading

import numpy as np

from ..frontend import ast
from ..lower.argument_types import signature_of, type_of_value
from ..ir.nodes import symbol_of
from .adjoint_ir import AdjointFunction
from .lanes import NotLaned
from .loss import loss_location, resolve_loss
from .symbols import laned_symbol, shadow_type
from .tangent_ir import TangentFunction

#: Directions per pass (Hessian columns computed together).
LANES = 8
#: The call (of one function with arguments of the same kinds) from which the
#: laned passes are used: the calls before take one column a pass (Note [Hessians
#: in lanes]).
LANED_FROM_CALL = 2


def laned_hessian(functions, name: str, args: list, loss, inverse: bool, chosen=None):
    """See the module docstring."""
    fn = functions.unit.functions[name]
    quick = _plan_key(name, args, loss, inverse, chosen)
    plan = functions.plans.get(quick) if quick is not None else None
    if plan is not None:            # Note [A Hessian's later calls]
        functions.interpreter.check_writable(fn, args)
        if functions.invcheck:
            functions.check_aliasing(fn, args)
        found = plan.run(list(args))
        if found is not None:
            return found
    view = resolve_loss(fn, loss)
    values = functions.bind(name, args)
    if not all(_plain(v) for v in values):
        return None
    types = tuple(type_of_value(v) for v in values)
    counter = ("hessian calls", name, inverse, types)
    functions.plans[counter] = calls = functions.plans.get(counter, 0) + 1
    if calls < LANED_FROM_CALL:
        return None
    layout = _Layout(values, [shadow_type(t) is not None for t in types], chosen)
    n = len(layout.inputs)
    if n < 2:
        return None
    lanes = min(LANES, n)
    try:
        forward = functions.native(name, types, inverse, derivative=f"tan{lanes}")
        backward = functions.native(name, types, inverse, derivative=f"tan_grad{lanes}")
    except NotLaned:
        return None
    forward_symbol = laned_symbol(TangentFunction.symbol(symbol_of(name, types, inverse)),
                                  lanes)
    backward_symbol = laned_symbol(TangentFunction.symbol(AdjointFunction.symbol(
        symbol_of(name, types, not inverse))), lanes)
    natives = (forward, forward_symbol, backward, backward_symbol)
    plan = _in_one_call(functions, fn, view, name, inverse, values, layout, lanes, natives)
    found = None if plan is None else plan.run(values)
    if found is None:
        return _from_python(functions, fn, view, values, layout, lanes, natives)
    if quick is not None and all(v is a for v, a in zip(values, args)):
        functions.plans[quick] = plan
    return found


def _plan_key(name: str, args: list, loss, inverse: bool, chosen) -> tuple | None:
    """The key of a Hessian's plan for a later call (Note [A Hessian's later
    calls]), or None where the arguments or the loss give none."""
    signature = signature_of(args)
    if signature is None:
        return None
    key = ("hessian plan", name, inverse, signature,
           tuple(a.shape if type(a) is np.ndarray else None for a in args), loss,
           None if chosen is None else frozenset(chosen))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _from_python(functions, fn, view, values: list, layout, lanes: int, natives: tuple):
    """The Hessian, the groups run from Python: two native calls each."""
    forward, forward_symbol, backward, backward_symbol = natives
    n = len(layout.inputs)
    # the tangents (0) and the gradients' tangents (1) of every lane, flat: each
    # lane's shadows are views of its row, zeroed again before each group
    flat = np.zeros((2, lanes, layout.size))
    tangents, moved = ([layout.shadows(flat[half, lane]) for lane in range(lanes)]
                       for half in (0, 1))
    copies = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
    hessian = np.empty((n, n))
    for start in range(0, n, lanes):
        count = min(lanes, n - start)
        flat.fill(0.0)
        flat[0, np.arange(count), layout.inputs[start:start + count]] = 1.0
        for k in range(len(values)):
            if isinstance(values[k], np.ndarray):
                np.copyto(copies[k], values[k])
        new = functions.run(forward, forward_symbol,
                            copies + layout.lane_arguments(tangents, flat[0]))
        outputs = new[:len(values)]
        layout.take(new[len(values):], flat[0])
        gradients = layout.shadows(np.zeros(layout.size))
        _put(gradients, *loss_location(fn, outputs, view), 1.0)
        new = functions.run(backward, backward_symbol,
                            outputs + [g for g in gradients if g is not None]
                            + layout.lane_arguments(tangents, flat[0])
                            + layout.lane_arguments(moved, flat[1]))
        layout.take(new[len(new) - lanes * layout.count:], flat[1])
        hessian[:, start:start + count] = flat[1][:count, layout.inputs].T
    return hessian


def _in_one_call(functions, fn, view, name: str, inverse: bool, values: list, layout,
                 lanes: int, natives: tuple):
    """The plan (`_Groups`) that gives the Hessian from one native call running every
    group (Note [Hessian groups in one call], backends/llvm/groups.py), or None
    where the backend has none or the loss's element is not a constant (the groups
    then run from Python, which also raises a failed call's error).  The call's
    memory and address tables are kept with the backend's plans for later calls
    with arguments of the same kinds and shapes."""
    base = view.base if isinstance(view, ast.Field) else view
    if isinstance(base, ast.Index) and not all(isinstance(i, ast.IntLit)
                                               for i in base.indices):
        return None
    key = ("hessian in one call", name, inverse, natives[1],
           tuple(v.shape if isinstance(v, np.ndarray) else type(v) for v in values),
           tuple(layout.inputs.tolist()), view)
    try:
        hash(key)
    except TypeError:
        return None
    plan = functions.plans.get(key)
    if plan is None:
        plan = _Groups(functions, fn, view, name, inverse, values, layout, lanes, natives)
        if not plan.ready:
            return None
        functions.plans[key] = plan
    return plan


class _Groups:
    """The memory and address tables of `run_groups` for one function, argument
    kinds and shapes, and loss: the shadows of every lane, flat; the packed calls;
    the tables.  `run(values)` points the tables at a call's arguments and runs."""

    def __init__(self, functions, fn, view, name, inverse, values, layout, lanes, natives):
        forward, forward_symbol, backward, backward_symbol = natives
        self.functions, self.layout, self.lanes = functions, layout, lanes
        self.lock = threading.Lock()
        n, size, count = len(layout.inputs), layout.size, len(values)
        self.flat = flat = np.zeros((2, lanes, size))
        self.gradient_row = np.zeros(size)
        tangents, moved = ([layout.shadows(flat[half, lane]) for lane in range(lanes)]
                           for half in (0, 1))
        self.copies = copies = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
        gradients = layout.shadows(self.gradient_row)
        self.forward = forward_call = functions.prepared(
            forward, forward_symbol, copies + layout.lane_arguments(tangents, flat[0]))
        self.backward = backward_call = functions.prepared(
            backward, backward_symbol, copies + [g for g in gradients if g is not None]
            + layout.lane_arguments(tangents, flat[0]) + layout.lane_arguments(moved, flat[1]))
        self.ready = forward_call is not None and backward_call is not None
        if not self.ready:
            return
        outputs = functions.call(name, [v.copy() if isinstance(v, np.ndarray) else v
                                        for v in values], inverse)
        loss_at, loss_index = loss_location(fn, outputs, view)
        # where each argument's shadows are among the calls' arguments
        tangent_at = layout.lane_positions(count, lanes)            # (k, lane) → position
        gradient_at = {k: count + j for j, k in enumerate(layout.floats())}
        backward_tangent_at = layout.lane_positions(count + len(gradient_at), lanes)
        moved_at = layout.lane_positions(count + len(gradient_at) * (1 + lanes), lanes)
        self.scalars = np.zeros(count, dtype=np.int64)     # this call's scalar values
        self.formats = {}                                   # position → struct format
        restore, zero, between = [], [(flat.ctypes.data, flat.nbytes),
                                      (self.gradient_row.ctypes.data,
                                       self.gradient_row.nbytes)], []
        self.sources = []           # (row of `restore`, position) of the arrays
        for k, value in enumerate(values):
            if isinstance(value, np.ndarray):
                self.sources.append((len(restore), k))
                restore.append((copies[k].ctypes.data, 0, value.nbytes))
                continue
            self.formats[k] = "d" if type(value) is float else "?" if \
                type(value) is bool else "q"
            restore.append((forward_call.storage(k), self.scalars.ctypes.data + 8 * k, 8))
            between.append((backward_call.storage(k), forward_call.storage(k), 8))
            if k in gradient_at:
                zero.append((backward_call.storage(gradient_at[k]), 8))
                for lane in range(lanes):
                    zero.append((forward_call.storage(tangent_at[k, lane]), 8))
                    zero.append((backward_call.storage(moved_at[k, lane]), 8))
                    between.append((backward_call.storage(backward_tangent_at[k, lane]),
                                    forward_call.storage(tangent_at[k, lane]), 8))
        if isinstance(values[loss_at], np.ndarray):
            offset = layout.slots[loss_at][0] + int(np.ravel_multi_index(
                loss_index, values[loss_at].shape))
            loss = self.gradient_row.ctypes.data + 8 * offset
        else:
            loss = backward_call.storage(gradient_at[loss_at])
        self.hessian = np.empty((n, n))
        self.plan = dict(
            forward=forward_call, backward=backward_call, n=n, lanes=lanes,
            restore=np.array(restore, dtype=np.int64).reshape(-1, 3),
            zero=np.array(zero, dtype=np.int64).reshape(-1, 2),
            seeds=self._addresses(values, forward_call, tangent_at, 0),
            between=np.array(between, dtype=np.int64).reshape(-1, 3), loss=loss,
            gathers=self._addresses(values, backward_call, moved_at, 1),
            hessian=self.hessian)

    def _addresses(self, values, call, at: dict, half: int) -> np.ndarray:
        """The address of each input's shadow in each lane (lane-major): in the flat
        rows of `half` for an array's, in the packed call for a scalar's."""
        layout, lanes, n = self.layout, self.lanes, len(self.layout.inputs)
        slots = layout.inputs
        out = (self.flat[half].ctypes.data + 8 * (np.arange(lanes)[:, None] * layout.size
                                                  + slots[None, :])).astype(np.int64)
        for i, slot in enumerate(slots.tolist()):
            k = int(layout.owner[slot])
            if not isinstance(values[k], np.ndarray):
                out[:, i] = [call.storage(at[k, lane]) for lane in range(lanes)]
        return out.reshape(lanes * n)

    def run(self, values: list):
        """The Hessian at `values` (a new array), or None where a call failed or the
        plan is in use on another thread."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            kept = []
            restore = self.plan["restore"]
            for row, k in self.sources:
                source = np.ascontiguousarray(values[k])
                kept.append(source)
                restore[row, 1] = source.ctypes.data
            for k, code in self.formats.items():
                struct.pack_into("=" + code, self.scalars, 8 * k, values[k])
            status = self.functions.run_groups(**self.plan)
            return self.hessian.copy() if status == 0 else None
        finally:
            self.lock.release()


class _Layout:
    """Where each float argument's shadow lies in a flat row of `size` floats
    (arrays in C order, a scalar in one slot), and the slots of the Hessian's
    inputs (those of the arguments at the positions `chosen`, None: all)."""

    def __init__(self, values: list, floats: list, chosen):
        self.values, self.slots, at = values, [], 0
        for value, is_float in zip(values, floats):
            if not is_float:
                self.slots.append(None)
                continue
            size = value.size if isinstance(value, np.ndarray) else 1
            self.slots.append((at, size))
            at += size
        self.size, self.count = at, sum(floats)
        self.owner = np.zeros(at, dtype=np.int64)      # slot → its argument's position
        for k, found in enumerate(self.slots):
            if found is not None:
                self.owner[found[0]:found[0] + found[1]] = k
        self.inputs = np.array([slot for k, found in enumerate(self.slots)
                                if found is not None and (chosen is None or k in chosen)
                                for slot in range(found[0], found[0] + found[1])],
                               dtype=np.int64)

    def floats(self) -> list:
        """The positions of the arguments with a float shadow."""
        return [k for k, found in enumerate(self.slots) if found is not None]

    def lane_positions(self, first: int, lanes: int) -> dict:
        """(position, lane) → where that shadow is among the arguments of a laned
        call whose laned shadows start at `first` (as `lane_arguments` lays them)."""
        return {(k, lane): first + j * lanes + lane
                for j, k in enumerate(self.floats()) for lane in range(lanes)}

    def shadows(self, row: np.ndarray) -> list:
        """One shadow per argument, None for those without a float: an array is a
        view of `row`; a scalar is its slot's value now (`lane_arguments` reads it
        again)."""
        out = []
        for value, found in zip(self.values, self.slots):
            if found is None:
                out.append(None)
            elif isinstance(value, np.ndarray):
                out.append(row[found[0]:found[0] + found[1]].reshape(value.shape))
            else:
                out.append(float(row[found[0]]))
        return out

    def lane_arguments(self, lanes: list, rows: np.ndarray) -> list:
        """The shadow arguments of a laned call (each argument's lanes together, lane
        0 first), scalars read from `rows` (one row per lane)."""
        out = []
        for k, found in enumerate(self.slots):
            if found is None:
                continue
            if isinstance(self.values[k], np.ndarray):
                out += [shadows[k] for shadows in lanes]
            else:
                out += rows[:, found[0]].tolist()
        return out

    def take(self, new: list, rows: np.ndarray) -> None:
        """Put the scalars a laned call gave back (`new`, as `lane_arguments` passed
        them) into `rows`; arrays were updated in place."""
        at = 0
        for k, found in enumerate(self.slots):
            if found is None:
                continue
            if not isinstance(self.values[k], np.ndarray):
                rows[:, found[0]] = new[at:at + len(rows)]
            at += len(rows)


def _plain(value) -> bool:
    """A value the laned passes take: an integer, bool or float scalar, or a NumPy
    array of float64 or integers (not a stack, a fixed, ulog or complex value)."""
    if isinstance(value, np.ndarray):
        return type(value) is np.ndarray and (value.dtype == np.float64 or
                                              value.dtype.kind in "iub")
    return type(value) in (int, float, bool)


def _put(shadows: list, position: int, index, value: float) -> None:
    if index is None:
        shadows[position] = value
    else:
        shadows[position][index] = value
