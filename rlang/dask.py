"""`rlang.dask`: a rev function over many inputs on a Dask cluster (LANGUAGE.md §14).

    rlang.dask.map(m.f, inputs, client=None)
    rlang.dask.gradients(m.f, inputs, loss="y!", client=None)

`inputs` is a sequence of argument tuples; the result is a list in input order
whose items are what `m.f(*args)` / `rlang.gradient(m.f, args, loss=…)` return, or,
for an input that failed, the `RlangError` it raised.  Needs `distributed`
(`pip install "rlang[dask]"`).

Note [Programs on workers]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A worker gets the program as its source texts (the main file's and every included
file's, `Unit.sources`), never as pickled native code: compiled code holds
addresses of the process that made it.  Each worker process rebuilds the module
once per program (`_module`, keyed by a SHA-256 of the texts and the options) and
keeps it; the llvm backend's disk cache then makes the compile a load where the
workers share a file system with a process that compiled it.  The includes are
taken from the shipped texts (`loads_unit(…, shipped=…)`), so the program need not
exist on the workers' machines; `std/` files come from the workers' own rlang.

The inputs go in chunks (`chunk_size` inputs per task; by default about four
tasks per worker, so a slow chunk does not leave the others idle), each chunk one
Dask task that loops over its inputs with the worker's module.  Arrays arrive as
views of Dask's message buffers, read-only and not always aligned: the worker runs
on its own copies of those (`_own`).  An input whose run
raises an `RlangError` gives that error as its item; the others in its chunk go
on.  Any other exception is a fault of rlang or of the cluster, and is raised.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
from dataclasses import dataclass

import numpy as np

from .errors import RlangError, RlangTypeError

import distributed          # (missing: rlang/__init__.py says what to install)


@dataclass(frozen=True)
class ShippedProgram:
    """What a worker rebuilds a module from (Note [Programs on workers])."""

    file: str
    sources: tuple          # ((file, text), …): the main file's first
    backend: str | None
    invcheck: bool
    sandbox: object         # an rlang.Sandbox, or None
    key: str


def shipped(module) -> ShippedProgram:
    """The program of `module` (an `api.Module`) as workers take it."""
    sources = tuple(module.unit.sources)
    digest = hashlib.sha256()
    for file, text in sources:
        digest.update(f"{len(file)}:{file}{len(text)}:".encode("utf-8"))
        digest.update(text.encode("utf-8"))
    digest.update(repr((module.backend, module.invcheck, module.sandbox)).encode("utf-8"))
    return ShippedProgram(module.unit.file, sources, module.backend, module.invcheck,
                          module.sandbox, digest.hexdigest())


_MODULES: dict = {}          # this process's modules, by ShippedProgram.key
_MODULES_LOCK = threading.Lock()


def _module(program: ShippedProgram):
    """The module of `program` in this process, built on first use."""
    with _MODULES_LOCK:
        module = _MODULES.get(program.key)
        if module is None:
            from .api import Module
            from .frontend.loader import loads_unit

            (file, text), rest = program.sources[0], program.sources[1:]
            unit = loads_unit(text, file, confine=program.sandbox is not None,
                              shipped=dict(rest))
            module = _MODULES[program.key] = Module(unit, program.backend, program.invcheck,
                                                    program.sandbox)
        return module


def run_chunk(program: ShippedProgram, name: str, inverse: bool, loss, chunk: list) -> list:
    """The items of one chunk of inputs, on a worker: `f(*args)`, or with `loss` (a
    1-tuple holding it) `rlang.gradient(f, args, loss)`, or the RlangError raised."""
    from .ad.drivers import gradient

    module = _module(program)
    function = module[name]
    if inverse:
        function = ~function
    out = []
    for args in chunk:
        args = [_own(a) for a in args]
        try:
            out.append(function(*args) if loss is None else gradient(function, args, loss[0]))
        except RlangError as error:
            out.append(error)
    return out


def _own(value):
    """An argument as the worker's own: an array that arrived as a view of a message
    buffer (read-only, perhaps unaligned, which compiled code refuses) is copied."""
    if isinstance(value, np.ndarray) and not (value.flags.aligned and value.flags.writeable):
        return value.copy()
    return value


def map(f, inputs, client=None, *, chunk_size: int | None = None,
        progress: bool = False) -> list:
    """`[f(*args) for args in inputs]` on a Dask cluster, an input that failed giving
    its RlangError (module docstring).  `client`: a `distributed.Client` (None: a
    LocalCluster of one single-threaded process per CPU, started and closed here);
    `progress`: show Dask's progress bar while the chunks run."""
    return _over_cluster(f, inputs, client, None, chunk_size, progress, "map")


def gradients(f, inputs, loss, client=None, *, chunk_size: int | None = None,
              progress: bool = False) -> list:
    """`[rlang.gradient(f, args, loss=loss) for args in inputs]` on a Dask cluster, as
    `map` runs it."""
    from .ad.loss import resolve_loss

    _check_function(f, "gradients")
    resolve_loss(f.module.unit.functions[f.name], loss)     # a bad loss: here, once
    return _over_cluster(f, inputs, client, (loss,), chunk_size, progress, "gradients")


def _check_function(f, driver: str) -> None:
    if not (hasattr(f, "module") and hasattr(f, "inverse")):
        raise RlangTypeError(f"rlang.dask.{driver} takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(f).__name__}")


def _over_cluster(f, inputs, client, loss, chunk_size, progress, driver: str) -> list:
    _check_function(f, driver)
    inputs = _argument_tuples(inputs, driver)
    if client is not None and not isinstance(client, distributed.Client):
        raise RlangTypeError(f"rlang.dask.{driver}: client must be a distributed.Client "
                             f"(or None for a LocalCluster of this machine), got "
                             f"{type(client).__name__}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or
                                   isinstance(chunk_size, bool) or chunk_size < 1):
        raise RlangTypeError(f"rlang.dask.{driver}: chunk_size must be a positive int, "
                             f"got {chunk_size!r}")
    if not inputs:
        return []
    if client is None:
        with _local_client() as local:
            return _submitted(local, f, inputs, loss, chunk_size, progress)
    return _submitted(client, f, inputs, loss, chunk_size, progress)


def _argument_tuples(inputs, driver: str) -> list:
    if isinstance(inputs, (str, bytes, dict)):
        raise RlangTypeError(f"rlang.dask.{driver} takes the inputs as a sequence of "
                             f"argument tuples, got {type(inputs).__name__}")
    try:
        inputs = list(inputs)
    except TypeError:
        raise RlangTypeError(f"rlang.dask.{driver} takes the inputs as a sequence of "
                             f"argument tuples, got {type(inputs).__name__}") from None
    for k, args in enumerate(inputs):
        if not isinstance(args, (tuple, list)):
            raise RlangTypeError(f"rlang.dask.{driver}: input {k} must be a tuple of "
                                 f"arguments, got {type(args).__name__}")
    return inputs


class _local_client:
    """A LocalCluster of single-threaded worker processes, one per CPU this process
    may use, and its client; both closed on leaving."""

    def __enter__(self):
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
        self.cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                                processes=True, dashboard_address=":0",
                                                silence_logs=logging.ERROR)
        self.client = distributed.Client(self.cluster)
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        self.cluster.close()


def _submitted(client, f, inputs: list, loss, chunk_size, progress) -> list:
    """Run the chunks on `client`'s cluster; the items in input order."""
    if chunk_size is None:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunk_size = max(1, math.ceil(len(inputs) / (4 * workers)))
    program = shipped(f.module)
    chunks = [inputs[k:k + chunk_size] for k in range(0, len(inputs), chunk_size)]
    futures = [client.submit(run_chunk, program, f.name, f.inverse, loss, chunk,
                             pure=False) for chunk in chunks]
    if progress:
        distributed.progress(futures)
    try:
        results = client.gather(futures)
    finally:
        for future in futures:
            future.release()
    return [item for chunk in results for item in chunk]
