"""Call patterns, public: how the check calls the function it checks and uses its outputs.

A call pattern changes how eager and the compiled function are called (``no_grad``, explicit
``grad_outputs``, ``out=`` tensors...) or how their outputs are used (mutated after return,
differentiated one by one). Eager and compiled go through the same pattern object, so whatever it
does to one it does to the other. What a pattern must provide:

- a :class:`CallPattern`: :meth:`CallPattern.call` calls ``fn`` (eager or compiled) on its
  inputs and returns what the call made (:class:`Called`); :meth:`CallPattern.gradients` takes
  the gradients compared from it. A step beside the call that may raise (``out[0].mul_(2)``) is
  recorded with :func:`attempt`: where eager and compiled differ in which one raises, that is a
  finding. An error PyTorch documents as not supported for every op is :class:`Unsupported`
  (not applicable, not a finding). What it sees beside the outputs (the RNG state after the
  call, what a hook was called with) it adds to :attr:`Called.observed` (:class:`Observed`):
  compared eager vs compiled. A pattern that changes what is compiled (a body that applies
  ``torch.func.grad``, or checkpoints the call) has a method named :data:`BODY`;
- to be checked by name (``run_check(..., pattern=NAME)``): :func:`register` it;
- to derive samples from each sample as the patterns users name do (``--optests-transforms``):
  a :class:`Transform` row, whose ``derive(sample, draws, seed)`` maps an index to the
  :class:`Made` sample (usually the :class:`Sample`'s inputs copied as they are:
  ``Made(sample.build(), description)``) and whose ``pattern(index)`` is the pattern that checks
  it; declared by name in ``optests._key.DERIVATIONS`` (``"NAME": "MODULE:ATTRIBUTE"``), which
  gives the derived samples' ids, results and registry scope.

The built-in patterns (``optests/_patterns/``, one module each) are written against this module.
"""

from __future__ import annotations

from ._patterns import DEFAULT_PATTERN, get_pattern, register
from ._patterns.base import BODY, Called, CallPattern, DependsOnCpu, Observed, Refusal, Unsupported, attempt
from ._transforms import Made, Origin, Sample, Transform

__all__ = [
    "BODY",
    "DEFAULT_PATTERN",
    "CallPattern",
    "Called",
    "DependsOnCpu",
    "Made",
    "Observed",
    "Origin",
    "Refusal",
    "Sample",
    "Transform",
    "Unsupported",
    "attempt",
    "get_pattern",
    "register",
]
