"""The ``aot_eager`` backend, the default: AOTAutograd (functorch's ``compiled_function``) with
no-op forward and backward compilers, ``keep_inference_input_mutations=True``, and the min-cut
rematerialization partitioner (the default partitioner without functionalization: min-cut needs
functional graphs). The check of ``SPEC.md`` section 1."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class AotEager:
    """AOTAutograd with no-op compilers."""

    #: It compiles without functionalization when asked: the ``-nofunc`` modes apply.
    nofunc = True
    #: It runs eager's own kernels in eager's order: random draws agree with eager's.
    same_random = True
    #: The in-tree test whose ``DecorateInfo`` decorations apply (``optests._opinfo.decorations``).
    opinfo_test = "TestEagerFusionOpInfo"
    #: Ops (``name`` or ``name.variant``) whose output strides it may choose freely: none.
    free_strides: frozenset[str] = frozenset()

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        from functorch.compile import compiled_function, default_partition, min_cut_rematerialization_partition, nop

        return compiled_function(  # type: ignore[no-any-return]
            fn,
            nop,
            nop,
            dynamic=dynamic,
            # the min-cut partitioner needs functional graphs
            partition_fn=default_partition if disable_functionalization else min_cut_rematerialization_partition,
            keep_inference_input_mutations=True,
            disable_functionalization=disable_functionalization,
        )
