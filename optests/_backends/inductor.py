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
:attr:`Inductor.free_strides`."""

from __future__ import annotations

from .dynamo import Dynamo


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
