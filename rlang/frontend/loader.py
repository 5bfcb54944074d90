"""Files → a `Unit`: read, parse, resolve `include`s, collect definitions.

`load_unit(path)` reads a file; `loads_unit(text, file)` takes source text.  Neither
runs the checker (see `rlang.frontend.check`).  Includes are resolved relative to the file
that names them, except `std/…`, which names the standard library shipped inside
the package (rlang/std).  Each file is included once; an include cycle is a
ParseError at the include that closes it.  An error inside an included file notes
where that file was included (as C compilers say "in file included from").

With `confine=True` (a sandbox, docs/sandbox.md) includes may reach only the
program's own directory tree and std/ (Note [Confined includes]).
"""
from __future__ import annotations

from pathlib import Path

from . import ast
from ..errors import ParseError
from ..span import Span, file_span, register_source
from .parse_cache import parsed
from .unit import Unit

STD_DIR = Path(__file__).resolve().parent.parent / "std"


def read_source(path: str, span: Span | None = None, notes: tuple = ()) -> str:
    """The text of `path`, or a ParseError saying why it cannot be read, at `span`
    (the include that names the file), else at a span naming the file itself, with
    `notes` (where the path was looked for) when the file is not there."""
    span = span or file_span(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        shown = f"std/{Path(path).name}" if Path(path).parent == STD_DIR else path
        raise ParseError(f"file not found: {shown}", span, notes) from None
    except IsADirectoryError:
        raise ParseError(f"{path} is a directory, not a .rev file", span) from None
    except OSError as error:
        raise ParseError(f"cannot read {path}: {error.strerror}", span) from None
    except ValueError:                  # a NUL byte in the path (the OS takes none)
        raise ParseError(f"{path!r} is not a file name: it contains a NUL byte", span) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")   # a byte order mark is no text
    except UnicodeDecodeError as error:
        before = data[: error.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        register_source(path, data.decode("utf-8", errors="replace"))
        raise ParseError(f"the file is not UTF-8 text: byte 0x{data[error.start]:02x} cannot "
                         "start a character here (is it a binary file?)",
                         Span(path, line, col, line, col + 1)) from None


def load_unit(path: str, confine: bool = False, modular: bool = False) -> Unit:
    """Parse `path` and everything it includes (with `confine`, only includes in the
    directory tree of `path` and std/).  A file ending in `.ja` is a Janus program
    (rlang/frontend/janus), read with 32-bit wrapping integers where `modular`."""
    where = () if Path(path).is_absolute() else \
        (f"a relative path is taken from the current directory, {Path.cwd()}",)
    text = read_source(path, notes=where)
    if path.endswith(".ja"):
        from .janus import loads_janus      # lark: imported on the first load

        return loads_janus(text, path, modular)
    return loads_unit(text, path, confine)


def loads_unit(text: str, file: str = "<string>", confine: bool = False,
               shipped: dict | None = None) -> Unit:
    """Parse source `text` (named `file` in errors) and everything it includes (with
    `confine`, only includes in the directory tree of `file`, and std/; only std/
    where `file` names no file, as "<string>").  `shipped` maps include paths (as
    `Unit.sources` names them) to their texts, which are taken instead of reading
    those files: a program rebuilt where its files are not (`rlang.dask`)."""
    program = parsed(text, file)   # Note [Parsed programs on disk]
    unit = Unit(program=program, file=file, sources=[(file, text)])
    roots = _roots(file) if confine else None
    _collect(unit, program, file, active=[_key(file)], seen={_key(file)}, roots=roots,
             shipped=shipped or {})
    return unit


# Note [Confined includes]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# In a sandbox an include is allowed when its path -- resolved as usual, then with
# every symlink and `..` resolved (Path.resolve) -- lies inside the directory of the
# program's file or inside std/.  The check is made on the path before the file is
# opened: a refused include says neither what the file holds nor whether it exists,
# and a symlink inside the tree that points out of it is refused like the path it
# points to.  Source given as text with no file name may include only std/.
# Outside a sandbox, includes reach any file the process can read, as `#include`
# does in C: a parse error in an included file quotes the one line it is about
# (what the error needs, as gcc and clang do) and notes where the file was included.


def _roots(file: str) -> tuple[Path, ...]:
    """The directories a confined program may include from."""
    if file.startswith("<"):
        return (STD_DIR,)
    return (Path(file).parent.resolve(), STD_DIR)


def _check_confined(include: ast.Include, path: str, roots) -> None:
    if roots is None:
        return
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError):     # a symlink loop: nothing that can be read
        real = None
    if real is not None and any(real.is_relative_to(root) for root in roots):
        return
    where = "the standard library std/" if len(roots) == 1 else \
        "the program's own directory and the standard library std/"
    raise ParseError(f"include \"{include.path}\" is refused in sandbox mode: a sandboxed "
                     f"program may include only files in {where}", include.span)


def _key(file: str) -> str:
    try:
        return str(Path(file).resolve())
    except OSError:
        return file


def _resolve(include: ast.Include, including_file: str) -> str:
    if include.path.startswith("std/"):
        return str(STD_DIR / include.path[len("std/"):])
    base = Path(including_file).parent if not including_file.startswith("<") else Path(".")
    return str(base / include.path)


def _include_notes(include: ast.Include, including_file: str) -> tuple:
    """Where an include's file was looked for, said for a user."""
    if include.path.startswith("std/"):
        shipped = sorted(f"std/{p.name}" for p in STD_DIR.glob("*.rev"))
        return (f"`std/…` names the standard library, which has {', '.join(shipped)}",)
    if Path(include.path).is_absolute():
        return ()
    base = Path(including_file).parent if not including_file.startswith("<") else Path(".")
    where = "the current directory" if str(base) == "." else f"{base}/"
    return (f"an include's path is taken from the directory of the including file "
            f"(here {where})",)


def _collect(unit: Unit, program: ast.Program, file: str, active: list, seen: set,
             roots=None, shipped: dict | None = None) -> None:
    for item in program.items:
        if isinstance(item, ast.Include):
            path = _resolve(item, file)
            _check_confined(item, path, roots)
            key = _key(path)
            if key in active:
                raise ParseError(f"include cycle: {item.path} is already being included",
                                 item.span)
            if key in seen:
                continue
            seen.add(key)
            text = shipped[path] if shipped and path in shipped else \
                read_source(path, item.span, _include_notes(item, file))
            try:
                included = parsed(text, path)
                unit.included_programs.append(included)
                unit.sources.append((path, text))
                active.append(key)
                _collect(unit, included, path, active, seen, roots, shipped)
                active.pop()
            except ParseError as error:
                error.notes += (f"{item.path} is included at {item.span}",)
                raise
        elif isinstance(item, ast.Function):
            _define(unit.functions, unit, "function", item)
        elif isinstance(item, ast.Const):
            _define(unit.consts, unit, "const", item)


def _define(table: dict, unit: Unit, kind: str, item) -> None:
    if item.name in table:
        unit.redefinitions.append((kind, item.name, item.span))
    else:
        table[item.name] = item
