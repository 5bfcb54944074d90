"""Frozen records: the AST's and the IR's node classes.

`record(cls)` makes `cls` a frozen dataclass as far as its users can tell: the same
`__init__` (positional fields, defaults, `default_factory`, `kw_only`,
`__post_init__`), `__repr__`, `__eq__` and `__hash__` over the fields that `compare`,
assignment raising `dataclasses.FrozenInstanceError`, and `dataclasses.fields`,
`replace` and `is_dataclass` working on it.  It only costs less to define.

Note [Records compiled when first used]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`dataclass(frozen=True)` writes the source of six methods per class and compiles each
with its own `exec`: importing `rlang.ir.nodes` (40 classes, 234 methods) took 30–50
ms, almost all of it compiling, and `rlang.frontend.ast` 25–30 ms.  The IR's import is
on the path of every compiled call of a fresh process, a call from the disk cache
included (issue #26 asks for such a first gradient in under 30 ms), and a call from
the cache builds no node at all.  So here nothing is compiled when a class is
defined:

- `dataclass` is asked only for its bookkeeping (the fields, `__match_args__`);
- `__eq__`, `__hash__` and `__repr__` are shared by every record class and read a
  class's fields through `operator.attrgetter` (C code, as fast as the generated
  comparisons);
- `__init__` is the one method whose generated code is faster than a shared one
  (keyword and default handling), so each class's is generated as `dataclass` writes
  it, but only when the class's first instance is made (`_first_init`): a process
  compiles the constructors of the classes it uses, once;
- `__setattr__` and `__delattr__` raise `FrozenInstanceError`, as a frozen
  dataclass's do.
"""
from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, fields
from operator import attrgetter

__all__ = ["record"]


class _Factory:
    """The default of a parameter whose field has a `default_factory`."""

    def __repr__(self):
        return "<factory>"


_FACTORY = _Factory()


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def record(cls):
    """`cls` as a frozen dataclass (see the module docstring)."""
    if cls.__doc__ is None:                 # (dataclass would ask inspect.signature)
        cls.__doc__ = ""
    cls = dataclass(cls, init=False, repr=False, eq=False)
    every = fields(cls)
    defaulted = False
    for f in every:
        if not f.kw_only:
            has_default = f.default is not MISSING or f.default_factory is not MISSING
            if defaulted and not has_default:
                raise TypeError(f"{cls.__name__}: non-default argument {f.name!r} "
                                "follows default argument")
            defaulted |= has_default
    compared = [f.name for f in every if f.compare]
    hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
    cls._compared_values = staticmethod(_values(compared))
    cls._hashed_values = staticmethod(_values(hashed))
    cls._shown_fields = tuple(f.name for f in every if f.repr)
    cls.__init__ = _first_init
    cls.__eq__, cls.__hash__, cls.__repr__ = _eq, _hash, _repr
    cls.__setattr__, cls.__delattr__ = _frozen_setattr, _frozen_delattr
    if not cls.__doc__:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in every)})"
    return cls


def _values(names: list):
    """A function of a record giving the tuple of its fields `names`."""
    if not names:
        return lambda record: ()
    if len(names) == 1:
        name = names[0]
        return lambda record: (getattr(record, name),)
    return attrgetter(*names)


def _eq(self, other):
    if other.__class__ is self.__class__:
        values = self._compared_values
        return values(self) == values(other)
    return NotImplemented


def _hash(self):
    return hash(self._hashed_values(self))


def _repr(self):
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown_fields)
    return f"{self.__class__.__qualname__}({shown})"


def _first_init(self, *args, **kwargs):
    """The `__init__` of a record class before its first instance: it compiles the
    class's own `__init__`, puts it on the class and calls it."""
    cls = self.__class__
    while "_shown_fields" not in cls.__dict__:      # (a subclass that is no record)
        cls = cls.__base__
    cls.__init__ = _compiled_init(cls)
    cls.__init__(self, *args, **kwargs)


def _compiled_init(cls):
    """The `__init__` `dataclass` would write for `cls`, compiled."""
    namespace = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    positional, keyword, assignments = [], [], []
    for f in fields(cls):
        name = f.name
        if f.default is not MISSING:
            namespace[f"_default_{name}"] = f.default
            parameter, value = f"{name}=_default_{name}", name
        elif f.default_factory is not MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            parameter = f"{name}=_FACTORY"
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        else:
            parameter, value = name, name
        (keyword if f.kw_only else positional).append(parameter)
        assignments.append(f"    _set(self, {name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        assignments.append("    self.__post_init__()")
    parameters = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = "\n".join([f"def __init__({parameters}):", *(assignments or ["    pass"])])
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init
