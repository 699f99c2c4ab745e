"""The ``inductor`` backend: ``torch.compile(fn, backend="inductor", fullgraph=True, dynamic=...)``.

Why ``torch.compile`` rather than inductor's ``compile_fx`` as AOTAutograd's compilers: inductor
is what a user of ``torch.compile`` runs, and ``torch.compile`` is how they run it. ``compile_fx``
takes a Dynamo graph and runs AOTAutograd itself, with inductor's decompositions, partitioner and
config set up as ``torch.compile`` sets them; handing it our own AOTAutograd graph would check a
pipeline nobody runs. So Dynamo traces the call first (a graph break is a ``trace`` finding,
:class:`optests._backends.dynamo.GraphBreak`), and AOTAutograd's trace is inductor's own: the check's
trace-metadata comparison (fake/meta kernels vs real) is ``aot_eager``'s, not this backend's.

On CPU inductor builds C++ (seconds a sample, cached by inductor's FX graph cache:
``docs/contract.md``, "Backends"). The OpInfo's decorations aimed at the in-tree inductor test
(``TestInductorOpInfo``) apply. Output strides must match eager's, except for the ops in
:attr:`Inductor.free_strides`.

Its caches live under ``TORCHINDUCTOR_CACHE_DIR`` (torch's default: ``TMPDIR/torchinductor_USER``),
which torch creates as soon as Dynamo is imported, whatever the backend: :func:`check_cache_dir`
refuses, in one line, a directory torch cannot create or write, before torch is imported."""

from __future__ import annotations

import os
import tempfile

from .._env import CACHE_ENV, torch_default_cache_dir
from .._files import reason
from .._sanitize import printable
from ..errors import CacheDirError as CacheDirError
from .dynamo import Dynamo

#: The environment variable that names the directory of inductor's (and Dynamo's) caches.
CACHE_DIR = CACHE_ENV


def cache_dir() -> tuple[str, bool]:
    """The directory torch keeps its compile caches in, as torch finds it (absolute), and whether
    ``TORCHINDUCTOR_CACHE_DIR`` names it (else it is torch's default). Torch-free."""
    given = os.environ.get(CACHE_DIR)
    if given is not None:
        return os.path.abspath(given), True
    return torch_default_cache_dir(), False


def check_cache_dir(option: str = "", folder: str = "") -> None:
    """Create the compile caches' directory if it is missing, as torch would, and write a file in
    it; a :class:`CacheDirError` naming it and what is wrong, if that fails. The directory is
    ``folder``, named by ``option`` (``--compile-cache``), or else torch's (:func:`cache_dir`).
    Torch-free: called before torch is imported (:func:`check_compile_cache`)."""
    if folder:
        path, given, value, variable = os.path.abspath(folder), True, folder, option
    else:
        path, given = cache_dir()
        value, variable = os.environ[CACHE_DIR] if given else path, CACHE_DIR
    value = printable(value)  # one line, whatever the name holds
    shown = f"{variable}={value}" if given else f"{value} (torch's default for {CACHE_DIR}, which is not set)"
    advice = "torch keeps its compile caches there: name a writable directory"
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        if os.path.exists(path):
            what = "is not a directory"
        elif os.path.islink(path):
            what = f"is a symbolic link to {os.readlink(path)!r}, which does not exist"
        else:
            what = f"cannot be created: {reason(e)}"
        raise CacheDirError(f"{shown}: {what}; {advice}") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".optests-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise CacheDirError(f"{shown}: cannot be written: {reason(e)}; {advice}") from None


def check_compile_cache(option: str, choice: str) -> None:
    """Check the folder a run's compile cache ``choice`` (:func:`optests._env.parse_compile_cache`,
    given as ``option``) will use, as :func:`check_cache_dir` does, before the run enters it and
    torch is imported: ``shared``, torch's own; a folder, that one; ``fresh``, none (the run makes
    an empty one, and what ``TORCHINDUCTOR_CACHE_DIR`` names is not used)."""
    if choice == "shared":
        check_cache_dir()
    elif choice != "fresh":
        check_cache_dir(option, choice)


class Inductor(Dynamo):
    """``torch.compile`` with inductor."""

    opinfo_test = "TestInductorOpInfo"
    #: Ops whose output strides inductor chooses freely, as the in-tree test's
    #: ``inductor_skip_exact_stride`` lists them: only dtype, shape, ``requires_grad`` and
    #: aliasing of their outputs are compared. Empty until a sweep shows an op that needs it
    #: (every entry needs a reason).
    free_strides: frozenset[str] = frozenset()

    def __init__(self) -> None:
        super().__init__("inductor")
