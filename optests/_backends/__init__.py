"""Backends: the compile step of the check, one module per backend, looked up by name with
:func:`get_backend`, the one place a backend's name is resolved:

- ``aot_eager`` (the default): AOTAutograd, no-op compilers (:mod:`.aot_eager`);
- ``aot_eager_decomp_partition``: the same with inductor's decompositions and partitioner
  (:mod:`.aot_eager_decomp_partition`);
- ``inductor``: ``torch.compile`` with inductor (:mod:`.inductor`);
- ``dynamo:NAME``: ``torch.compile`` with any backend in ``torch._dynamo.list_backends(exclude_tags=())``
  (:mod:`.dynamo`);
- ``MODULE:ATTRIBUTE``: a user's ``torch.compile`` backend callable (:mod:`.user`);
- a name :func:`register` gave.

A backend may be unable to run on this machine at all (inductor without a C++ compiler, a Dynamo
backend whose package is missing): :func:`preflight` compiles and calls a trivial function with
each backend of a run once, in an isolated child, before any check, and refuses one that cannot
in one line (:class:`BackendUnavailable`), rather than reporting every sample as a finding.

Torch-free to import (a backend imports its compiler when it compiles; ``dynamo:NAME`` and
``MODULE:ATTRIBUTE`` import what they name when first resolved), so that the plugin loads without
torch.

A backend's name is part of a sample's identity (``SampleKey.backend``): ids, results records and
registry scopes of any backend but :data:`DEFAULT_BACKEND` carry it (``docs/contract.md``, "Sample ids").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .._findings import error_line, user_code
from .._key import BACKEND_NAME, DEFAULT_BACKEND
from .._runner import Died, IsolatedRunner, WorkFailed
from ..errors import BackendUnavailable as BackendUnavailable
from .aot_eager import AotEager
from .aot_eager_decomp_partition import AotEagerDecompPartition
from .dynamo import Dynamo
from .inductor import Inductor
from .user import resolve

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "DYNAMO",
    "IN_TREE_TESTS",
    "NAME",
    "Backend",
    "BackendUnavailable",
    "get_backend",
    "parse_backends",
    "dynamo_backend",
    "preflight",
    "register",
    "register_backend",
]

#: The in-tree tests a backend may stand for (:attr:`Backend.opinfo_test`), and their test by
#: mode (dynamic: False, True): the OpInfos' ``DecorateInfo`` decorations aimed at that test apply
#: (``optests._opinfo.decorations``).
IN_TREE_TESTS = {
    "TestEagerFusionOpInfo": {False: "test_aot_autograd_exhaustive", True: "test_aot_autograd_symbolic_exhaustive"},
    "TestInductorOpInfo": {False: "test_comprehensive", True: "test_comprehensive"},
}


class Backend(Protocol):
    """Compiles the check's wrapper. The check (:func:`optests._check._check_call`) calls
    :meth:`compile` once per check, then calls what it returns on fresh copies of the inputs,
    under the same RNG seed as eager, and takes gradients through it. The attributes say where it
    may differ from eager (``docs/contract.md``, "Backends")."""

    #: It compiles without functionalization when asked; False: the ``-nofunc`` modes are refused.
    nofunc: bool
    #: It draws random numbers as eager does; False: the values of a call that draws them (an op
    #: tagged ``nondeterministic_seeded``) are not compared.
    same_random: bool
    #: The in-tree test whose ``DecorateInfo`` decorations apply: one of :data:`IN_TREE_TESTS`.
    opinfo_test: str
    #: Ops (``name`` or ``name.variant``) whose output strides it may choose freely.
    free_strides: frozenset[str]

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        """``fn`` compiled. ``fn`` takes one argument, the list of the call's tensors, and returns
        the call's output; so must the result. ``dynamic``: trace with symbolic shapes;
        ``disable_functionalization``: the ``-nofunc`` modes. A failure to compile may raise here
        or when the result is first called: either is a ``trace`` finding."""
        ...


#: What a backend says of itself (:class:`Backend`'s attributes).
_ATTRIBUTES = ("nofunc", "same_random", "opinfo_test", "free_strides")

#: Backends by name. :func:`register` adds one.
BACKENDS: dict[str, Backend] = {
    DEFAULT_BACKEND: AotEager(),
    "aot_eager_decomp_partition": AotEagerDecompPartition(),
    "inductor": Inductor(),
}

#: The prefix of a name that runs a Dynamo backend by its registered name: ``dynamo:eager``.
DYNAMO = "dynamo:"

#: What a backend's name may be: it ends a sample id after ``@`` (``...-sample3@inductor``).
NAME = re.compile(rf"^{BACKEND_NAME}$")

#: ``dynamo:NAME`` and ``MODULE:ATTRIBUTE`` backends, once resolved (in this process).
_RESOLVED: dict[str, Backend] = {}


def register_backend(name: str, backend: Backend) -> None:
    """Make ``backend`` (a :class:`Backend`) known as ``name``, in every process that checks:
    call it where the sweep's ``conftest.py`` runs, or in the module ``optests check --import``
    names. Then ``--optests-backends NAME`` (``--backends``, ``backends=``) selects it, and ids,
    results and registry entries name it. Public as :func:`optests.register_backend`.

    A ``ValueError`` where ``name`` is not a backend's name (letters, digits, ``_``, ``.``,
    ``:``) or ``backend`` lacks what the protocol asks."""
    if not NAME.match(name):
        raise ValueError(f"backend name {name!r}: expected letters, digits, '_', '.' or ':', not starting with a digit")
    missing = [a for a in (*_ATTRIBUTES, "compile") if not hasattr(backend, a)]
    if missing:
        raise ValueError(
            f"backend {name!r} has no {', '.join(missing)}, but expected the Backend protocol's {', '.join(_ATTRIBUTES)} and compile"
        )
    if backend.opinfo_test not in IN_TREE_TESTS:
        raise ValueError(f"backend {name!r}: opinfo_test={backend.opinfo_test!r}, but expected one of {', '.join(IN_TREE_TESTS)}")
    BACKENDS[name] = backend


#: The name vendors were first told to call; :func:`register_backend` is the public one.
register = register_backend


def parse_backends(value: str | Sequence[str]) -> tuple[str, ...]:
    """Backend names as users give them (comma-separated, or a sequence), each one
    :func:`get_backend` resolves, in order, without duplicates; a one-line ``ValueError``."""
    names = [n.strip() for n in (value.split(",") if isinstance(value, str) else value) if n.strip()]
    if not names:
        raise ValueError(f"none given; valid: {', '.join(BACKENDS)}, {DYNAMO}NAME or MODULE:ATTRIBUTE")
    for name in names:
        get_backend(name)
    return tuple(dict.fromkeys(names))


def get_backend(name: str) -> Backend:
    """The backend ``name`` names (see the module's docstring); a one-line ``ValueError`` that
    says what is wrong and what is valid."""
    backend = BACKENDS.get(name) or _RESOLVED.get(name)
    if backend is not None:
        return backend
    valid = f"valid: {', '.join(BACKENDS)}, {DYNAMO}NAME or MODULE:ATTRIBUTE"
    if not NAME.match(name) or ":" not in name:
        raise ValueError(f"unknown backend {name!r}; {valid}")
    if name.startswith(DYNAMO):
        import torch._dynamo

        dynamo_name = name.removeprefix(DYNAMO)
        known = torch._dynamo.list_backends(exclude_tags=())
        if dynamo_name not in known:
            raise ValueError(f"backend {name!r}: {dynamo_name!r} is not a Dynamo backend; known: {', '.join(known)}")
        # dynamo:inductor is inductor, with its rules (its decorations, its strides)
        resolved: Backend = Inductor() if dynamo_name == "inductor" else Dynamo(dynamo_name)
    else:
        resolved = resolve(name)
    _RESOLVED[name] = resolved
    return resolved


def dynamo_backend(name: str, *, disable_functionalization: bool = False) -> str | Callable[..., Any]:
    """What ``torch.compile(backend=...)`` takes for the backend ``name`` names: a sequence of
    calls on one compiled function (``optests._check._sequence``) needs Dynamo, whatever the
    backend. ``aot_eager`` and ``aot_eager_decomp_partition``: Dynamo's backends of those names
    (without functionalization: ``aot_autograd`` with no-op compilers, functionalization off, and
    the default partitioner); ``inductor``, ``dynamo:NAME`` and ``MODULE:ATTRIBUTE``: what they
    compile with; a backend :func:`register_backend` gave: one that hands each Dynamo graph to
    its :meth:`Backend.compile` (dynamic where the graph's inputs are symbolic)."""
    backend = get_backend(name)
    if isinstance(backend, Dynamo):
        return backend.backend
    if isinstance(backend, (AotEager, AotEagerDecompPartition)):
        if not disable_functionalization:
            return "aot_eager" if isinstance(backend, AotEager) else "aot_eager_decomp_partition"
        from functorch.compile import default_partition, nop
        from torch._dynamo.backends.common import aot_autograd

        return aot_autograd(
            fw_compiler=nop,
            bw_compiler=nop,
            partition_fn=default_partition,
            keep_inference_input_mutations=True,
            disable_functionalization=True,
        )
    return _ThroughCompile(backend, disable_functionalization)


class _ThroughCompile:
    """A Dynamo backend that compiles each graph Dynamo gives with a :class:`Backend`'s
    :meth:`~Backend.compile` (which takes a function of a list of tensors)."""

    def __init__(self, backend: Backend, disable_functionalization: bool) -> None:
        self.backend, self.disable_functionalization = backend, disable_functionalization

    def __call__(self, gm: Any, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        import torch

        def symbolic(x: Any) -> bool:
            return isinstance(x, torch.SymInt) or (
                isinstance(x, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in x.shape)
            )

        def graph(tensors: list[Any]) -> Any:
            return gm(*tensors)

        compiled = self.backend.compile(
            graph, dynamic=any(symbolic(x) for x in example_inputs), disable_functionalization=self.disable_functionalization
        )

        def run(*args: Any) -> Any:
            return compiled(list(args))

        return run


def refuse_modes(modes: Sequence[str], backends: Sequence[str]) -> None:
    """A ``ValueError`` if a ``-nofunc`` mode is asked of a backend that cannot compile without
    functionalization (those that compile through ``torch.compile``): refused before any check,
    rather than a finding or a skip on every sample."""
    nofunc = [m for m in modes if m.endswith("-nofunc")]
    if not nofunc:
        return
    for name in backends:
        if not get_backend(name).nofunc:
            able = ", ".join(n for n, b in BACKENDS.items() if b.nofunc)
            raise ValueError(
                f"mode {nofunc[0]!r} with backend {name!r}: it cannot compile without functionalization "
                f"(torch.compile has no such switch); the -nofunc modes need {able}"
            )


#: The least time a backend's :func:`preflight` may take (a cold inductor build takes seconds).
PREFLIGHT_TIMEOUT = 300.0

#: Backends whose :func:`preflight` passed in this process.
_RUNNABLE: set[str] = set()


def _trivial(tensors: list[Any]) -> Any:
    return tensors[0] * 2 + 1


def _probe(name: str) -> str:
    """In the preflight's child: "" if backend ``name`` compiles and calls :func:`_trivial`, else
    what it raised (``Type: first line``). Warnings are ignored, as in the check
    (``optests._pipeline.check``): a deprecation is no reason a backend cannot run."""
    import warnings

    import torch

    try:
        with warnings.catch_warnings(), user_code():
            warnings.simplefilter("ignore")
            get_backend(name).compile(_trivial, dynamic=False, disable_functionalization=False)([torch.ones(3)])
    except Exception as e:  # a SystemExit of the backend's too (user_code)
        return error_line(e)
    return ""


def preflight(names: Sequence[str], timeout: float = PREFLIGHT_TIMEOUT) -> None:
    """Compile and call a trivial function with each backend of ``names`` (resolved names), once
    in this process, in an isolated child (a crash or a hang costs the child: ``optests._runner``),
    given ``timeout`` seconds, at least :data:`PREFLIGHT_TIMEOUT`. A :class:`BackendUnavailable`
    for the first that cannot. The default backend is the check's own AOTAutograd, which runs
    wherever torch does: it is not asked. Called by the sweep before its first test and by
    :func:`optests._author.run_planned` (``optests check``, ``check_op``, ``op_test``)."""
    todo = [n for n in dict.fromkeys(names) if n != DEFAULT_BACKEND and n not in _RUNNABLE]
    if not todo:
        return
    limit = max(timeout, PREFLIGHT_TIMEOUT)
    runner = IsolatedRunner(_probe)
    try:
        for name in todo:
            try:
                answer = runner.run(name, limit)
            except WorkFailed as e:  # the answer did not come back (it does not pickle)
                answer = e.summary
            if isinstance(answer, Died):
                first = (answer.message.splitlines() or [answer.kind])[0].replace("the sample", "it")
                cause = f"took more than {limit:g} s" if answer.kind == "timeout" else f"crashed: {first}"
            else:
                cause = f"raised {answer}" if answer else ""
            if cause:
                raise BackendUnavailable(
                    f"backend {name!r} cannot run on this machine: compiling and calling a trivial function with it {cause}"
                )
            _RUNNABLE.add(name)
    finally:
        runner.close()
