"""Lab 99-02, given: the device side of an engine step, the same code on a GPU and on a CPU.

A GPU runs what the host asks for later than the host asks: a kernel launch, a copy from pinned host
memory, a CUDA-graph replay all return at once and run in order on a stream. That is what lets the
host prepare step N+1 while the GPU computes step N, and it is also where an engine goes wrong: a
host buffer rewritten before the copy that reads it has run, a token read before the step that
samples it has finished. This module gives the engine four things with one meaning on both devices:

- ``Stream``: where device work goes, in order. ``launch(fn, *args)`` binds the arguments now and
  runs ``fn`` on the device's timeline. On a GPU, ``fn`` only enqueues kernels (it runs at once and
  returns). On a CPU the stream *is* a queue, with two timings a real GPU may show:
  ``"lazy"`` (the work runs as late as possible: only when the host waits for an event recorded after
  it) and ``"eager"`` (as early as possible: at the launch). Code that is right on a GPU is right
  under both; code that reads or writes host memory at the wrong moment fails under one of them.
- ``Event``: a point on the stream; ``synchronize()`` blocks the host until the work before it has
  run (on a CPU: runs it).
- The stream's ``log``: what the host asked of the device, in order, on both devices: each launch and
  each wait, with its position on the stream. It is how the tests see the order of an engine's steps
  (step N+1 launched before the host waits for step N) under either timing, and count its waits.
- ``HostDeviceBuffer``: a host buffer (pinned on CUDA, with a numpy view) and its device twin;
  ``copy_to_device(n)`` launches one copy of the first ``n`` rows without waiting. The copy reads
  the host buffer when it runs, not when it is launched, as a DMA from pinned memory does.
- ``StepGraph``: a captured piece of device work replayed with one launch. On CUDA a
  ``torch.cuda.CUDAGraph``; on a CPU the function itself, launched on the stream. Either way the
  replay reads the static buffers it was captured with, at the time it runs, and nothing else: the
  host values baked into it at capture (sizes, counts) never change.

vLLM does the same with ``torch.cuda`` streams and events (the async output copy and the input-copy
event, ``prepare_inputs_event``, of ``vllm/v1/worker/gpu_model_runner.py``, and ``CpuGpuBuffer`` in
``vllm/v1/utils.py``) and with ``torch.cuda.CUDAGraph`` (``vllm/compilation/cuda_graph.py``).
"""

from __future__ import annotations

import time
from collections import deque

from labkit import triton_env

# Triton must learn whether to interpret before anything imports it (torch's and transformers' imports may).
triton_env.select_backend()

import torch  # noqa: E402

CPU_TIMINGS = ("lazy", "eager")


class Stream:
    """The device's work queue. ``device``: a torch device; ``cpu_timing``: ``"lazy"`` or ``"eager"``
    (ignored on CUDA, where the GPU decides).

    Counters for the benchmark and the tests: ``num_launched`` (launches so far), ``num_waits`` (waits
    so far), ``wait_s`` (host seconds spent in ``Event.synchronize``), and on a CPU ``num_pending``
    (launched, not yet run). ``log``: ``("launch", p)`` for the launch that took position ``p`` (1, 2,
    ...), ``("wait", p)`` for a wait until the work up to position ``p`` has run (``Event.synchronize``,
    ``synchronize``), in the order the host made them: ``num_launched + num_waits`` entries."""

    def __init__(self, device, cpu_timing: str = "lazy") -> None:
        if cpu_timing not in CPU_TIMINGS:
            raise ValueError(f"cpu_timing must be one of {CPU_TIMINGS}, got {cpu_timing!r}")
        self.device = torch.device(device)
        self.is_cuda = self.device.type == "cuda"
        self.cpu_timing = cpu_timing
        self._queue: deque = deque()
        self.num_launched = 0
        self.num_waits = 0
        self._num_run = 0
        self.wait_s = 0.0
        self.log: list[tuple[str, int]] = []

    def launch(self, fn, *args) -> None:
        """Put ``fn(*args)`` on the stream: the arguments are taken now, the work runs in order."""
        self.num_launched += 1
        self.log.append(("launch", self.num_launched))
        if self.is_cuda or self.cpu_timing == "eager":
            with torch.no_grad():  # device work never builds an autograd graph, whenever it runs
                fn(*args)
            self._num_run += 1
        else:
            self._queue.append((fn, args))

    def record(self) -> Event:
        """An event after everything launched so far."""
        return Event(self)

    @property
    def num_pending(self) -> int:
        """Launched work that has not run yet (always 0 on CUDA, where the host cannot see it)."""
        return len(self._queue)

    def _run_until(self, position: int) -> None:
        while self._num_run < position:
            fn, args = self._queue.popleft()
            with torch.no_grad():
                fn(*args)
            self._num_run += 1

    def synchronize(self) -> None:
        """Wait for everything launched so far."""
        self.record().synchronize()


class Event:
    """A point on a ``Stream``: the work launched before it."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.position = stream.num_launched
        self._cuda = None
        if stream.is_cuda:
            self._cuda = torch.cuda.Event()
            self._cuda.record()

    def synchronize(self) -> None:
        """Block the host until the work before this event has run."""
        self.stream.num_waits += 1
        self.stream.log.append(("wait", self.position))
        start = time.perf_counter()
        if self._cuda is not None:
            self._cuda.synchronize()
        else:
            self.stream._run_until(self.position)
        self.stream.wait_s += time.perf_counter() - start

    def query(self) -> bool:
        """Whether that work has run, without waiting."""
        if self._cuda is not None:
            return self._cuda.query()
        return self.stream._num_run >= self.position


def _copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    dst.copy_(src, non_blocking=True)


class HostDeviceBuffer:
    """A host buffer and its device twin, both ``shape`` of ``dtype``, zero at first.

    ``host`` is a torch tensor, pinned on CUDA (a copy from pageable memory would make the host wait
    for it); ``np`` is a numpy view of it, where the engine writes. ``device`` lives on the stream's
    device (on a CPU, a separate tensor: the copy still has to run before the device sees anything).
    """

    def __init__(self, stream: Stream, shape, dtype: torch.dtype) -> None:
        self.stream = stream
        self.host = torch.zeros(shape, dtype=dtype, pin_memory=stream.is_cuda)
        self.np = self.host.numpy()
        self.device = torch.zeros(shape, dtype=dtype, device=stream.device)

    def copy_to_device(self, n: int) -> None:
        """Launch the copy of rows ``[0, n)`` to the device, without waiting for it."""
        if n > 0:
            self.stream.launch(_copy, self.device[:n], self.host[:n])


class StepGraph:
    """``fn()`` captured once, replayed with one launch.

    ``fn`` takes no argument: it reads and writes static device tensors only, and every host value it
    uses (a size, a count) is fixed when the graph is built. On CUDA it is warmed up on a side stream
    (Triton compiles its kernels there), then captured into ``pool``; on a CPU it is kept as is, and
    ``replay`` launches it on the stream."""

    def __init__(self, stream: Stream, fn, pool=None) -> None:
        self.stream = stream
        self.fn = fn
        self.graph = None
        if stream.is_cuda:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.no_grad():
                for _ in range(2):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, pool=pool), torch.no_grad():
                fn()

    def replay(self) -> None:
        if self.graph is not None:
            self.stream.num_launched += 1
            self.stream.log.append(("launch", self.stream.num_launched))
            self.graph.replay()
        else:
            self.stream.launch(self.fn)


def graph_pool(stream: Stream):
    """One memory pool for every graph of a runner (CUDA), or None (CPU)."""
    return torch.cuda.graph_pool_handle() if stream.is_cuda else None
