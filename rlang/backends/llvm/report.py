"""Values compiled code hands to Python while it runs: the line of a `@safe
print/show`, and a frame's variables when a check fails (a mixin of the function
emitter in backends/llvm/emit.py, which provides `builder`, `out`, `module`, `fn`, `slots`,
`entry_alloca` and the expression helpers).

Note [Frame variables in compiled errors]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The interpreter's error frames list their variables at the failure (`with y! = 3.0,
x = [0.0, 1.0], t = 1.0`; rlang/interp/interpreter.py `format_env`): the parameters, then the
ancillas in the order they were allocated, without loop indices.  Compiled code
reports the same: the exit of a failed check, and each caller's exit while the
error unwinds, calls `rev_locals_hook(site, words)` with the variables in scope
there (`visible`: the parameters, then ancillas as they are allocated and until they
are deallocated; the lowering's temporaries, whose names hold `·`, are not shown),
encoded as `@safe print` encodes its values; the "locals" site names them.  Python
formats them at once, while the memory is alive (the exit frees the ancillas' arrays
next), and error_from_context gives them to the frames, innermost first.  The reads
sit on the cold exit paths only; a C caller leaves the hook null.  Derivative passes
(gradients, Hessians) report nothing, and their frames show no `with` line.

Note [Reports do not capture]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A report hands the hook the addresses of the arrays and stacks in scope.  Stored
into the words buffer on the exit path, an ancilla's data pointer *escapes* as LLVM
sees it, and LLVM then cannot prove that the ancilla's memory differs from the
parameters' anywhere in the function: GMM's forward ran 6–19 % slower with its
reports than without them.  So the pointers go to the hook through an internal
function `rev_report_N` (N pointers) as uncaptured arguments (`captures(none)`), with their
word positions; it writes them into the buffer, calls the hook, and clears them
again, so no copy outlives the call (what the attribute promises; Python formats the
values during the call).  The other words are stored by the caller as before.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from ..abi import LOCALS_HOOK
from .types import F64, I32, I64, I8


#: The parameter attribute that says a pointer is not captured: `captures(none)` from
#: LLVM 21's spelling that llvmlite 0.45+ emits, `nocapture` before.
_NO_CAPTURE = "captures(none)" if "captures(none)" in ll.values.ArgumentAttributes._known \
    else "nocapture"


def shown(var: ir.Var) -> bool:
    """Whether an error frame lists `var` (not the lowering's temporaries)."""
    return not var.is_made


def report_word_count(t) -> int:
    """How many words a value of type `t` takes in a report."""
    if isinstance(t, ir.ArrayType):
        return 1 + 2 * t.ndim
    return 2 if t == "complex" or isinstance(t, ir.StackType) else 1


class ReportEmitter:
    def hook(self, name: str):
        """The global `void (*name)(int64 site, double *words)`, null until Python
        installs a function there."""
        hook = self.out.globals.get(name)
        if hook is None:
            fnty = ll.FunctionType(ll.VoidType(), [I64, F64.as_pointer()]).as_pointer()
            hook = ll.GlobalVariable(self.out, fnty, name=name)
            hook.initializer = ll.Constant(fnty, None)
        return hook

    def report_words(self, values) -> list:
        """The words of IR values for a hook: a double per float, the bits of other
        scalars, two for a complex number (re, im) or a stack (data, length), 1 + 2·ndim
        for an array (data, shape, strides); llvm_errors.print_values decodes them."""
        words = []
        for value in values:
            if value.type == "complex":
                words += self.complex_parts(value)
            elif isinstance(value.type, ir.StackType):
                words += self.stack_for_print(value.var)
            elif isinstance(value.type, ir.ArrayType):
                words += self.array_for_print(value.var)
            else:
                t = ir.representation(value.type)
                x = self.expr(value)
                words.append(self.to_f64(x, t) if t in ("f32", "f64") else
                             self.builder.bitcast(self.value_for_report(x, t), F64))
        return words

    def call_hook(self, name: str, site: int, words: list, buffer) -> None:
        """Store `words` into `buffer` and call the hook `name`, if installed; the
        pointer words go through `rev_report_N` (Note [Reports do not capture])."""
        b = self.builder
        pointers = []
        for k, word in enumerate(words):
            if isinstance(word.type, ll.PointerType):
                pointers += [ll.Constant(I64, k), word]
            else:
                b.store(word, b.gep(buffer, [ll.Constant(I32, 0), ll.Constant(I32, k)]))
        function = b.load(self.hook(name))
        with b.if_then(b.icmp_unsigned("!=", function, ll.Constant(function.type, None))):
            args = [ll.Constant(I64, site), b.bitcast(buffer, F64.as_pointer())]
            if pointers:
                b.call(self.report_function(len(pointers) // 2), [function] + args + pointers)
            else:
                b.call(function, args)

    def report_function(self, count: int):
        """`void rev_report_<count>(hook, i64 site, double *words, (i64 k, i8 *p)…)`:
        words[k] = the address p, for each pair; hook(site, words); the addresses
        cleared again (Note [Reports do not capture])."""
        name = f"rev_report_{count}"
        existing = self.out.globals.get(name)
        if existing is not None:
            return existing
        hook_type = ll.FunctionType(ll.VoidType(), [I64, F64.as_pointer()]).as_pointer()
        params = [hook_type, I64, F64.as_pointer()] + [I64, I8.as_pointer()] * count
        fn = ll.Function(self.out, ll.FunctionType(ll.VoidType(), params), name=name)
        fn.linkage = "internal"
        for attribute in ("noinline", "cold", "nounwind"):
            fn.attributes.add(attribute)
        pairs = [(fn.args[3 + 2 * j], fn.args[4 + 2 * j]) for j in range(count)]
        for _, pointer in pairs:
            pointer.add_attribute(_NO_CAPTURE)
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        hook, site, words = fn.args[:3]
        slots = [b.gep(words, [k]) for k, _ in pairs]
        for slot, (_, pointer) in zip(slots, pairs):
            b.store(b.bitcast(b.ptrtoint(pointer, I64), F64), slot)
        b.call(hook, [site, words])
        for slot in slots:
            b.store(ll.Constant(F64, 0.0), slot)
        b.ret_void()
        return fn

    def report_locals(self) -> None:
        """Hand the variables in scope to the locals hook (Note [Frame variables in
        compiled errors]); on an error exit, before its arrays are freed."""
        if not self.reports_locals:
            return
        visible = tuple(self.visible)
        site = self.locals_sites.get(visible)
        if site is None:
            site = self.module.add_site(ir.Site(
                "locals", None, self.fn.name, self.fn.inverse,
                ("locals", tuple((var.name, var.type) for var in visible))))
            self.locals_sites[visible] = site
        if self.locals_buffer is None:      # one for every report: the largest scope
            size = sum(report_word_count(v.type) for v in _all_shown(self.fn))
            self.locals_buffer = self.entry_alloca(ll.ArrayType(F64, max(1, size)), "locals")
        values = [ir.ComplexValue(ir.Read(v, 0), ir.Read(v, 1)) if v.type == "complex"
                  else ir.Read(v) for v in visible]
        self.call_hook(LOCALS_HOOK, site, self.report_words(values), self.locals_buffer)


def _all_shown(fn: ir.Function) -> list:
    """Every variable of `fn` an error frame may list (an upper bound of a scope)."""
    from ...ir.walk import walk

    allocated = {s.var for s in walk(fn.body) if isinstance(s, ir.Alloc)}
    return [v for v in list(fn.params) + list(allocated) if shown(v)]
