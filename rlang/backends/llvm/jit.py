"""Compile IR modules to native code with llvmlite, cache them, and call them.

`compile_module(key, build)` returns a `NativeModule`: from the disk cache when an
object for `key` is there, otherwise by calling `build()` (→ `(ir.Module, llvm
module)`), optimising with the new pass manager at O3 for the host CPU, and storing
the object code and the site table under the cache directory (`RLANG_CACHE_DIR`,
default `~/.cache/rlang`).  Where the system linker is found, the object code is
linked into a shared library beside it, which later processes open without loading
LLVM (Note [Code without LLVM], backends/llvm/shared_code.py); elsewhere MCJIT
loads it.  `key` must cover the source, the argument types and the
flags (rlang/backends/llvm/backend.py makes it).  A big module's first call runs
quickly compiled code while a thread optimises it (Note [A quick first call],
backends/llvm/tiers.py).

`NativeModule.call(symbol, values)` runs an entry point on values already conformed
to the parameter types (rlang/backends/llvm/backend.py) and returns the new values, or
raises the interpreter's RlangError when a check failed.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import hashlib
import os
import pickle
import threading
import time
from pathlib import Path

import llvmlite

from ...disk_cache import cache_dir, package_digest, remembered, write_atomically
from ...errors import InternalError, RlangError
from ..errors import error_from_context, locals_text, print_line, print_values
from .. import abi
from ..abi import LOCALS_HOOK, PRINT_HOOK
from . import kept_blocks, shared_code
from .tiers import (QUICK_ALONE, Optimising, PreemptByte, QuickCall, one_core, quick_call,
                    quick_first_call, without_polls)
from .marshal import (NOT_ADDRESSABLE, READ_ONLY, EntryLayout, ReadOnlyArgument,
                           array_header, not_addressable)

#: Bump when the cache format changes (changes to the compiler's own source files
#: invalidate the cache by themselves: `disk_cache.package_digest`).
CODE_VERSION = "9"

_initialised = False
_INITIALISING = threading.Lock()


def _llvm():
    """llvmlite's binding to LLVM, initialised for the host (imported when first
    needed: Note [Code without LLVM])."""
    import llvmlite.binding as llvm

    if not _initialised:
        _initialise(llvm)
    return llvm


def _initialise(llvm) -> None:
    global _initialised
    with _INITIALISING:
        if _initialised:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _load_compiler_runtime(llvm)
        _initialised = True


def _load_compiler_runtime(llvm) -> None:
    """Make the compiler's runtime routines (`__divti3`: 128-bit division, which
    fixed-point `/` uses) resolvable by the JIT, as the linker does for `gcc`.  The
    usual name first: ctypes.util.find_library runs `ldconfig -p` in a subprocess,
    10–40 ms of a warm first call."""
    try:
        llvm.load_library_permanently("libgcc_s.so.1")
        return
    except RuntimeError:
        pass
    import ctypes.util

    name = ctypes.util.find_library("gcc_s")
    if name:
        try:
            llvm.load_library_permanently(name)
            return
        except RuntimeError:
            pass
    raise RlangError("the llvm backend needs the GCC runtime library (libgcc_s.so.1) for "
                     "128-bit arithmetic; install libgcc-s1")


def target_machine(opt: int = 3, reloc: str = "default"):
    """LLVM's target machine for the host CPU: relocatable for MCJIT (`reloc`
    "default", the large code model), or position-independent ("pic")."""
    llvm = _llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=opt, reloc=reloc, codemodel="jitdefault"
                                        if reloc == "default" else "default")


def optimise(llvm_ir: str, machine) -> "llvm.ModuleRef":
    """Parse, verify and optimise (O3, new pass manager) LLVM IR text, its polls
    for leaving quick code read as 0 (backends/llvm/polls.py)."""
    llvm = _llvm()
    module = _module_for(without_polls(llvm_ir), machine)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    builder = llvm.create_pass_builder(machine, options)
    with _OPTIONS_LOCK:             # (the options are global to LLVM)
        _our_pass_options(True)     # Note [Scalar loop remainders], [Zeroing without memset]
        try:
            builder.getModulePassManager().run(module, builder)
        finally:
            _our_pass_options(False)    # LLVM's defaults, for other users (Numba)
    return module


#: Held while our pass options are set, so that two of our compiles in different
#: threads do not turn them back under each other.
_OPTIONS_LOCK = threading.Lock()


# Note [Scalar loop remainders]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# LLVM's loop vectoriser also vectorises a loop's remainder: after the main loop
# (4 x 4 doubles a step with AVX2) comes a 4-wide loop, then a scalar one.  An
# inner loop shorter than 16 passes runs only the 4-wide one, and in a triangular
# nest (GMM's `qx[k, r] += icf[k, off + r] * xc[k, c]` for r > c) its vector
# stores are followed, one pass of c later, by vector loads one element further
# on: a load that overlaps two pending stores cannot be forwarded from them and
# waits until they reach the cache.  At d = 10 that made the forward 1.3x slower
# than the same code without vectorisation (2.10 against 1.66 ms for GMM d = 10,
# K = 25, n = 1000; the gradient 6.29 against 5.29 ms).  Our modules are
# therefore optimised with epilogue vectorisation off: remainders run scalar,
# and long loops (d = 64) keep their main vector loop.  The option is global to
# LLVM, so it is set around our pass pipeline only.


def _our_pass_options(ours: bool) -> None:
    """LLVM's global options as our modules want them (no epilogue vectorisation;
    no memset from loops: backends/llvm/ancillas.py; sums of a program's values
    vectorised with their additions in program order: Note [An exp LLVM can
    vectorise]), or back to LLVM's defaults."""
    llvm = _llvm()
    llvm.set_option("rlang", f"-enable-epilogue-vectorization={'false' if ours else 'true'}")
    llvm.set_option("rlang", f"-disable-loop-idiom-memset={'true' if ours else 'false'}")
    llvm.set_option("rlang", f"-force-ordered-reductions={'true' if ours else 'false'}")


def compile_module(key: str, build) -> "NativeModule":
    digest = hashlib.sha256(f"{CODE_VERSION}|{package_digest()}|{llvmlite.__version__}|"
                            f"{host_cpu()}|{array_header()}|{key}".encode()).hexdigest()[:32]
    path = cache_dir() / f"{digest}.rlo"
    if path.exists():
        try:
            with open(path, "rb") as f:
                entry, symbols, sites, obj, shared, recursive, loops, writes = pickle.load(f)
            code = ObjectCode(obj, path.with_suffix(".so") if shared else None)
            return NativeModule(entry, symbols, sites, code, recursive, loops, writes)
        except Exception:       # a damaged cache entry is rebuilt
            pass
    module, llvm_module = build()
    text = str(llvm_module)
    symbols = {s: ([p.type for p in fn.params], [(r.name, r.type) for r in fn.results],
                   fn.written, fn.written | fn.accumulated)
               for s, fn in module.functions.items()}
    from ...ir.call_graph import recursive_symbols

    recursive = bool(recursive_symbols(module))
    loops = getattr(llvm_module, "threaded_loops", [])     # rlang/ir/blocks.py
    writes = getattr(llvm_module, "entry_writes", None)     # backends/llvm/emit.py
    described = (module.entry, symbols, list(module.sites))

    def optimised() -> ObjectCode:
        """The optimised object code, also kept in the disk cache."""
        code = optimised_object(text, path.with_suffix(".so"))
        entry, symbols, sites = described
        try:
            write_atomically(path, pickle.dumps((entry, symbols, sites, code.data,
                                                 code.library is not None, recursive,
                                                 loops, writes)))
        except OSError:         # an unwritable cache only costs the next compile
            pass
        return code

    if not quick_first_call(text, recursive):
        return NativeModule(*described, optimised(), recursive, loops, writes)
    started = time.perf_counter()
    quick = ObjectCode(quick_object(text))
    alone = None
    if one_core():          # Note [One core for two tiers]
        alone = QUICK_ALONE * (time.perf_counter() - started)
    native = NativeModule(*described, quick, recursive, loops, writes)
    native.optimise_later(optimised, alone)
    return native


class ObjectCode:
    """A module's object code: relocatable for MCJIT (`library` None), or
    position-independent and linked into the shared library `library` (Note [Code
    without LLVM])."""

    def __init__(self, data: bytes, library: Path | None = None):
        self.data, self.library = data, library


def optimised_object(llvm_ir: str, library: Path | None = None) -> ObjectCode:
    """LLVM IR text compiled to object code at O3 for the host CPU, linked into the
    shared library `library` where that can be done, else for MCJIT."""
    if library is None or shared_code.linker() is None or not _writable(library.parent):
        machine = target_machine()
        return ObjectCode(machine.emit_object(optimise(llvm_ir, machine)))
    machine = target_machine(reloc="pic")
    obj = machine.emit_object(optimise(llvm_ir, machine))
    if shared_code.link(obj, library):
        return ObjectCode(obj, library)
    return optimised_object(llvm_ir)        # (where linking failed: rare)


def _writable(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK)


def load_code(code: ObjectCode):
    """Where `code`'s symbols are (`get_function_address`,
    `get_global_value_address`): its shared library opened (linked again from the
    object code where the file is gone), or an MCJIT engine it was loaded into;
    OSError where the library cannot be opened."""
    if code.library is None:
        llvm = _llvm()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(code.data))
        engine.finalize_object()
        return engine
    if not code.library.exists() and not shared_code.link(code.data, code.library):
        raise OSError(f"cannot link {code.library}")
    return shared_code.SharedCode.open(code.library)


def process_code(name: str, make_ir):
    """Code that takes nothing of one module (kept blocks' routines, calls' builtins:
    Note [Builtins kept on disk], call_builtins.py): the LLVM IR text
    `make_ir()` gives, compiled once (without optimising it) and kept in the disk
    cache as a shared library where modules are linked, else as object code that
    MCJIT loads."""
    key = f"{name}|{CODE_VERSION}|{llvmlite.__version__}|{host_cpu()}"
    code = shared_code.cached(key, lambda: _plain_object(make_ir(), target_machine(reloc="pic")))
    if code is None:
        code = load_code(ObjectCode(remembered(
            key, lambda: _plain_object(make_ir(), target_machine()))))
    return code


def _plain_object(llvm_ir: str, machine) -> bytes:
    """LLVM IR text compiled to object code as it is (no passes)."""
    return machine.emit_object(_module_for(llvm_ir, machine))


def _module_for(llvm_ir: str, machine):
    """LLVM IR text parsed, set for `machine`'s target and verified."""
    module = _llvm().parse_assembly(llvm_ir)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    return module


def host_cpu() -> str:
    """The host CPU, as the disk cache's keys tell machines apart: on Linux,
    /proc/cpuinfo's model and feature lines of the first processor (read without
    loading LLVM: Note [Code without LLVM]), elsewhere LLVM's name of it."""
    if not _HOST:
        _HOST.append(_cpuinfo() or _llvm().get_host_cpu_name())
    return _HOST[0]


_HOST: list = []
#: /proc/cpuinfo's lines that name a processor's model and features (x86, ARM,
#: POWER, RISC-V)
_CPU_LINES = frozenset({"vendor_id", "cpu family", "model", "model name", "stepping",
                        "flags", "CPU implementer", "CPU architecture", "CPU variant",
                        "CPU part", "CPU revision", "Features", "cpu", "isa", "uarch"})


def _cpuinfo() -> str | None:
    """A digest of the first processor's model and feature lines, or None."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read().split("\n\n", 1)[0]
    except OSError:
        return None
    lines = sorted(line for line in text.splitlines()
                   if line.split(":", 1)[0].strip() in _CPU_LINES)
    if not lines:
        return None
    return "cpuinfo:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def quick_object(llvm_ir: str) -> bytes:
    """LLVM IR text compiled to object code with few passes and the O0 code
    generator (Note [A quick first call])."""
    llvm = _llvm()
    machine = target_machine(opt=0)
    module = _module_for(llvm_ir, machine)
    passes = llvm.create_new_module_pass_manager()
    passes.add_sroa_pass()
    passes.add_instruction_combine_pass()
    passes.add_simplify_cfg_pass()
    passes.run(module, llvm.create_pass_builder(
        machine, llvm.create_pipeline_tuning_options(speed_level=0)))
    return machine.emit_object(module)


class FrameReports:
    """The frames' variables reported while an error unwinds, innermost first: those
    of the frames the error will show (Note [Deep call chains], abi.py): the first
    abi.HEAD_FRAMES, and the last ones after a gap."""

    def __init__(self):
        self.head: list = []
        self.tail = collections.deque(maxlen=abi.TAIL_FRAMES + 1)
        self.count = 0

    def add(self, text: str) -> None:
        self.count += 1
        (self.head if len(self.head) < abi.HEAD_FRAMES else self.tail).append(text)

    def texts(self) -> list:
        """One text per frame of error_from_context's list ("" at the gap)."""
        if self.count <= abi.MAX_FRAMES + 1:
            return self.head + list(self.tail)
        return self.head + [""] + list(self.tail)[1:]


class LoadedCode:
    """One module's object code loaded (`load_code`: its shared library opened, or
    MCJIT), with its hooks pointed at `native`'s routines, and the entry points
    looked up in it."""

    def __init__(self, native: "NativeModule", code: ObjectCode, loops: list):
        self.engine = load_code(code)
        self.functions: dict = {}
        self.entries: dict = {}         # symbol → (ctypes function, EntryLayout)
        self.batch_entries: dict = {}   # the same for batches (backends/llvm/batch.py)
        self.hooks = []                 # the ctypes callbacks, kept alive with the code
        self.install_hook(PRINT_HOOK, native.print_hook)
        self.install_hook(LOCALS_HOOK, native.locals_hook)
        kept_blocks.install(self.engine, process_code)  # Note [Large ancillas kept
        #                                                 between calls]
        self.prints = bool(self.engine.get_global_value_address(PRINT_HOOK))
        self.loops = None
        if loops:           # Note [Parallel loops on threads]
            from .blocks import ThreadedLoops

            self.loops = ThreadedLoops(native, loops, self.engine)
            self.loops.install()

    def install_hook(self, name: str, function) -> None:
        address = self.engine.get_global_value_address(name)
        if not address:
            return
        hook = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_double))(function)
        self.hooks.append(hook)
        ctypes.c_void_p.from_address(address).value = ctypes.cast(hook, ctypes.c_void_p).value

    def function(self, symbol: str, entry: str):
        """The entry point Python calls (Note [Arrays read by the entry point])."""
        cfunc = self.functions.get(symbol)
        if cfunc is None:
            suffix = "_entry" if array_header() is None else "_pyentry"
            address = self.engine.get_function_address(symbol + suffix)
            if not address:         # Note [Entry points of the entry], backends/llvm/emit.py
                raise InternalError(f"the compiled module of {entry} has no entry "
                                    f"point {symbol}{suffix}")
            cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)(address)
            self.functions[symbol] = cfunc
        return cfunc


class NativeModule:
    """A module's object code, loaded (`LoadedCode`); where it was compiled quickly,
    its optimised code replaces it after the first call (Note [A quick first call],
    backends/llvm/tiers.py)."""

    def __init__(self, entry: str, symbols: dict, sites: list, code: ObjectCode,
                 recursive: bool, loops: list = (), entry_writes: frozenset | None = None):
        self.entry, self.symbols, self.sites = entry, symbols, sites
        # the positions of the array parameters the entry function may write, after
        # the IR passes (None: not known; Note [Restoration nobody reads], ir/prune.py)
        self.entry_writes = entry_writes
        self.recursive = recursive      # deep native recursion needs a big stack
        self.threaded_loops = list(loops)
        self.out = None                 # where @safe print writes (None: stdout)
        self._reports = threading.local()   # .frames: the failing call's frame variables
        self._code = LoadedCode(self, code, self.threaded_loops)
        self._optimising: Optimising | None = None
        self._called = False            # (a call claimed the quick code)
        self._quick = self._job = self._preempt = None  # the quick code, the thread
        #                                 optimising it, its rev_preempt (PreemptByte)
        self._replaced: list = []       # quick code, kept while its callers may run it
        self._settle_lock = threading.Lock()
        self._claim_lock = threading.Lock()

    def optimise_later(self, work, alone: float | None = None) -> None:
        """Run `work()` (→ the optimised object code) on a thread; the code it gives
        replaces this module's after the first call (Note [A quick first call]).
        `alone`: the seconds a first call may run the quick code before the compile
        starts (one core: Note [One core for two tiers]); None: it starts now."""
        self._quick, self._alone = self._code, alone
        self._preempt = PreemptByte(self._code.engine.get_global_value_address(
            abi.PREEMPT_FLAG))
        self._optimising = self._job = Optimising(work, held=alone is not None)

    def settled(self) -> LoadedCode:
        """The code for what outlives a call: the optimised code, waited for."""
        if self._optimising is not None:
            with self._settle_lock:
                job = self._optimising
                if job is not None:
                    code = job.wait()
                    if code is not None:    # (else the quick code stays: it is correct)
                        self._replaced.append(self._code)
                        self._code = LoadedCode(self, code, self.threaded_loops)
                    self._optimising = None
        return self._code

    def claim_quick_code(self) -> bool:
        """Whether the call about to start may run the quick code: the optimised code
        is not ready and no call has claimed the quick code before (one call only,
        whichever thread makes it: Note [A quick first call])."""
        job = self._optimising
        if job is None or self._called or job.ready():
            return False
        with self._claim_lock:
            claimed, self._called = not self._called, True
        return claimed

    def arm_preemption(self) -> None:
        """A call that may leave the quick code starts: it leaves when the optimised
        code is ready (Note [Leaving the quick code], backends/llvm/tiers.py)."""
        self._preempt.arm()
        self._job.on_ready(self._preempt.fire)
        if self._alone is not None:
            self._job.start_after(self._alone, self._preempt.fire)

    def disarm_preemption(self) -> None:
        """The call must not leave the quick code any more (it printed)."""
        if self._preempt is not None:
            self._preempt.disarm()

    def end_quick_call(self) -> None:
        """The call on the quick code ended: the O3 compile may start."""
        self.disarm_preemption()
        self._job.start()

    @property
    def engine(self):
        return self.settled().engine

    @property
    def batch_entries(self) -> dict:
        return self.settled().batch_entries

    @property
    def prints(self) -> bool:
        return self._code.prints

    def print_hook(self, site, values) -> None:
        import sys

        self.disarm_preemption()    # a call that printed does not run again
        site_info = self.sites[site]
        line = print_line(site_info, print_values(site_info, values))
        (self.out or sys.stdout).write(line + "\n")

    def locals_hook(self, site, values) -> None:    # Note [Frame variables in compiled errors]
        frames = getattr(self._reports, "frames", None)
        if frames is None:          # the first frame unwound: `call` takes them
            frames = self._reports.frames = FrameReports()
        site_info = self.sites[site]
        try:
            text = locals_text(site_info, print_values(site_info, values))
        except Exception:   # noqa: BLE001 - nothing may escape into native code:
            text = ""       # the error is raised without this frame's variables
        frames.add(text)

    def threads(self) -> int:
        """The threads a call may give its `@parallel for` loops (ctx[CTX_THREADS])."""
        if not self.threaded_loops:
            return 1
        from ...threads import get_num_threads

        return get_num_threads()

    def forget_frames(self) -> None:
        """Drop the frame reports this thread collected (a failed block's)."""
        self._reports.frames = None

    def function(self, symbol: str):
        """The entry point Python calls (Note [Arrays read by the entry point])."""
        return self.settled().function(symbol, self.entry)

    def entry_of(self, symbol: str, code: LoadedCode | None = None) -> tuple:
        """(the entry point Python calls, its EntryLayout), in `code` (default: the
        optimised code)."""
        code = code or self.settled()
        entry = code.entries.get(symbol)
        if entry is None:
            types, results, written, changed = self.symbols[symbol]
            entry = code.entries[symbol] = (code.function(symbol, self.entry), EntryLayout(
                types, results, objects=array_header() is not None, written=written,
                changed=changed))
        return entry

    def layout(self, symbol: str) -> EntryLayout:
        """How calls of `symbol` are packed (the same in the quick and the optimised
        code); finds the entry point in the code loaded now, waiting for nothing."""
        return self.entry_of(symbol, self._code)[1]

    def entry_for_a_call(self, symbol: str, quick: "QuickCall | None") -> tuple:
        """`entry_of(symbol)` in the code a call runs: the quick code where `quick`
        (tiers.quick_call) holds this module, else the optimised code (Note [A quick
        first call])."""
        if quick is not None and self in quick.natives:
            return self.entry_of(symbol, self._quick)
        return self.entry_of(symbol)

    def call(self, symbol: str, values: list, max_depth: int) -> list:
        """The new values of the arguments, followed by (name, value) pairs of the
        store when the function is `main`."""
        quick = quick_call([(self, symbol)], values) if self._optimising else None
        function, layout = self.entry_for_a_call(symbol, quick)
        buffer = layout.pack(values, max_depth, self.threads())
        with quick or contextlib.nullcontext():
            status = function(layout.ctx(buffer), layout.args(buffer))
        layout.release(buffer, values)
        if status != 0:
            if quick is not None and quick.left(layout.context(buffer)):
                return self.call(symbol, values, max_depth)     # on the optimised code
            self.failed(status, layout, buffer, max_depth)
        new = layout.unpack(buffer, values)
        layout.reuse(buffer)
        return new

    def failed(self, status: int, layout: EntryLayout, buffer, max_depth: int):
        """Raise the error of a call of one of this module's entry points that
        returned `status` (not 0), packed in `buffer` by `layout`."""
        if status == NOT_ADDRESSABLE:
            raise not_addressable()
        if status == READ_ONLY:
            raise ReadOnlyArgument(layout.context(buffer)[abi.CTX_IVALS])
        reports = getattr(self._reports, "frames", None) or FrameReports()
        self._reports.frames = None
        raise error_from_context(layout.context(buffer), self.sites, max_depth,
                                 reports.texts())

    def settled_now(self) -> bool:
        """Whether the code calls run is final (no optimised code is still to come:
        Note [A quick first call])."""
        return self._optimising is None
