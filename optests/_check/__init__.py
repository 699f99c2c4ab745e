"""The AOT-autograd check: run a call eagerly and under AOTAutograd (no-op compilers), compare.

Same call shape and semantics as ``torch.testing._internal.optests.aot_autograd_check``, plus
checks it lacks, each switchable off:

- ``check_metadata``: dtype, shape, significant strides, ``requires_grad`` and aliasing of every
  output, eager vs compiled and trace-predicted (fake/meta kernels) vs real;
- ``check_autograd_metadata``: each output's ``is_leaf``, whether its ``grad_fn`` is None, and
  which other outputs it shares a storage with, eager vs compiled;
- ``check_mutations``: eager and compiled run on their own fresh copies of the inputs; inputs
  must be mutated identically, and a mutation eager makes must be visible in the trace;
- ``randomize_without_gradients``: the randomized rerun also runs for forward-only checks;
- ``float64_reference``: a difference beyond tolerance that is within rounding of the same call
  in float64 is noted, not a finding (verdicts must not depend on how a CPU rounds).

One module per responsibility, lowest first (the entry points, which render a finding's repro,
are :mod:`optests._api`'s):

- :mod:`._intree`: The in-tree check's helpers, under the in-tree names.
- :mod:`._tolerances`: Tolerances: an OpInfo's override raised over ``assert_close``'s defaults, per dtype.
- :mod:`._metadata`: Metadata of one tensor, as plain data (never holds a tensor: fake tensors must not escape).
- :mod:`._trace`: The call as a function of its tensors, and what the trace saw the first time AOTAutograd called it.
- :mod:`._copies`: Fresh copies of the inputs: same values, strides, storage sharing, ``requires_grad`` and leaf-ness.
- :mod:`._options`: The check's options, declared once, and one run of the check under them.
- :mod:`._running`: Running a call: compiled by the backend, called by the pattern under the RNG seed.
- :mod:`._messages`: What a finding says: its factory, and the phrases for values, dtypes and names.
- :mod:`._float64`: The float64 judgement: a difference within rounding of the same call in float64 is noted, not a finding.
- :mod:`._comparisons`: The comparisons of eager and compiled, in the order they run (:data:`COMPARISONS`).
- :mod:`._sequence`: A sequence of calls on one compiled function (the ``sequence`` call pattern), each compared by the check proper.
- :mod:`._orchestration`: The check proper: eager vs compiled on the call's inputs, then on randomized data.
"""

from __future__ import annotations

from .._findings import Finding as Finding
from ._comparisons import (
    _UNSUPPORTED as _UNSUPPORTED,
)
from ._comparisons import (
    COMPARISONS as COMPARISONS,
)
from ._comparisons import (
    _autograd_metadata as _autograd_metadata,
)
from ._comparisons import (
    _check_compiled_metadata as _check_compiled_metadata,
)
from ._comparisons import (
    _check_mutations as _check_mutations,
)
from ._comparisons import (
    _check_trace_metadata as _check_trace_metadata,
)
from ._comparisons import (
    _compare as _compare,
)
from ._comparisons import (
    _compare_meta as _compare_meta,
)
from ._comparisons import (
    _Compared as _Compared,
)
from ._comparisons import (
    _compares as _compares,
)
from ._comparisons import (
    _compiled_metadata as _compiled_metadata,
)
from ._comparisons import (
    _errors as _errors,
)
from ._comparisons import (
    _forward_only_compiles as _forward_only_compiles,
)
from ._comparisons import (
    _gradients as _gradients,
)
from ._comparisons import (
    _mutations as _mutations,
)
from ._comparisons import (
    _outputs as _outputs,
)
from ._comparisons import (
    _raise_errors as _raise_errors,
)
from ._comparisons import (
    _raised_only_compiled as _raised_only_compiled,
)
from ._comparisons import (
    _random_op as _random_op,
)
from ._comparisons import (
    _refusals as _refusals,
)
from ._comparisons import (
    _trace_metadata as _trace_metadata,
)
from ._comparisons import (
    _unless_random as _unless_random,
)
from ._copies import (
    _Bases as _Bases,
)
from ._copies import (
    _copies as _copies,
)
from ._copies import (
    _copy as _copy,
)
from ._copies import (
    _donor_values as _donor_values,
)
from ._copies import (
    _flat as _flat,
)
from ._copies import (
    _flat_copy as _flat_copy,
)
from ._copies import (
    _identical as _identical,
)
from ._copies import (
    _is_plain_strided as _is_plain_strided,
)
from ._copies import (
    _same_leaf as _same_leaf,
)
from ._copies import (
    _storage_groups as _storage_groups,
)
from ._copies import (
    _storage_key as _storage_key,
)
from ._copies import (
    _widened_dtype as _widened_dtype,
)
from ._float64 import (
    LOWER_ROUNDING_FRACTION as LOWER_ROUNDING_FRACTION,
)
from ._float64 import (
    ROUNDING_MULTIPLIER as ROUNDING_MULTIPLIER,
)
from ._float64 import (
    _Float64Reference as _Float64Reference,
)
from ._float64 import (
    _in as _in,
)
from ._float64 import (
    _lower_rounding as _lower_rounding,
)
from ._float64 import (
    _Reference as _Reference,
)
from ._float64 import (
    _rounding_only as _rounding_only,
)
from ._float64 import (
    _same_values as _same_values,
)
from ._intree import (
    assert_close_equal_nan as assert_close_equal_nan,
)
from ._intree import (
    assert_raises_regex as assert_raises_regex,
)
from ._intree import (
    mode_name as mode_name,
)
from ._intree import (
    one_intra_op_thread as one_intra_op_thread,
)
from ._messages import (
    _difference as _difference,
)
from ._messages import (
    _dtype as _dtype,
)
from ._messages import (
    _error_excerpt as _error_excerpt,
)
from ._messages import (
    _finding_factory as _finding_factory,
)
from ._messages import (
    _grad_fn as _grad_fn,
)
from ._messages import (
    _listed as _listed,
)
from ._messages import (
    _names as _names,
)
from ._messages import (
    _scalar as _scalar,
)
from ._messages import (
    _short as _short,
)
from ._metadata import (
    _agree as _agree,
)
from ._metadata import (
    _hint as _hint,
)
from ._metadata import (
    _is_alias_of as _is_alias_of,
)
from ._metadata import (
    _Meta as _Meta,
)
from ._metadata import (
    _meta as _meta,
)
from ._metadata import (
    _significant_strides as _significant_strides,
)
from ._metadata import (
    _strides_that_count as _strides_that_count,
)
from ._options import (
    _NOT_KEYWORD as _NOT_KEYWORD,
)
from ._options import (
    _UNRENDERED as _UNRENDERED,
)
from ._options import (
    CheckOptions as CheckOptions,
)
from ._options import (
    _Checking as _Checking,
)
from ._orchestration import (
    _MACHINE_REFUSAL as _MACHINE_REFUSAL,
)
from ._orchestration import (
    _NO_GRAD_FN as _NO_GRAD_FN,
)
from ._orchestration import (
    _check_call as _check_call,
)
from ._orchestration import (
    _check_once as _check_once,
)
from ._orchestration import (
    _cpu_has_kernels as _cpu_has_kernels,
)
from ._orchestration import (
    _environment_independent as _environment_independent,
)
from ._orchestration import (
    _refused_alike as _refused_alike,
)
from ._orchestration import (
    _same_on_every_cpu as _same_on_every_cpu,
)
from ._orchestration import (
    _wants_gradients as _wants_gradients,
)
from ._running import (
    _RANDOM_DATA_SEED as _RANDOM_DATA_SEED,
)
from ._running import (
    _SEED as _SEED,
)
from ._running import (
    _called as _called,
)
from ._running import (
    _compile as _compile,
)
from ._running import (
    _DrawsRandom as _DrawsRandom,
)
from ._running import (
    _Run as _Run,
)
from ._running import (
    _seeded as _seeded,
)
from ._running import (
    _user_gradients as _user_gradients,
)
from ._tolerances import (
    _DEFAULT_TOLERANCES as _DEFAULT_TOLERANCES,
)
from ._tolerances import (
    assert_close_for_dtype as assert_close_for_dtype,
)
from ._tolerances import (
    tolerant as tolerant,
)
from ._trace import (
    _input_name as _input_name,
)
from ._trace import (
    _output_leaves as _output_leaves,
)
from ._trace import (
    _TensorCall as _TensorCall,
)
from ._trace import (
    _traced_mutation as _traced_mutation,
)
from ._trace import (
    _TraceRecord as _TraceRecord,
)

__all__ = ["CheckOptions", "assert_close_equal_nan", "assert_raises_regex", "mode_name"]
