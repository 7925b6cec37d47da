"""The jax smoke suite: does jax see the GPUs, and do ``jit`` and ``grad`` compute on them what
they compute on the CPU backend?

Before jax is imported, the child sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` and
``XLA_PYTHON_CLIENT_ALLOCATOR=platform``: jax then allocates what it uses and frees it, instead of
taking 75 % of every GPU (which would starve the other suites and the user's own processes). The
user's values are reported in ``details`` when they differed.

Tests:

- ``devices``: the CUDA backend initialises and lists GPUs (names in ``gpu.<i>.name``). When it
  fails to initialise, jax logs "CUDA backend failed to initialize: <why>" and quietly falls back
  to the CPU; the suite fails with that exact message (a missing cuDNN, a CUDA runtime older than
  the one jaxlib was built against, ...). No visible GPU or no driver is a skip (a failure with
  ``--expect-gpu``); a CPU-only jax (no CUDA plugin) or ``JAX_PLATFORMS`` without cuda is a skip
  either way, like torch's CPU-only builds.
- ``jit_forward`` per GPU: the loss of a small MLP (``_frameworks.MLP_SHAPES``), jit-compiled,
  on the GPU against the CPU backend; ``jit_grad`` per GPU: ``jit(grad(loss))`` likewise, for
  each parameter. Normwise relative error <= ``_frameworks.GRAD_TOL`` (1e-4) with matmuls at
  ``Precision.HIGHEST`` (true fp32, no TF32): see there for why. The result must also live on
  the GPU it was put on.

``framework`` is "jax <version>"; ``details`` hold jaxlib's and the CUDA plugin's versions, the
CUDA/cuDNN versions jaxlib found and was built against, and the CUDA libraries the process
loaded. Runs as a script (``python jax_suite.py --tier quick [--expect-gpu]``); ``--device cpu``
(hidden) runs the comparisons with the CPU backend standing in for the GPU, for tests.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Dict, List, Mapping, MutableMapping, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites.jax_suite (tests)
    from . import _frameworks as fw
    from . import _protocol
except ImportError:  # run by path: this folder is sys.path[0]
    import _frameworks as fw  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

SUITE = "jax"

ALLOCATOR_ENV: Dict[str, str] = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",  # allocate on demand, not 75 % of the GPU up front
    "XLA_PYTHON_CLIENT_ALLOCATOR": "platform",  # cudaMalloc/cudaFree per buffer: nothing kept
}
XLA_BRIDGE_LOGGER = "jax._src.xla_bridge"  # where "CUDA backend failed to initialize" is logged
FAILED_TO_INIT = "CUDA backend failed to initialize"
CPU_ONLY_HINT = "CUDA-enabled jaxlib is not installed"
CUDA_PACKAGES = r"jax-cuda\d+-(plugin|pjrt)|jaxlib|jax"

# --------------------------------------------------------------------------- pure parts


def set_allocator_env(env: MutableMapping[str, str]) -> Dict[str, str]:
    """Set :data:`ALLOCATOR_ENV` in ``env``; return details: the values used, and the user's
    where they differed (``env.<NAME>.user``)."""
    details: Dict[str, str] = {}
    for name, value in ALLOCATOR_ENV.items():
        before = env.get(name)
        if before is not None and before != value:
            details[f"env.{name}.user"] = before
        env[name] = value
        details[f"env.{name}"] = value
    return details


def platforms_setting(value: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """What to do with the user's ``JAX_PLATFORMS``: (new value or None to leave it, or a reason
    to skip). A list without cuda/gpu hides the GPUs (skip with that reason); a list with cuda
    but not cpu gets ``cpu`` appended, since the comparison needs the CPU backend."""
    if not value or not value.strip():
        return None, None
    parts = [p.strip().lower() for p in value.split(",") if p.strip()]
    if not any(p in ("cuda", "gpu") for p in parts):
        return None, f"JAX_PLATFORMS={value!r} leaves out the CUDA backend"
    if "cpu" not in parts:
        return value.strip() + ",cpu", None
    return None, None


def backend_failure(logged: Sequence[str], backend_errors: Mapping[str, str], raised: Sequence[str]) -> Optional[str]:
    """The message saying why jax's CUDA backend did not initialise, exactly as jax put it: its
    "CUDA backend failed to initialize: ..." warning when logged, else built from
    ``xla_bridge._backend_errors`` the same way, else the error ``jax.devices("cuda")`` raised
    when it says the backend failed ("Unable to initialize backend 'cuda': ..."). None when
    nothing says the backend failed (no CUDA plugin at all, or no GPU)."""
    for message in logged:
        if FAILED_TO_INIT in message:
            return message.strip()
    for key in ("cuda", "gpu"):
        err = backend_errors.get(key)
        if err:
            return f"{FAILED_TO_INIT}: {err}."
    for text in raised:
        low = text.lower()
        if "initialize backend" in low or "failed to initialize" in low:
            return text.strip()
    return None


def no_cuda_reason(logged: Sequence[str], plugins: Mapping[str, str], raised: Sequence[str]) -> Tuple[bool, str]:
    """Why jax has no GPU when nothing says the backend failed: (CPU-only, reason). A CPU-only
    install (no CUDA plugin; jax's own "An NVIDIA GPU may be present ..." warning quoted when it
    gave one) is a build without CUDA, skipped like torch's CPU builds; otherwise no GPU is
    visible."""
    hint = next((m.strip() for m in logged if CPU_ONLY_HINT in m), None)
    if not any(name.startswith("jax-cuda") for name in plugins) and not any("+cuda" in v for v in plugins.values()):
        reason = "jax has no CUDA backend: no jax-cuda plugin is installed (a CPU-only jax)"
        return True, (f"{reason}; jax said: {hint}" if hint else reason)
    if hint:
        return True, f"jax has no CUDA backend: {hint}"
    said = f": {raised[0]}" if raised else ""
    return False, f"no GPU visible to jax{said}{fw.visible_devices_note()}"


class _Remember(logging.Handler):
    """Keeps the messages of jax's backend logger (and still shows them on stderr)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:
            return
        self.messages.append(message)
        if record.levelno >= logging.WARNING:
            try:
                sys.stderr.write(f"{record.levelname}:{record.name}:{message}\n")
            except Exception:
                pass


# --------------------------------------------------------------------------- the workload


def mlp_loss(jax: Any) -> Any:
    """The MLP's loss as a jax function of (params tuple, x, y), matmuls at HIGHEST precision."""
    jnp = jax.numpy
    highest = jax.lax.Precision.HIGHEST

    def loss(params: Any, x: Any, y: Any) -> Any:
        w1, b1, w2, b2 = params
        h = jnp.tanh(jnp.dot(x, w1, precision=highest) + b1)
        out = jnp.dot(h, w2, precision=highest) + b2
        return jnp.mean((out - y) ** 2)

    return loss


def device_of(array: Any) -> Any:
    """The one device an array lives on (jax 0.4.1+ ``devices()``, older ``device()``)."""
    if hasattr(array, "devices"):
        devices = array.devices()
        return next(iter(devices)) if len(devices) == 1 else devices
    dev = getattr(array, "device")
    return dev() if callable(dev) else dev


def run_mlp(jax: Any, device: Any, inputs: Mapping[str, Any], grad: bool) -> Tuple[Dict[str, List[float]], Any]:
    """The jitted MLP's loss (``{"loss": [value]}``), or with ``grad`` its ``jit(grad)`` by
    parameter name, with every input committed to ``device`` (so the computation runs there);
    and the device the result lives on."""
    import numpy as np  # type: ignore[import-not-found,unused-ignore]

    put = {k: jax.device_put(np.asarray(v, dtype=np.float32), device) for k, v in inputs.items()}
    params = tuple(put[k] for k in fw.MLP_PARAMS)
    loss = mlp_loss(jax)
    if not grad:
        value = jax.jit(loss)(params, put["x"], put["y"])
        value.block_until_ready()
        return {"loss": fw.flatten(np.asarray(value))}, device_of(value)
    grads = jax.jit(jax.grad(loss))(params, put["x"], put["y"])
    grads[0].block_until_ready()
    return {k: fw.flatten(np.asarray(g)) for k, g in zip(fw.MLP_PARAMS, grads)}, device_of(grads[0])


def _same_device(seen: Any, device: Any) -> bool:
    try:
        return bool(seen == device)
    except Exception:
        return str(seen) == str(device)


TESTS = (("jit_forward", False, "jit MLP loss"), ("jit_grad", True, "jit(grad) of the MLP"))


def mlp_tests(rec: _protocol.Recorder, jax: Any, targets: Sequence[Tuple[Optional[int], Any]], cpu: Any) -> None:
    """``jit_forward`` and ``jit_grad`` on each target device against the CPU backend."""
    inputs = fw.mlp_inputs()
    refs: Dict[str, Dict[str, List[float]]] = {}
    ref_errors: Dict[str, str] = {}
    for name, grad, _ in TESTS:
        try:
            refs[name] = run_mlp(jax, cpu, inputs, grad)[0]
        except Exception as exc:
            ref_errors[name] = f"the CPU reference raised {_protocol.format_error(exc)}"
    for gpu, device in targets:
        for name, grad, what in TESTS:
            with rec.test(name, gpu=gpu) as t:
                if name not in refs:
                    raise _protocol.Fail(ref_errors.get(name, "no CPU reference"))
                got, where = run_mlp(jax, device, inputs, grad)
                if not _same_device(where, device):
                    raise _protocol.Fail(f"the result lives on {where}, not on {device}")
                ok, message, metrics = fw.compare_tensors(f"{what} on {device} vs CPU", got, refs[name])
                t.metrics.update(metrics)
                t.message = message
                if not ok:
                    t.fail(message)


# --------------------------------------------------------------------------- the suite


def _backend_errors(jax: Any) -> Dict[str, str]:
    try:
        from jax._src import xla_bridge  # type: ignore[import-not-found,unused-ignore]

        return {str(k): str(v) for k, v in dict(getattr(xla_bridge, "_backend_errors", {}) or {}).items()}
    except Exception:
        return {}


def find_gpus(jax: Any) -> Tuple[List[Any], List[str]]:
    """jax's CUDA devices (by id) and the errors asking for them raised."""
    raised: List[str] = []
    for name in ("cuda", "gpu"):
        try:
            devices = list(jax.devices(name))
        except Exception as exc:  # RuntimeError: Unknown backend / Unable to initialize backend
            text = str(exc)
            if text not in raised:
                raised.append(text)
            continue
        return sorted(devices, key=lambda d: getattr(d, "id", 0)), raised
    return [], raised


def cuda_details(details: MutableMapping[str, str]) -> None:
    """CUDA/cuDNN versions jaxlib found and was built against (``jax._src.lib.cuda_versions``)."""
    try:
        from jax._src.lib import cuda_versions  # type: ignore[import-not-found,unused-ignore]
    except Exception:
        return
    if cuda_versions is None:
        return
    for key, fn, fmt in (("cuda.runtime", "cuda_runtime_get_version", fw.cuda_version),
                         ("cuda.runtime_build", "cuda_runtime_build_version", fw.cuda_version),
                         ("cuda.driver", "cuda_driver_get_version", fw.cuda_version),
                         ("cudnn", "cudnn_get_version", fw.cudnn_version),
                         ("cudnn.build", "cudnn_build_version", fw.cudnn_version)):
        try:
            details[key] = fmt(getattr(cuda_versions, fn)())
        except Exception:
            continue


def body(rec: _protocol.Recorder, args: _protocol.Args, expect_gpu: bool = False) -> None:
    cpu_mode = args.device == "cpu"
    rec.details.update(set_allocator_env(os.environ))
    platforms, hidden = platforms_setting(os.environ.get("JAX_PLATFORMS"))
    if "JAX_PLATFORMS" in os.environ:
        rec.details["env.JAX_PLATFORMS.user"] = os.environ["JAX_PLATFORMS"]
    if platforms is not None and not cpu_mode:
        os.environ["JAX_PLATFORMS"] = platforms
        rec.details["env.JAX_PLATFORMS"] = platforms
    if cpu_mode:
        os.environ["JAX_PLATFORMS"] = "cpu"

    remember = _Remember()
    bridge_logger = logging.getLogger(XLA_BRIDGE_LOGGER)
    bridge_logger.addHandler(remember)
    if bridge_logger.getEffectiveLevel() > logging.INFO:
        bridge_logger.setLevel(logging.INFO)
    try:
        jax = fw.import_framework(rec, "jax")
        if jax is None:
            return
        rec.framework = f"jax {getattr(jax, '__version__', '?')}"
        packages = fw.distributions(CUDA_PACKAGES)
        for name, version in sorted(packages.items()):
            rec.details[f"package.{name}"] = version
        try:
            import jaxlib  # type: ignore[import-not-found,unused-ignore]

            rec.details["jaxlib"] = str(getattr(jaxlib, "__version__", "") or packages.get("jaxlib", "?"))
        except Exception as exc:
            rec.details["jaxlib"] = f"import failed: {_protocol.format_error(exc)}"

        if cpu_mode:
            cpu = jax.devices("cpu")[0]
            mlp_tests(rec, jax, [(None, cpu)], cpu)
            return
        if hidden:  # the user's own setting: reported, not held against the GPU
            rec.skip_suite(hidden)
            return

        gpus: List[Any] = []
        raised: List[str] = []
        with rec.test("devices") as t:
            gpus, raised = find_gpus(jax)
            if not gpus:
                failure = backend_failure(remember.messages, _backend_errors(jax), raised)
                if failure is not None and not (fw.says_no_device(failure) or fw.says_no_driver(failure)):
                    t.cuda_error = _protocol.decode_cuda_error(failure)
                    raise _protocol.Fail(failure)
        if rec.tests[-1].status != "passed":
            return
        if not gpus:
            rec.tests.pop()
            failure = backend_failure(remember.messages, _backend_errors(jax), raised)
            cpu_only, reason = (False, f"no GPU visible to jax: {failure}{fw.visible_devices_note()}") if failure \
                else no_cuda_reason(remember.messages, packages, raised)
            if cpu_only:  # a build question (the checks judge it), not a GPU that failed
                rec.skip_suite(reason)
            else:
                fw.no_gpu(rec, expect_gpu, reason, cuda_error=_protocol.decode_cuda_error(failure))
            return
        case = rec.tests[-1]
        case.metrics["count"] = len(gpus)
        for i, d in enumerate(gpus):
            rec.details[f"gpu.{i}.name"] = str(getattr(d, "device_kind", d))
        case.message = f"jax sees {len(gpus)} GPU{'s' * (len(gpus) != 1)}: " + ", ".join(
            f"{d} ({getattr(d, 'device_kind', '?')})" for d in gpus)
        cuda_details(rec.details)

        selected, missing = _protocol.select_gpus(args.gpus, len(gpus))
        fw.report_missing(rec, missing, len(gpus), "jax")
        try:
            cpu = jax.devices("cpu")[0]
        except Exception as exc:
            rec.add("jit_forward", "error", error=f"no CPU backend to compare with: {_protocol.format_error(exc)}")
            return
        mlp_tests(rec, jax, [(i, gpus[i]) for i in selected], cpu)
    finally:
        bridge_logger.removeHandler(remember)
        if "jax" in sys.modules:
            fw.loaded_libraries(rec.details)


def run(argv: Optional[Sequence[str]] = None, stream: Any = None, redirect: bool = True, seal: bool = False) -> int:
    """Run the suite with ``argv`` (default ``sys.argv[1:]``), print the line on ``stream``."""
    return fw.run_suite(SUITE, body, argv, stream=stream, redirect=redirect, seal=seal)


if __name__ == "__main__":
    sys.exit(fw.main(SUITE, body))
