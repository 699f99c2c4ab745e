"""The ``aot_eager_decomp_partition`` backend: AOTAutograd with inductor's decomposition table
(``torch._inductor.decomposition.select_decomp_table()``, with ``torch._inductor.compile_fx``
imported as torch's backend imports it) and inductor's min-cut partitioner
(``min_cut_rematerialization_partition`` with ``compiler="inductor"``), run by no-op compilers,
``keep_inference_input_mutations=True``. What torch's Dynamo backend of that name does after
Dynamo, without Dynamo (as ``aot_eager``): it checks every decomposition inductor uses against
eager, with no code generation.

Without functionalization (the ``-nofunc`` modes) it takes the default partitioner, as
``aot_eager`` does: the min-cut partitioner needs functional graphs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class AotEagerDecompPartition:
    """AOTAutograd with inductor's decompositions and partitioner, no-op compilers."""

    nofunc = True
    #: Decompositions draw random numbers their own way (``dropout`` as ``rand_like < p``).
    same_random = False
    opinfo_test = "TestEagerFusionOpInfo"
    free_strides: frozenset[str] = frozenset()

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        # torch's backend of this name takes the table from compile_fx, whose import loads
        # inductor's lowerings: decompositions call into them (max_pool2d_with_indices asks
        # torch._inductor.lowering whether to fall back), and raise AttributeError without them
        import torch._inductor.compile_fx  # noqa: F401
        from functorch.compile import compiled_function, default_partition, min_cut_rematerialization_partition, nop
        from torch._functorch import config
        from torch._inductor.decomposition import select_decomp_table

        compiled = compiled_function(
            fn,
            nop,
            nop,
            dynamic=dynamic,
            partition_fn=default_partition
            if disable_functionalization
            else functools.partial(min_cut_rematerialization_partition, compiler="inductor"),
            decompositions=select_decomp_table(),
            keep_inference_input_mutations=True,
            disable_functionalization=disable_functionalization,
        )

        def run(tensors: Any) -> Any:
            # as torch's backend of this name traces: effect tokens unlifted (it traces on the first call)
            with config.patch(unlift_effect_tokens=True):
                return compiled(tensors)

        return run
