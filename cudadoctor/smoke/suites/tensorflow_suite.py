"""The tensorflow smoke suite: does tensorflow list the GPUs, and does a GradientTape on a GPU
give the gradients it gives on the CPU?

Before tensorflow is imported the child sets ``TF_FORCE_GPU_ALLOW_GROWTH=true`` (memory is taken
as needed, not all of every GPU at the first op) and keeps warnings visible
(``TF_CPP_MIN_LOG_LEVEL`` at most 1). What tensorflow's C++ side writes to stderr while it is
imported and lists the GPUs is captured (and still shown): when it lists none, those lines say
why ("Could not load dynamic library 'libcudnn.so.8'", "Cannot dlopen some GPU libraries",
"failed call to cuInit: ...").

Tests:

- ``devices``: ``tf.config.list_physical_devices("GPU")`` (names in ``gpu.<i>.name``). None
  listed: no driver or no visible GPU is a skip (a failure with ``--expect-gpu``), a CPU-only
  build a skip either way (like torch's); GPU libraries that would not load, or a cuInit failure other than "no
  device", fail with tensorflow's own lines.
- ``gradient_tape`` per GPU: a small MLP (``_frameworks.MLP_SHAPES``) built from tf.Variables
  under ``tf.device("/GPU:i")``, its loss and the GradientTape gradients of every parameter,
  against the same computation under ``tf.device("/CPU:0")``: normwise relative error <=
  ``_frameworks.GRAD_TOL`` (1e-4) with TF32 disabled and soft placement off (an op that cannot
  run on the GPU raises instead of silently running on the CPU); the loss must live on GPU i.

``framework`` is "tensorflow <version>"; ``details`` hold ``tf.sysconfig.get_build_info()``
(``build.cuda_version``, ``build.cudnn_version``, ``build.cuda_compute_capabilities``, ...), the
installed tensorflow packages and the CUDA libraries the process loaded. Runs as a script
(``python tensorflow_suite.py --tier quick [--expect-gpu]``); ``--device cpu`` (hidden) runs the
comparison with the CPU standing in for the GPU, for tests.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Mapping, MutableMapping, Optional, Sequence, Tuple

try:  # imported as cudadoctor.smoke.suites.tensorflow_suite (tests)
    from . import _frameworks as fw
    from . import _protocol
except ImportError:  # run by path: this folder is sys.path[0]
    import _frameworks as fw  # type: ignore[no-redef,import-not-found]
    import _protocol  # type: ignore[no-redef,import-not-found]

SUITE = "tensorflow"
TF_PACKAGES = r"tensorflow(-cpu|-gpu|-intel|-macos|-metal)?|tf-nightly(-cpu|-gpu)?|tf-keras|keras"

# Lines of tensorflow's C++ log that say why it lists no GPU.
DLOPEN_FAILED = "Cannot dlopen some GPU libraries"
LIB_NOT_LOADED = "Could not load dynamic library"
CUINIT_FAILED = "failed call to cuInit"
NO_DRIVER = ("Could not find cuda drivers", "libcuda.so.1: cannot open shared object file",
             "libcuda reported version is: Not found", "kernel driver does not appear to be running")
NEEDLES = (DLOPEN_FAILED, LIB_NOT_LOADED, CUINIT_FAILED, "CUDA driver version is insufficient",
           "cudaGetDevice() failed", "Could not find cuda drivers", "kernel driver does not appear to be running",
           "GPU will not be used", "Skipping registering GPU devices")

# --------------------------------------------------------------------------- pure parts


def set_env(env: MutableMapping[str, str]) -> Dict[str, str]:
    """Allow-growth on, warnings visible; details: the values used and the user's where they
    differed."""
    details: Dict[str, str] = {}
    before = env.get("TF_FORCE_GPU_ALLOW_GROWTH")
    if before is not None and before != "true":
        details["env.TF_FORCE_GPU_ALLOW_GROWTH.user"] = before
    env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    details["env.TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    level = env.get("TF_CPP_MIN_LOG_LEVEL")
    if level is not None and (not level.strip().isdigit() or int(level) > 1):
        details["env.TF_CPP_MIN_LOG_LEVEL.user"] = level
        env["TF_CPP_MIN_LOG_LEVEL"] = "1"
    return details


def classify_no_gpu(log: str) -> Tuple[str, str]:
    """Why tensorflow listed no GPU, from what it logged: ("skip", reason) when there is no GPU
    to use (no device, no driver), ("fail", tensorflow's lines) when a GPU is there but could not
    be used (libraries that would not load, cuInit failing otherwise)."""
    lines = fw.matching_lines(log, NEEDLES, limit=8)
    said = "; ".join(lines)
    if fw.says_no_device(log):
        return "skip", f"no GPU visible to tensorflow ({said})" if said else "no GPU visible to tensorflow"
    low = log.lower()
    if any(n.lower() in low for n in NO_DRIVER):
        return "skip", f"no NVIDIA driver for tensorflow to use ({said})" if said else "no NVIDIA driver"
    if DLOPEN_FAILED.lower() in low:
        missing = [ln for ln in lines if LIB_NOT_LOADED.lower() in ln.lower()]
        dl = next(ln for ln in lines if DLOPEN_FAILED.lower() in ln.lower())
        return "fail", "; ".join(missing + [dl])
    if CUINIT_FAILED.lower() in low:
        return "fail", "; ".join(ln for ln in lines if CUINIT_FAILED.lower() in ln.lower())
    return "skip", f"no GPU visible to tensorflow{fw.visible_devices_note()}" + (f" ({said})" if said else "")


def build_details(info: Mapping[str, Any]) -> Dict[str, str]:
    """``tf.sysconfig.get_build_info()`` as details (``build.<key>``; lists joined by commas)."""
    out: Dict[str, str] = {}
    for key, value in info.items():
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        out[f"build.{key}"] = str(value)
    return out


def on_device(device_string: str, kind: str, index: int) -> bool:
    """``/job:localhost/replica:0/task:0/device:GPU:1`` is on (GPU, 1)."""
    return device_string.upper().endswith(f"DEVICE:{kind.upper()}:{index}")


# --------------------------------------------------------------------------- the workload


def tape_mlp(tf: Any, device: str, inputs: Mapping[str, Any]) -> Tuple[Dict[str, Any], str]:
    """The MLP's loss and GradientTape gradients computed under ``tf.device(device)``:
    ({"loss": float, "w1": list, ...}, device of the loss)."""
    with tf.device(device):
        x = tf.constant(inputs["x"], dtype=tf.float32)
        y = tf.constant(inputs["y"], dtype=tf.float32)
        params = [tf.Variable(tf.constant(inputs[k], dtype=tf.float32), name=k) for k in fw.MLP_PARAMS]
        w1, b1, w2, b2 = params
        with tf.GradientTape() as tape:
            h = tf.tanh(tf.matmul(x, w1) + b1)
            out = tf.matmul(h, w2) + b2
            loss = tf.reduce_mean(tf.square(out - y))
        grads = tape.gradient(loss, params)
    values: Dict[str, Any] = {"loss": float(loss.numpy())}
    for name, g in zip(fw.MLP_PARAMS, grads):
        if g is None:
            raise _protocol.Fail(f"GradientTape gave no gradient for {name}")
        values[name] = fw.flatten(g.numpy())
    return values, str(loss.device)


def gradient_tests(rec: _protocol.Recorder, tf: Any, targets: Sequence[Tuple[Optional[int], str, str, int]]) -> None:
    """``gradient_tape`` on each (gpu, device name, kind, index) against ``/CPU:0``."""
    inputs = fw.mlp_inputs()
    ref: Optional[Dict[str, Any]] = None
    ref_error = "no CPU reference"
    try:
        ref, _ = tape_mlp(tf, "/CPU:0", inputs)
    except Exception as exc:
        ref_error = f"the CPU reference raised {_protocol.format_error(exc)}"
    for gpu, device, kind, index in targets:
        with rec.test("gradient_tape", gpu=gpu) as t:
            if ref is None:
                raise _protocol.Fail(ref_error)
            got, where = tape_mlp(tf, device, inputs)
            if not on_device(where, kind, index):
                raise _protocol.Fail(f"the loss was computed on {where}, not on {device}")
            ok, message, metrics = fw.compare_tensors(f"GradientTape MLP loss and gradients on {device} vs /CPU:0",
                                                      got, ref)
            t.metrics.update(metrics)
            t.message = message
            if not ok:
                t.fail(message)


# --------------------------------------------------------------------------- the suite


def body(rec: _protocol.Recorder, args: _protocol.Args, expect_gpu: bool = False) -> None:
    cpu_mode = args.device == "cpu"
    rec.details.update(set_env(os.environ))
    captured: List[str] = []
    gpus: List[Any] = []
    with fw.capture_stderr_fd(captured):
        tf = fw.import_framework(rec, "tensorflow")
        if tf is not None and not cpu_mode:
            try:
                gpus = list(tf.config.list_physical_devices("GPU"))
            except Exception as exc:
                rec.add("devices", "error", error=_protocol.format_error(exc))
    if tf is None:
        return
    try:
        rec.framework = f"tensorflow {getattr(tf, '__version__', '?')}"
        for name, version in sorted(fw.distributions(TF_PACKAGES).items()):
            rec.details[f"package.{name}"] = version
        info: Dict[str, Any] = {}
        try:
            info = dict(tf.sysconfig.get_build_info())
            rec.details.update(build_details(info))
        except Exception as exc:
            rec.details["build"] = f"get_build_info raised {_protocol.format_error(exc)}"
        settings: Tuple[Tuple[str, Callable[[], Any]], ...] = (
            ("tf32", lambda: tf.config.experimental.enable_tensor_float_32_execution(False)),
            ("soft_placement", lambda: tf.config.set_soft_device_placement(False)))
        for setting, call in settings:
            try:
                call()
                rec.details[f"setting.{setting}"] = "off"
            except Exception as exc:
                rec.details[f"setting.{setting}"] = f"could not turn off: {_protocol.format_error(exc)}"

        if cpu_mode:
            gradient_tests(rec, tf, [(None, "/CPU:0", "CPU", 0)])
            return
        if rec.tests:  # list_physical_devices raised
            return
        if not gpus:
            try:
                cuda_build = bool(tf.test.is_built_with_cuda())
            except Exception:
                cuda_build = bool(info.get("is_cuda_build", True))
            if not cuda_build:
                rec.skip_suite(f"tensorflow {tf.__version__} is a CPU-only build (no CUDA)")
                return
            kind, reason = classify_no_gpu("".join(captured))
            if kind == "fail":
                rec.add("devices", "failed", message=reason, cuda_error=_protocol.decode_cuda_error(reason))
            else:
                fw.no_gpu(rec, expect_gpu, reason, cuda_error=_protocol.decode_cuda_error(reason))
            return

        with rec.test("devices") as t:
            names = []
            for i, g in enumerate(gpus):
                try:
                    name = str(tf.config.experimental.get_device_details(g).get("device_name", g.name))
                except Exception:
                    name = str(getattr(g, "name", g))
                names.append(name)
                rec.details[f"gpu.{i}.name"] = name
                try:
                    tf.config.experimental.set_memory_growth(g, True)
                except Exception:  # already initialised: TF_FORCE_GPU_ALLOW_GROWTH did it
                    pass
            t.metrics["count"] = len(gpus)
            t.message = f"tensorflow lists {len(gpus)} GPU{'s' * (len(gpus) != 1)}: {', '.join(names)}"
        selected, missing = _protocol.select_gpus(args.gpus, len(gpus))
        fw.report_missing(rec, missing, len(gpus), "tensorflow")
        gradient_tests(rec, tf, [(i, f"/GPU:{i}", "GPU", i) for i in selected])
    finally:
        fw.loaded_libraries(rec.details)


def run(argv: Optional[Sequence[str]] = None, stream: Any = None, redirect: bool = True, seal: bool = False) -> int:
    """Run the suite with ``argv`` (default ``sys.argv[1:]``), print the line on ``stream``."""
    return fw.run_suite(SUITE, body, argv, stream=stream, redirect=redirect, seal=seal)


if __name__ == "__main__":
    sys.exit(fw.main(SUITE, body))
