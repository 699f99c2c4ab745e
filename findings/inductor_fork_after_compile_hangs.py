"""A process that compiled with inductor (C++ code, so a cache miss: here an empty cache folder)
forks; the child's first inductor compile hangs forever. Inductor compiles C++ in a thread pool
(`AsyncCompile.pool()`, a `ThreadPoolExecutor` cached by `functools.lru_cache`); the child
inherits the pool without its threads, submits to it and waits. torch's at-fork handler
(`torch._inductor.async_compile.after_fork`) resets the process pool but not this one: clearing
it in the child (`AsyncCompile.pool.cache_clear()`) makes the same compile work. Any forked worker
(a `DataLoader` worker, `multiprocessing` with fork) that compiles after its parent did is hit.

Found by optests itself: its preflight of a backend runs a trivial compile in a forked child,
which hung where the tests had compiled with inductor in the parent first (optests now clears
the pool in its children: `optests/_runner.py`).
Run: python findings/inductor_fork_after_compile_hangs.py
"""

import os
import signal
import sys
import tempfile

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # an empty cache: the parent compiles C++

import torch
from torch._inductor.async_compile import AsyncCompile

print("torch", torch.__version__)
torch.compile(lambda x: x.sin() + 1, backend="inductor")(torch.randn(3))
print("the parent compiled with inductor")

for clear in (False, True):
    pid = os.fork()
    if pid == 0:  # the child: compile another function, or give up after 60 s
        signal.alarm(60)
        if clear:
            AsyncCompile.pool.cache_clear()
        torch._dynamo.reset()
        torch.compile(lambda x: x.cos() * 2, backend="inductor")(torch.randn(3))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    done = "compiled" if status == 0 else "hung (killed after 60 s)" if os.WIFSIGNALED(status) else f"exit {status}"
    print(f"a forked child{', its pool cleared,' if clear else ''} compiling with inductor: {done}")
sys.stdout.flush()
