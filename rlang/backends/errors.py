"""Turn the error record of a failed compiled call into the interpreter's RlangError.

`error_from_context(ctx, sites, max_depth)` reads the failed site, its values and the
recorded call sites from the `ctx` words (layout: rlang/backends/abi.py) and builds
the same error class, message, span and call chain (function, call site, direction)
that the interpreter raises.  Compiled frames do not carry their variables, so the
chain has no `with …` lines.
"""
from __future__ import annotations

import math
import struct

from ..errors import Frame, ReversibilityError, RlangRuntimeError, RlangTypeError
from ..ir import nodes as ir
from ..numbers import Fixed, ULog
from ..values import (Stack, format_value, stack_index_message, summarize,
                      summarize_array_start)
from . import abi


def _float(word: int) -> float:
    return struct.unpack("<d", struct.pack("<q", word))[0]


def error_from_context(ctx, sites, max_depth: int, frame_locals=()):
    """The RlangError of a failed call from its error record; `frame_locals`: the
    variables of each frame, innermost first, as compiled code reported them (Note
    [Frame variables in compiled errors], backends/llvm/report.py), where it did."""
    site = sites[ctx[abi.CTX_SITE] - 1]
    ints = [ctx[abi.CTX_IVALS + k] for k in range(4)]
    floats = [_float(ctx[abi.CTX_FVALS + k]) for k in range(4)]
    if site.kind in ("dealloc_stack", "dealloc_array"):
        words = 2 * abi.STACK_ITEMS
        recorded = ([ctx[abi.CTX_ITEMS + k] for k in range(words)],
                    [ctx[abi.CTX_EXPECTED_ITEMS + k] for k in range(words)])
        if site.kind == "dealloc_stack":
            error = _dealloc_stack(site, ints[:2], *recorded)
        else:
            shapes = ([ctx[abi.CTX_SHAPE + k] for k in range(abi.ARRAY_DIMS)],
                      [ctx[abi.CTX_EXPECTED_SHAPE + k] for k in range(abi.ARRAY_DIMS)])
            error = _dealloc_array(site, ints, recorded, shapes)
    elif site.kind == "zeros_memory":
        error = _zeros_memory(site, [ctx[abi.CTX_SHAPE + k] for k in range(abi.ARRAY_DIMS)])
    else:
        error = _BUILD[site.kind](site, ints, floats, max_depth)
    head, tail, left_out = abi.recorded_calls(
        [ctx[abi.CTX_FRAMES + k] for k in range(abi.MAX_FRAMES)], ctx[abi.CTX_NFRAMES])
    head, tail = [sites[k] for k in head], [sites[k] for k in tail]
    if site.kind == "depth" and head:
        error.span = head[0].span
    # (function, call site, backward) of each frame, innermost first; a None where
    # the chain has a gap (Note [Deep call chains]: the frame of tail[0] is unknown)
    chain, function, inverse = [], site.function, site.inverse
    for call in head:
        chain.append((function, call.span, inverse))
        function, inverse = call.function, call.inverse
    if tail:
        error.omitted_frames = left_out + 1
        chain.append(None)
        function, inverse = tail[0].function, tail[0].inverse
        for call in tail[1:]:
            chain.append((function, call.span, inverse))
            function, inverse = call.function, call.inverse
    chain.append((function, None, inverse))
    note = next((s.note for s in [site, *head, *tail] if s.note is not None), None)
    if note is not None:        # the innermost block run against its frame's direction
        error.notes += (note,)
    shown = list(frame_locals) + [""] * len(chain)
    for frame, variables in zip(chain, shown):
        if frame is not None:
            error.add_frame(Frame(*frame, variables))
    return error


def _bounds(site, ints, floats, _):
    return RlangRuntimeError(f"index {ints[0]} is out of bounds for an axis of length "
                             f"{ints[1]} (indices are 0-based)", site.span)


def _alias(site, ints, floats, _):
    target, read = site.detail
    return ReversibilityError(f"`{target}` is read by the right-hand side of its own update "
                              f"(the same memory as `{read}`)", site.span)


def _instr_alias(site, ints, floats, _):
    name, a, b = site.detail
    return ReversibilityError(f"{name} operands `{a}` and `{b}` are the same memory",
                              site.span)


def _intdiv(site, ints, floats, _):
    return RlangRuntimeError(f"integer division by zero: {ints[0]} {site.detail[0]} 0",
                             site.span)


def _intpow(site, ints, floats, _):
    return RlangRuntimeError(f"integer {ints[0]} raised to the negative power {ints[1]}; "
                             "use a float base", site.span)


def _if(site, ints, floats, _):
    k, posts = site.detail
    taken = ints[0]
    is_condition, post = posts[k]
    if k == taken:
        what = "condition" if is_condition else "postcondition"
        return ReversibilityError(f"`if` {what} `{post}` is false after its branch ran" +
                                  (" (the branch changed its own condition)" if is_condition
                                   else ""), site.span)
    where = "the else branch" if taken == len(posts) else f"branch {taken + 1}"
    return ReversibilityError(f"`if` postcondition `{post}` of branch {k + 1} holds after "
                              f"{where} ran, so running backward would take the wrong branch",
                              site.span)


def _while(site, ints, floats, _):
    post = site.detail[0]
    if ints[0] == 0:
        return ReversibilityError(f"`while` postcondition `{post}` must be false when the "
                                  "loop starts", site.span)
    return ReversibilityError(f"`while` postcondition `{post}` must hold after every "
                              "iteration", site.span)


def _from(site, ints, floats, _):
    start = site.detail[0]
    if ints[0] == 0:
        return ReversibilityError(f"`from` condition `{start}` must hold when the loop "
                                  "starts", site.span)
    return ReversibilityError(f"`from` condition `{start}` must be false after the first "
                              "iteration", site.span)


def _for(site, ints, floats, _):
    return ReversibilityError(f"the body of the loop changed its index `{site.detail[0]}` "
                              f"from {ints[0]} to {ints[1]}", site.span)


def _parallel_write(site, ints, floats, _):
    """Two iterations of a checked `@parallel for` wrote one element (rlang/interp/loops.py
    `_WriteTracker`): ints are the earlier writer's index and the current one."""
    var, text = site.detail
    return ReversibilityError(f"@parallel for: iterations {var} = {ints[0]} and {var} = "
                              f"{ints[1]} both write `{text}`; iterations must not share a "
                              "write", site.span)


def _for_bound(site, ints, floats, _):
    k, text = site.detail
    what = ("start", "step", "stop")[k]
    return ReversibilityError(f"the {what} of the loop range `{text}` changed from "
                              f"{ints[0]} to {ints[1]} while the loop ran", site.span)


def _for_zero_step(site, ints, floats, _):
    return RlangRuntimeError("the step of a `for` range must not be zero", site.span)


def _reported_pair(t, ints, floats):
    if t == "complex":
        return complex(floats[0], floats[1]), complex(floats[2], floats[3])
    if ir.representation(t) in ("f32", "f64"):
        return floats[0], floats[1]
    if t == "bool":
        return bool(ints[0]), bool(ints[1])
    return ints[0], ints[1]


def _dealloc(site, ints, floats, _):
    name, t, *against = site.detail
    if against:         # an integer against an f64 (Note [Integers deallocated against floats])
        value, expected, shown = ints[0], floats[0], against[0]
    else:
        (value, expected), shown = _reported_pair(t, ints, floats), t
    return ReversibilityError(f"deallocation check failed: {name} = {_format_typed(value, t)}, "
                              f"expected {_format_typed(expected, shown)}", site.span)


def _dealloc_array(site, ints, recorded, shapes):
    """`a → e` of an array: the interpreter's message (check_dealloc) from the first
    elements and the extents the failure recorded (ints[1] = 1); where it recorded
    none (`a → [x, 2x]`, checked by subtracting the literal, or more than
    abi.ARRAY_DIMS axes), the number of elements that differ (ints[0]).  `against`
    is what `e` is: ("zeros", T, rank) for `zeros(T, n…)` (its extents recorded as
    the expected shape), "array", "literal" (variable elements) or the ir.ConstArray
    of a constant literal."""
    name, compared, against, elem, ndim = site.detail
    if ints[1] != 1:
        if compared is None:
            return ReversibilityError(f"deallocation check failed: {name} has {ints[0]} "
                                      "nonzero element(s), expected all zeros", site.span)
        return ReversibilityError(f"deallocation check failed: {name} differs from "
                                  f"`{compared}` in {ints[0]} element(s)", site.span)
    import numpy as np

    shape = tuple(shapes[0][:ndim])
    if isinstance(against, tuple):
        _, zeros_elem, zeros_ndim = against
        zeros_shape = tuple(shapes[1][:zeros_ndim])
        zero = np.full(min(abi.STACK_ITEMS, math.prod(zeros_shape)),
                       -math.inf if zeros_elem == "ulog" else 0,
                       np.dtype(abi.ITEM_DTYPES[zeros_elem]))
        expected = summarize_array_start(rev_array(zero, zeros_elem), zeros_shape)
    elif against == "array":
        expected = _recorded_array(elem, tuple(shapes[1][:ndim]), recorded[1])
    else:                   # an ir.ConstArray, as written (its type may differ)
        literal = np.array(against.values, np.dtype(abi.ITEM_DTYPES[against.elem]))
        expected = summarize(rev_array(literal.reshape(against.shape), against.elem))
    return ReversibilityError(f"deallocation check failed: {name} = "
                              f"{_recorded_array(elem, shape, recorded[0])}, expected "
                              f"{expected}", site.span)


def _recorded_array(elem: str, shape: tuple, words: list) -> str:
    """`summarize` of an array from its first elements as compiled code recorded them."""
    import numpy as np

    count = min(abi.STACK_ITEMS, math.prod(shape))
    raw = np.frombuffer(struct.pack(f"<{len(words)}q", *words), abi.ITEM_DTYPES[elem])
    return summarize_array_start(rev_array(raw[:count].copy(), elem), shape)


def rev_array(raw, elem: str):
    """An array of storage values (abi.ITEM_DTYPES) as the interpreter holds an array
    of `elem`: bools as bools, fixed and ulog as FixedArray / ULogArray views."""
    from ..numbers import FixedArray, ULogArray

    if elem == "bool":
        return raw.astype(bool)
    system = {"fixed": FixedArray, "ulog": ULogArray}.get(elem)
    return raw.view(system) if system is not None else raw


def _dealloc_stack(site, lengths, words: list, expected_words: list):
    """`s → stack(T)` or `s → t` of a stack holding lengths[0] items (t holding
    lengths[1]), the first of which (at most abi.STACK_ITEMS) are in `words` and
    `expected_words`; the message is check_dealloc's."""
    name, elem = site.detail
    shown, expected = (summarize(_recorded_stack(elem, n, w))
                       for n, w in zip(lengths, (words, expected_words)))
    return ReversibilityError(f"deallocation check failed: {name} = {shown}, expected "
                              f"{expected}", site.span)


def _recorded_stack(elem: str, length: int, words: list) -> Stack:
    """A stack of `length` items as an error record holds it: its first items, or
    only its length when it has more than abi.STACK_ITEMS (summarize shows no more)."""
    if length > abi.STACK_ITEMS:
        many = Stack(elem)
        many.items = range(length)          # summarize shows only how many
        return many
    data = struct.pack(f"<{len(words)}q", *words)
    return Stack(elem, abi.unpack_items(elem, data[:length * abi.ITEM_BYTES[elem]]))


def _stack_index(site, ints, floats, _):
    return RlangRuntimeError(stack_index_message(ints[0], ints[1]), site.span)


def _pop_empty(site, ints, floats, _):
    stack, checked = site.detail
    kind = ReversibilityError if checked else RlangRuntimeError
    return kind(f"POP from the empty stack `{stack}`", site.span)


def _pop_zero(site, ints, floats, _):
    target, elem = site.detail
    return ReversibilityError(f"POP into `{target}` = {_rev_value(elem, ints, floats)}, "
                              "which must be zero", site.span)


def _stack_memory(site, ints, floats, _):
    return RlangRuntimeError(f"PUSH: out of memory growing the stack `{site.detail[0]}` "
                             f"past {ints[0]} items", site.span)


def _rev_value(t: str, ints, floats):
    """The first reported value as the interpreter holds a value of type `t`."""
    from ..numbers import F32, I32

    if t == "complex":
        return complex(floats[0], floats[1])
    convert = {"f64": float, "f32": F32, "ulog": ULog, "fixed": Fixed, "i64": int,
               "i32": I32, "bool": bool}[t]
    return convert(floats[0] if ir.representation(t) in ("f32", "f64") else ints[0])


def _argument(site, ints, floats, _):
    function, k, param, t = site.detail
    after, before = _reported_pair(t, ints, floats)
    return ReversibilityError(
        f"`{function}` changed its argument {k + 1} (`{param}`), which is an expression, "
        f"not a view: {_format_typed(before, t)} became {_format_typed(after, t)}", site.span)


def _argument_array(site, ints, floats, _):
    """An array expression argument the callee changed: compiled code counts the
    changed elements instead of showing the array after the call."""
    function, k, param, text = site.detail
    return ReversibilityError(
        f"`{function}` changed its argument {k + 1} (`{param}`), which is an expression, "
        f"not a view: `{text}` became different in {ints[0]} element(s)", site.span)


def _call_alias(site, ints, floats, _):
    function, _written, params, texts = site.detail
    i, j = ints[0], ints[1]
    low, high = min(i, j), max(i, j)
    return ReversibilityError(
        f"arguments {low + 1} and {high + 1} of `{function}` (`{texts[low]}` and "
        f"`{texts[high]}`) are the same memory, and `{params[i]}` is written", site.span)


def _depth(site, ints, floats, max_depth):
    return RlangRuntimeError(f"call depth exceeded the limit of {max_depth} (unbounded "
                             "recursion?)", site.span)


def _message(site, ints, floats, _):
    """An error whose whole message is known when the code is made (an i32 literal
    out of range)."""
    return RlangRuntimeError(site.detail[0], site.span)


def _assert(site, ints, floats, _):
    cond, message = site.detail
    text = f"assertion failed: {cond}" + (f": {message}" if message is not None else "")
    return RlangRuntimeError(text, site.span)


def _convert(site, ints, floats, _):
    name, source = site.detail
    value = floats[0] if source in ("f32", "f64") else ints[0]
    if name in ("fixed", "ulog"):
        return _system_convert(site, name, value)
    shown = format_value(value)
    if name == "bool":
        return RlangRuntimeError(f"bool({shown}): only 0 and 1 convert to bool", site.span)
    if isinstance(value, float) and not (math.isfinite(value) and value == math.floor(value)):
        return RlangRuntimeError(f"{name}({shown}): not an integer; use floor, ceil or round "
                                 "first", site.span)
    return RlangRuntimeError(f"{name}({shown}): out of the range of {name}", site.span)


def _system_convert(site, name, value):
    """The interpreter's error for `fixed(value)` / `ulog(value)` (Fixed.from_value,
    ULog.from_value)."""
    if name == "ulog":
        text = f"ulog({value}): an unsigned logarithmic number cannot hold a negative value"
    elif isinstance(value, int):
        text = f"fixed({value}): out of the range of fixed (|x| < 2^20)"
    elif not math.isfinite(value):
        text = f"fixed({value}): not a finite number"
    else:
        text = f"fixed({value!r}): out of the range of fixed (|x| < 2^20 ≈ 1.05e6)"
    return RlangRuntimeError(text, site.span)


def _fixed_div(site, ints, floats, _):
    return RlangRuntimeError("fixed-point division by zero", site.span)


def _ulog_div(site, ints, floats, _):
    return RlangRuntimeError("ulog division by zero", site.span)


def _ulog_div_update(site, ints, floats, _):
    return RlangRuntimeError(f"`{site.detail[0]} /= 0`: ulog division by zero", site.span)


def _ulog_mul_update(site, ints, floats, _):
    return ReversibilityError(f"`{site.detail[0]} *= 0` cannot be undone: it would set the "
                              f"ulog to zero and lose its value", site.span)


def _ulog_sub(site, ints, floats, _):
    return RlangRuntimeError("ulog subtraction with a larger subtrahend would be negative",
                             site.span)


def _swap_shape(site, ints, floats, _):
    """SWAP of two whole arrays of another type or shape: the interpreter's message."""
    type_a, type_b, ndim_a = site.detail
    shape_a, shape_b = tuple(ints[:ndim_a]), tuple(ints[ndim_a:ndim_a + type_b.count(":")])
    return RlangTypeError(f"SWAP needs arrays of one type and shape, got {type_a} {shape_a} "
                          f"and {type_b} {shape_b}", site.span)


def _size_dimension(site, ints, floats, _):
    return RlangRuntimeError(f"`size`: dimension {ints[0]} does not exist in a "
                             f"{site.detail[0]}-dimensional array (dimensions are 0-based)",
                             site.span)


def _dealloc_shape(site, ints, floats, _):
    """`a → [x, 2x]` where a has other extents than the literal."""
    name, literal, extents = site.detail
    shape = tuple(ints[:len(extents)])
    return ReversibilityError(f"deallocation check failed: {name} has shape {shape}, "
                              f"expected `{literal}` of shape {extents}", site.span)


def _zeros(site, ints, floats, _):
    return RlangRuntimeError(f"`zeros`: a dimension must be a non-negative integer, "
                             f"got {ints[0]}", site.span)


def _zeros_memory(site, shape_words):
    """`zeros(T, n…)` that could not be allocated: the interpreter's message, with the
    shape the failure recorded."""
    _, ndim = site.detail
    shape = tuple(shape_words[:ndim]) if ndim <= abi.ARRAY_DIMS else \
        "(" + ", ".join(map(str, shape_words)) + f", … ({ndim} extents))"
    return RlangRuntimeError(f"`zeros`: cannot allocate an array of shape {shape}", site.span)


def _memory(site, ints, floats, _):
    """An array the compiled code makes for itself (a gradient's shadow) that could not
    be allocated."""
    return RlangRuntimeError(f"cannot allocate {ints[0]} bytes for `{site.detail[0]}`",
                             site.span)


_BUILD = {
    "bounds": _bounds, "alias": _alias, "instr_alias": _instr_alias, "intdiv": _intdiv,
    "intpow": _intpow, "if": _if, "while": _while, "from": _from, "for": _for,
    "for_bound": _for_bound, "for_zero_step": _for_zero_step, "dealloc": _dealloc,
    "parallel_write": _parallel_write,
    "dealloc_array": _dealloc_array, "argument": _argument, "argument_array": _argument_array,
    "call_alias": _call_alias,
    "depth": _depth, "assert": _assert, "convert": _convert, "zeros": _zeros,
    "memory": _memory, "dealloc_shape": _dealloc_shape, "fixed_div": _fixed_div, "ulog_div": _ulog_div,
    "ulog_div_update": _ulog_div_update, "ulog_mul_update": _ulog_mul_update, "ulog_sub": _ulog_sub, "pop_empty": _pop_empty,
    "stack_index": _stack_index,
    "pop_zero": _pop_zero, "stack_memory": _stack_memory, "swap_shape": _swap_shape,
    "size_dimension": _size_dimension, "message": _message,
}


def print_values(site, words) -> list:
    """The values a `@safe print/show` site reports, from the words compiled code
    writes (backends/llvm/emit.py `_print`: doubles, or the bits of other values): a scalar takes
    one word, a complex number two (re, im), a stack two (its data address and
    length), an array 1 + 2·ndim (its data address, shape and strides in elements).
    Scalars of fixed and ulog stay raw (as `print_line` takes them); stacks and
    arrays are copied out of the running code's memory."""
    out, k = [], 0
    for _, t in site.detail[1]:
        if t is None:
            continue
        if isinstance(t, ir.StackType):
            out.append(_stack_in_memory(t.elem, _bits(words[k]), _bits(words[k + 1])))
            k += 2
        elif isinstance(t, ir.ArrayType):
            count = 1 + 2 * t.ndim
            out.append(_array_in_memory(t, [_bits(words[k + j]) for j in range(count)]))
            k += count
        elif t == "complex":
            out.append(complex(words[k], words[k + 1]))
            k += 2
        elif ir.representation(t) in ("f32", "f64"):
            out.append(words[k])
            k += 1
        else:
            value = _bits(words[k])
            out.append(bool(value) if t == "bool" else value)
            k += 1
    return out


def print_line(site, values) -> str:
    """The text `@safe print/show` writes, from the values `print_values` decodes (or
    the cuda host code hands over in the same form)."""
    kind, shape = site.detail
    if kind.startswith("janus "):
        return _janus_line(kind, shape, values)
    parts, k = [], 0
    for text, t in shape:
        if t is None:
            parts.append(text)
            continue
        shown = _format_typed(values[k], t)
        k += 1
        parts.append(f"{text} = {shown}" if kind == "show" else shown)
    return (", " if kind == "show" else " ").join(parts)


def _janus_line(kind, shape, values) -> str:
    """What jana's print/printf and show write (Note [Janus in rev's AST])."""
    from ..frontend.janus.values import (format_janus_binding, format_janus_value,
                                         janus_type_name, render_printf)

    if kind == "janus show":
        return ", ".join(format_janus_binding(text, value)
                         for (text, _), value in zip(shape, values))
    return render_printf(shape[0][0], [(format_janus_value(v), janus_type_name(v))
                                       for v in values])


def _bits(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


def _stack_in_memory(elem: str, data: int, length: int) -> Stack:
    """The stack whose `length` items lie at address `data` (a live stack of the
    running code, for `@safe print/show`)."""
    import ctypes

    raw = ctypes.string_at(data, length * abi.ITEM_BYTES[elem]) if length else b""
    return Stack(elem, abi.unpack_items(elem, raw))


def _array_in_memory(t: ir.ArrayType, words: list):
    """A copy of the array at `words` = [data address, shape…, strides… (elements)],
    as the interpreter holds an array of `t.elem`."""
    import ctypes

    import numpy as np

    data, shape, strides = words[0], words[1:1 + t.ndim], words[1 + t.ndim:]
    dtype = np.dtype(abi.ITEM_DTYPES[t.elem])
    if any(n == 0 for n in shape):
        array = np.zeros(shape, dtype)
    else:
        low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
        raw = ctypes.string_at(data + low * dtype.itemsize, (high - low + 1) * dtype.itemsize)
        span = np.frombuffer(raw, dtype)
        array = np.lib.stride_tricks.as_strided(
            span[-low:], shape, [s * dtype.itemsize for s in strides]).copy()
    return rev_array(array, t.elem)


def locals_text(site, values) -> str:
    """A frame's `name = value, …` (as rlang/interp/interpreter.py `format_env` writes it) from a
    "locals" site and the values `print_values` decoded."""
    parts = []
    for (name, t), value in zip(site.detail[1], values):     # arrays, stacks: summarized
        shown = _format_typed(value, t) if isinstance(t, str) else summarize(value)
        parts.append(f"{name} = {shown}")
    return ", ".join(parts)


def _format_typed(value, t: str) -> str:
    if t == "fixed":
        return format_value(Fixed(value))
    if t == "ulog":
        return format_value(ULog(value))
    if t == "f32":
        from ..numbers import F32

        return format_value(F32(value))
    if t == "i32":
        from ..numbers import I32

        return format_value(I32(value))
    return format_value(value)
