"""The torch suite's numerical tests on one device: allocation, matmul per dtype, autograd of an
MLP and a conv net against float64 CPU copies, gradcheck, a cuDNN convolution and an AMP step.

Each test is ``fn(t, device)``: it fills ``t`` (a :class:`_protocol.TestCase`: message,
metrics) and raises ``_protocol.Fail``/``Skip``. ``device`` is ``"cuda:N"`` on a GPU and
``"cpu"`` in CI, where the same comparison code runs against the same float64 references.
"""

from __future__ import annotations

import contextlib
import copy
import math
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

try:
    from . import _compare, _protocol
except ImportError:  # run by path: the suite's folder is sys.path[0]
    import _compare  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

import torch

Test = _protocol.TestCase
MiB = 1 << 20


def is_cuda(device: str) -> bool:
    return torch.device(device).type == "cuda"


def capability(device: str) -> Tuple[int, int]:
    """The device's compute capability; (0, 0) for the CPU."""
    return torch.cuda.get_device_capability(device) if is_cuda(device) else (0, 0)


@contextlib.contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """TF32 for cuBLAS matmuls and cuDNN convolutions on or off, restored afterwards."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul
        torch.backends.cudnn.allow_tf32 = cudnn


def sync(device: str) -> None:
    if is_cuda(device):
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- allocation


def allocation(t: Test, device: str, nbytes: int = 64 * MiB) -> None:
    """Allocate, fill, reduce and read back; report free/total memory."""
    n = nbytes // 4
    x = torch.empty(n, dtype=torch.float32, device=device)
    x.fill_(1.5)
    total = float(x.sum(dtype=torch.float64).item())
    if total != 1.5 * n:
        raise _protocol.Fail(f"filled {nbytes // MiB} MiB with 1.5 and summed {total!r}, expected {1.5 * n!r}")
    t.metrics["allocated_bytes"] = nbytes
    if is_cuda(device):
        free, whole = torch.cuda.mem_get_info(device)
        t.metrics.update(free_bytes=free, total_bytes=whole)
    t.message = f"allocated {nbytes // MiB} MiB, filled and summed it back exactly"
    del x


# --------------------------------------------------------------------------- matmul

DTYPES: Dict[str, torch.dtype] = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                                  "bf16": torch.bfloat16}


def matmul_support(device: str, kind: str) -> Optional[str]:
    """Why the device cannot run ``kind`` (None: it can). TF32 needs sm_80+, bf16 sm_80+
    (torch emulates it on older GPUs, which is not what we want to test), fp16 sm_53+."""
    if not is_cuda(device):
        return None
    major, minor = capability(device)
    need = {"tf32": (8, 0), "bf16": (8, 0), "fp16": (5, 3)}.get(kind)
    if need and (major, minor) < need:
        return f"{kind} matmul needs compute capability {need[0]}.{need[1]}+, this GPU is {major}.{minor}"
    return None


def matmul(t: Test, device: str, kind: str, n: int = 256, k: int = _compare.MATMUL_K) -> None:
    """``C = A @ B`` in ``kind`` on the device, against float64 on the CPU of the same (rounded)
    inputs; tolerance ``_compare.MATMUL_TOL[kind]`` on max |C - R| / (|A| @ |B|)."""
    why = matmul_support(device, kind)
    if why:
        raise _protocol.Skip(why)
    gen = torch.Generator().manual_seed(1234)
    dtype = DTYPES[kind]
    a = torch.randn(n, k, generator=gen).to(dtype)
    b = torch.randn(k, n, generator=gen).to(dtype)
    with tf32(kind == "tf32"):
        c = (a.to(device) @ b.to(device)).cpu()
    if c.dtype != dtype:
        raise _protocol.Fail(f"the product came back as {c.dtype}, not {dtype}")
    err = _compare.matmul_error(c, a, b)
    tol = _compare.MATMUL_TOL[kind]
    t.metrics.update(max_rel_error=err, tolerance=tol)
    ok, said = _compare.verdict(f"{n}x{k} @ {k}x{n} {kind} vs float64 CPU, max |C-R|/(|A||B|)", err, tol)
    if kind == "fp32" and not ok and _compare.within(err, _compare.MATMUL_TOL["tf32"]):
        said += " (TF32-sized: is TF32 forced for fp32, e.g. by NVIDIA_TF32_OVERRIDE or torch settings?)"
    if kind == "tf32":
        t.metrics["tf32_engaged"] = err > _compare.MATMUL_TOL["fp32"]
    if not ok:
        raise _protocol.Fail(said)
    t.message = said


# --------------------------------------------------------------------------- autograd


def make_mlp(gen: torch.Generator) -> Tuple[torch.nn.Module, torch.Tensor]:
    with torch.random.fork_rng(devices=[]):  # seeded weights, the global generator left alone
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                    torch.nn.GELU(), torch.nn.Linear(64, 10))
    return model.double(), torch.randn(16, 32, generator=gen, dtype=torch.float64)


def make_convnet(gen: torch.Generator) -> Tuple[torch.nn.Module, torch.Tensor]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Tanh(), torch.nn.Conv2d(8, 16, 3, stride=2, padding=1),
            torch.nn.GELU(), torch.nn.Flatten(), torch.nn.Linear(16 * 8 * 8, 10))
    return model.double(), torch.randn(4, 3, 16, 16, generator=gen, dtype=torch.float64)


def forward_backward(model: torch.nn.Module, x: torch.Tensor, w: torch.Tensor) -> Dict[str, torch.Tensor]:
    """Output, input gradient and parameter gradients of ``sum(w * model(x))``."""
    model.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_(True)
    out = model(x)
    torch.autograd.backward((out * w.to(out.dtype)).sum())
    nan = float("nan")  # a gradient that never came: fails every comparison
    grads: Dict[str, torch.Tensor] = {"output": out.detach().clone(),
                                      "grad_input": x.grad.clone() if x.grad is not None else torch.full_like(x, nan)}
    for name, p in model.named_parameters():
        grads[f"grad_{name}"] = p.grad.detach().clone() if p.grad is not None else torch.full_like(p, nan)
    return grads


def autograd(t: Test, device: str, which: str) -> None:
    """Forward and backward of a small ``which`` ("mlp" or "conv") net in fp32 on the device
    (TF32 off), against the same weights and inputs in float64 on the CPU; normwise relative
    error of the output and of every gradient <= ``_compare.GRAD_TOL[which]``."""
    gen = torch.Generator().manual_seed(42 if which == "mlp" else 43)
    ref_model, x = (make_mlp if which == "mlp" else make_convnet)(gen)
    dev_model = copy.deepcopy(ref_model).float().to(device)
    w = torch.randn(x.shape[0], 10, generator=gen, dtype=torch.float64)
    ref = forward_backward(ref_model, x, w)
    with tf32(False):
        got = forward_backward(dev_model, x.float().to(device), w.float().to(device))
    sync(device)
    errors = {name: _compare.rel_error(got[name], ref[name]) for name in ref}
    name, err = _compare.worst(errors)
    tol = _compare.GRAD_TOL[which]
    t.metrics.update(max_rel_error=err, tolerance=tol, tensors=len(errors))
    params = sum(p.numel() for p in ref_model.parameters())
    ok, said = _compare.verdict(f"{which} ({params} parameters) fp32 on {device} vs float64 CPU, "
                                f"{len(errors)} tensors, worst {name} ||g-r||/||r||", err, tol)
    if not ok:
        raise _protocol.Fail(said)
    t.message = said


def gradcheck(t: Test, device: str) -> None:
    """``torch.autograd.gradcheck`` in float64 on the device: analytic vs numerical Jacobian of
    ``sin(tanh(x @ w)) * x[:, :3]`` (eps 1e-6, atol 1e-5, rtol 1e-3: torch's defaults)."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 5, generator=gen, dtype=torch.float64).to(device).requires_grad_(True)
    w = torch.randn(5, 3, generator=gen, dtype=torch.float64).to(device).requires_grad_(True)

    def fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sin(torch.tanh(a @ b)) * a[:, :3]

    ok = torch.autograd.gradcheck(fn, (x, w), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False)
    if not ok:
        try:
            torch.autograd.gradcheck(fn, (x, w), eps=1e-6, atol=1e-5, rtol=1e-3)
        except Exception as exc:  # the mismatch report
            raise _protocol.Fail(f"gradcheck float64 on {device} failed: {_protocol.one_line(str(exc), 300)}")
        raise _protocol.Fail(f"gradcheck float64 on {device} failed")
    t.message = f"gradcheck float64 on {device}: analytic and numerical Jacobians agree (atol 1e-5, rtol 1e-3)"


# --------------------------------------------------------------------------- cuDNN


def cudnn_conv(t: Test, device: str, details: Optional[Dict[str, str]] = None) -> None:
    """cuDNN available, enabled, its version; a conv2d forward and backward that cuDNN accepts,
    against float64 on the CPU (tolerance GRAD_TOL["conv"], TF32 off). On the CPU the
    convolution is compared all the same, without the cuDNN part."""
    said = ""
    cudnn: Any = torch.backends.cudnn  # untyped module functions
    if is_cuda(device):
        if not cudnn.is_available():
            raise _protocol.Skip(f"torch {torch.__version__} was built without cuDNN")
        version = cudnn.version()
        t.metrics["cudnn_version"] = version or 0
        if details is not None:
            details["cudnn.version"] = str(version)
        if not torch.backends.cudnn.enabled:
            raise _protocol.Fail("cuDNN is disabled (torch.backends.cudnn.enabled is False)")
        said = f"cuDNN {version} enabled; "
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(8, 16, 32, 32, generator=gen, dtype=torch.float64)
    wt = torch.randn(32, 16, 3, 3, generator=gen, dtype=torch.float64) / 12.0
    up = torch.randn(8, 32, 32, 32, generator=gen, dtype=torch.float64)
    ref = _conv(x, wt, up)
    xd = x.float().to(device)
    if is_cuda(device) and not cudnn.is_acceptable(xd):
        raise _protocol.Fail(f"cuDNN does not accept a contiguous fp32 {tuple(xd.shape)} tensor on {device}")
    with tf32(False):
        got = _conv(xd, wt.float().to(device), up.float().to(device))
    errors = {k: _compare.rel_error(got[k], ref[k]) for k in ref}
    name, err = _compare.worst(errors)
    tol = _compare.GRAD_TOL["conv"]
    t.metrics.update(max_rel_error=err, tolerance=tol)
    ok, what = _compare.verdict(f"conv2d 16->32 3x3 fwd+bwd fp32 vs float64 CPU, worst {name}", err, tol)
    if not ok:
        raise _protocol.Fail(said + what)
    t.message = said + what


def _conv(x: torch.Tensor, w: torch.Tensor, up: torch.Tensor) -> Dict[str, torch.Tensor]:
    x = x.detach().clone().requires_grad_(True)
    w = w.detach().clone().requires_grad_(True)
    out = torch.nn.functional.conv2d(x, w, padding=1)
    torch.autograd.backward(out, up)
    assert x.grad is not None and w.grad is not None
    return {"output": out.detach(), "grad_input": x.grad.detach(), "grad_weight": w.grad.detach()}


# --------------------------------------------------------------------------- AMP


class PlainSGD:
    """The part of an optimizer GradScaler uses (``param_groups``, ``step``): torch.optim's
    constructor imports torch._dynamo, seconds the quick tier cannot spare."""

    def __init__(self, params: Any, lr: float) -> None:
        self.param_groups: List[Dict[str, Any]] = [{"params": list(params), "lr": lr}]

    def step(self) -> None:
        with torch.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])


def _grad_scaler(device_type: str, init_scale: float) -> Any:
    amp: Any = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        return amp.GradScaler(device_type, init_scale=init_scale)
    return torch.cuda.amp.GradScaler(init_scale=init_scale)  # torch < 2.3


def amp_step(t: Test, device: str) -> None:
    """One optimizer step under autocast (fp16 on a GPU, bf16 on the CPU) with a GradScaler:
    the forward really ran in the low precision, loss finite, the step was taken (scale kept)
    and the parameters moved."""
    dev_type = torch.device(device).type
    low = torch.float16 if dev_type == "cuda" else torch.bfloat16
    gen = torch.Generator().manual_seed(5)
    model, _ = make_mlp(gen)
    model = model.float().to(device)
    x = torch.randn(32, 32, generator=gen).to(device)
    y = torch.randint(0, 10, (32,), generator=gen).to(device)
    opt = PlainSGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    scaler = _grad_scaler(dev_type, 1024.0)
    with torch.autocast(device_type=dev_type, dtype=low):
        out = model(x)
    loss = torch.nn.functional.cross_entropy(out.float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before))
    value, scale = float(loss.item()), float(scaler.get_scale())
    t.metrics.update(loss=value, scale=scale, max_param_change=moved)
    if out.dtype != low:
        raise _protocol.Fail(f"autocast({low}) produced {out.dtype} logits: autocast did not engage")
    problems = [msg for bad, msg in ((not math.isfinite(value), f"loss {value!r} is not finite"),
                                     (scale != 1024.0, f"the scaler skipped the step (scale {scale:g})"),
                                     (not moved > 0, "no parameter changed")) if bad]
    if problems:
        raise _protocol.Fail("; ".join(problems))
    t.message = (f"autocast {str(low).replace('torch.', '')} + GradScaler step on {device}: loss {value:.4f}, "
                 f"scale {scale:g}, parameters moved up to {moved:.2e}")


NUMERIC_TESTS: Tuple[Tuple[str, Callable[..., None], Tuple[Any, ...]], ...] = (
    ("allocation", allocation, ()),
    ("matmul_fp32", matmul, ("fp32",)),
    ("matmul_tf32", matmul, ("tf32",)),
    ("matmul_fp16", matmul, ("fp16",)),
    ("matmul_bf16", matmul, ("bf16",)),
    ("autograd_mlp", autograd, ("mlp",)),
    ("autograd_conv", autograd, ("conv",)),
    ("amp", amp_step, ()),
)
"""(test name, function, extra arguments after ``(t, device)``), in the order they run; the
cuDNN test takes the details dict and runs after these."""

STANDARD_TESTS: Tuple[Tuple[str, Callable[..., None], Tuple[Any, ...]], ...] = (
    ("gradcheck", gradcheck, ()),
)
"""Added by the standard tier. gradcheck took 3.5 s of the quick tier's 10 s on an H100 (issue 26:
hundreds of tiny float64 kernels); the quick tier's autograd tests already compare GPU gradients
with a CPU reference."""
