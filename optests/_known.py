"""The PyTorch bugs optests knows, one declaration each (torch-free): what a failure must show to
be an instance of one (:class:`KnownBug`; :mod:`optests._causes` matches failures to them), its
standalone repro in ``findings/``, the upstream issue, and the torch releases it was checked on.

Each entry's ``name`` is the stem of its repro (``findings/NAME.py``). The registry's reasons that
name a finding, the ``findings/`` directory and this catalog are checked against each other by
``tests/test_known.py``. Bump :data:`CATALOG_VERSION` when an entry is added, removed or matches
differently: results record the names, and the version says which catalog named them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ._findings import Stage


@dataclass(frozen=True)
class KnownBug:
    """One PyTorch bug that optests knows, with what a failure must show to be an instance of it.

    Every condition given must hold; one left at its default holds for any failure.
    """

    #: The stem of its repro in ``findings/`` (``findings/NAME.py``): the cause's name.
    name: str
    #: What goes wrong, one line (what ``optests report`` titles it with).
    what: str
    #: A regular expression searched in the failure's message (without its bracketed context).
    message: str
    #: The stages it fails at.
    stages: frozenset[Stage]
    #: The transform and pattern families it shows under (``""``: the sample as made); None: any.
    families: frozenset[str] | None = None
    #: The op ids it is known for; None: any op (a bug of the compile path, not of one op).
    ops: frozenset[str] | None = None
    #: The backends it shows under; None: any.
    backends: frozenset[str] | None = None
    #: The torch releases (``major.minor``) its repro was run on and reproduced.
    releases: tuple[str, ...] = ()
    #: The first release where it no longer reproduces; "" if none we ran.
    fixed_in: str = ""
    #: The upstream issue or pull request (``pytorch/pytorch#181606``); "" if none is filed.
    upstream: str = ""

    @property
    def finding(self) -> str:
        return f"findings/{self.name}.py"

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.message, re.DOTALL)


#: The catalog's version (results and reports name it beside a known cause).
CATALOG_VERSION = 1

_RELEASES = ("2.13", "2.15")

#: Every known bug; the first that matches a failure is its cause (put the narrower first).
KNOWN: tuple[KnownBug, ...] = (
    KnownBug(
        name="aot_double_backward_silently_dropped",
        what="a double backward through a compiled function returns None for the second-order gradient, silently",
        message=r"\(second order\)=None, but expected",
        stages=frozenset({Stage.BACKWARD}),
        releases=_RELEASES,
        upstream="pytorch/pytorch#181606",
    ),
    KnownBug(
        name="max_unpool2d_channels_last_strides",
        what="max_unpool2d's fake kernel predicts a contiguous output for a channels_last input",
        message=r"^traced out\.stride\(\)=",
        stages=frozenset({Stage.METADATA}),
        ops=frozenset({"nn.functional.max_unpool2d", "nn.functional.max_unpool2d.grad"}),
        releases=("2.13",),
        fixed_in="2.15",
    ),
)
