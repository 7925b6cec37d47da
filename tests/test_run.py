"""`cudadoctor run -- COMMAND`: the command runs as without cudadoctor (input, output, exit status,
signals), and a failure with a known GPU error is followed by the diagnosis. Real subprocesses,
each bounded by a timeout."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import tty
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import pytest

from cudadoctor.oncall import run as oncall

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ROOT / "tests" / "machines"
LAPTOP = str(MACHINES / "laptop-rtx3060-driver470-torch25-cu124")
RUN = [sys.executable, "-m", "cudadoctor", "run"]
PY = sys.executable
TIMEOUT = 60
KERNEL_IMAGE = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


def py(code: str) -> List[str]:
    return [PY, "-c", code]


def run(args: Sequence[str], stdin: Optional[bytes] = None) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run(list(args), input=stdin, capture_output=True, timeout=TIMEOUT)


def failing_with(text: str, code: int = 1) -> List[str]:
    return py(f"import sys; print('training'); sys.stderr.write({text!r} + '\\n'); sys.exit({code})")


def read_until(fd: int, wanted: bytes, seconds: float = 20.0) -> bytes:
    """Read ``fd`` until ``wanted`` appears (or EOF, or the deadline)."""
    data = b""
    deadline = time.monotonic() + seconds
    while wanted not in data and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: a pty whose other side is closed
            break
        if not chunk:
            break
        data += chunk
    return data


# ---------------------------------------------------------------------------- pass-through


@pytest.mark.parametrize("code", [0, 1, 42])
def test_the_exit_code_passes_through_and_nothing_is_added(code: int) -> None:
    result = run(RUN + ["--"] + py(f"import sys; print('out'); sys.stderr.write('err\\n'); sys.exit({code})"))
    assert result.returncode == code
    assert result.stdout == b"out\n"
    assert result.stderr == b"err\n"


def test_stdin_passes_through() -> None:
    result = subprocess.run(f"printf 'abc' | {' '.join(RUN)} -- cat", shell=True, capture_output=True, timeout=TIMEOUT)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"abc", b"")


WRITER = """
import os, sys
blob = bytes(range(256)) + b"\\xff\\xfe not utf-8 \\xc3\\x28" + "ünïcødé".encode()
big = int(sys.argv[1])
os.write(1, blob * 3)
os.write(2, blob * 5)
line = b"step 12345 loss 0.25 \\x00\\x01 lr 1e-4\\n"
for _ in range(big // len(line)):
    os.write(2, line)
os.write(2, b"no trailing newline")
os.write(1, b"end of stdout, no newline")
"""


@pytest.mark.parametrize("size", [0, 10 * 1024 * 1024])
def test_stdout_and_stderr_bytes_are_those_of_the_direct_run(size: int) -> None:
    command = [PY, "-c", WRITER, str(size)]
    direct, wrapped = run(command), run(RUN + ["--"] + command)
    assert wrapped.returncode == direct.returncode == 0
    assert wrapped.stdout == direct.stdout
    assert len(wrapped.stderr) == len(direct.stderr) >= size
    assert wrapped.stderr == direct.stderr


def test_stderr_is_streamed_live() -> None:
    """The child's first line reaches us while it is still running (it waits for a file)."""
    flag = Path(os.environ.get("TMPDIR", "/tmp")) / f"cudadoctor-run-{os.getpid()}"
    code = (f"import os, sys, time; sys.stderr.write('first line\\n'); sys.stderr.flush()\n"
            f"deadline = time.time() + 30\n"
            f"while not os.path.exists({str(flag)!r}) and time.time() < deadline: time.sleep(0.02)\n"
            f"sys.stderr.write('second line\\n')")
    proc = subprocess.Popen(RUN + ["--"] + py(code), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        assert proc.stderr is not None
        seen = read_until(proc.stderr.fileno(), b"first line\n", 20)
        assert seen == b"first line\n"
        assert proc.poll() is None  # still waiting for the flag: the line came live
        flag.write_text("go")
        assert proc.wait(TIMEOUT) == 0
        assert read_until(proc.stderr.fileno(), b"second line\n") == b"second line\n"
    finally:
        proc.kill()
        proc.wait(TIMEOUT)
        if flag.exists():
            flag.unlink()


def test_a_closed_stderr_reader_stops_the_command_as_it_would_directly() -> None:
    """`... 2>&1 | head`: the child gets SIGPIPE (and cudadoctor dies of it, as the child did)."""
    def status(argv: List[str]) -> int:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        assert read_until(proc.stderr.fileno(), b"y\n" * 1000)
        proc.stderr.close()
        return proc.wait(TIMEOUT)

    direct = status(["sh", "-c", "exec yes >&2"])
    assert direct == -signal.SIGPIPE
    assert status(RUN + ["--", "sh", "-c", "exec yes >&2"]) == direct


# ---------------------------------------------------------------------------- starting


def test_a_missing_command_exits_127_like_a_shell() -> None:
    result = run(RUN + ["--", "nosuchcmd-cudadoctor-test"])
    assert result.returncode == 127
    assert result.stderr == b"cudadoctor: error: nosuchcmd-cudadoctor-test: command not found\n"


def test_a_file_that_cannot_be_executed_exits_126(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = run(RUN + ["--", str(script)])
    assert result.returncode == 126
    assert result.stderr.startswith(f"cudadoctor: error: {script}: cannot execute: ".encode())


def test_a_script_without_a_shebang_runs_under_sh_as_a_shell_does(tmp_path: Path) -> None:
    # issue 16, item 17: posix_spawnp gives ENOEXEC, which cudadoctor reported as 126
    script = tmp_path / "train"
    script.write_text('echo "args: $*"\nexit 7\n')
    script.chmod(0o755)
    result = run(RUN + ["--", str(script), "a b", "c"])
    assert (result.returncode, result.stdout, result.stderr) == (7, b"args: a b c\n", b"")
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}
    by_name = subprocess.run(RUN + ["--", "train"], capture_output=True, timeout=TIMEOUT, env=env)
    assert (by_name.returncode, by_name.stdout) == (7, b"args: \n")


def test_no_command_is_a_usage_error() -> None:
    result = run(RUN)
    assert result.returncode == 2
    assert b"Missing argument" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--timeout", "0", "--", "true"], b"--timeout"),
    (["--no-check", "--report", "r.json", "--", "true"], b"--report needs this machine's facts"),
    (["--bogus", "--", "true"], b"No such option"),
])
def test_bad_options_are_usage_errors_and_the_command_does_not_run(args: List[str], message: bytes) -> None:
    result = run(RUN + args[:-1] + ["sh", "-c", "echo ran"])
    assert result.returncode == 2
    assert message in result.stderr
    assert b"ran" not in result.stdout


def test_help_lists_the_options_and_the_command_appears_in_the_main_help() -> None:
    result = run(RUN + ["--help"])
    assert result.returncode == 0
    for option in (b"--no-check", b"--report", b"--timeout", b"--quiet", b"--verbose"):
        assert option in result.stdout
    assert b"--machine" not in result.stdout  # hidden: for tests
    main_help = run([PY, "-m", "cudadoctor", "--help"])
    assert b"  run " in main_help.stdout


def test_arguments_after_the_command_belong_to_it() -> None:
    result = run(RUN + [PY, "-c", "import sys; print(sys.argv[1:])", "-q", "--report", "x"])
    assert result.returncode == 0
    assert result.stdout == b"['-q', '--report', 'x']\n"


def test_the_fast_path_imports_neither_click_nor_the_matrix() -> None:
    result = run([PY, "-X", "importtime", "-m", "cudadoctor", "run", "--", "true"])
    assert result.returncode == 0
    imported = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert "cudadoctor.oncall.run" in imported
    assert not imported & {"click", "cudadoctor.matrix", "cudadoctor.api", "dataclasses", "subprocess", "json"}


def test_global_options_first_go_through_click_with_the_same_result() -> None:
    result = run([PY, "-m", "cudadoctor", "--debug", "run", "--"] + failing_with("plain failure", 3))
    assert (result.returncode, result.stdout, result.stderr) == (3, b"training\n", b"plain failure\n")


# ---------------------------------------------------------------------------- signals


def start_armed(code: str, args: Sequence[str] = ()) -> "subprocess.Popen[bytes]":
    """cudadoctor running a Python child that says 'armed' on stderr once its handlers are set."""
    proc = subprocess.Popen(RUN + list(args) + ["--"] + py(code), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    assert b"armed" in read_until(proc.stderr.fileno(), b"armed")
    return proc


def test_sigterm_to_cudadoctor_reaches_the_child() -> None:
    proc = start_armed("import signal, sys, time\n"
                       "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
                       "sys.stderr.write('armed\\n'); sys.stderr.flush(); time.sleep(30)")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(TIMEOUT) == 7


def test_sigint_sent_to_cudadoctor_alone_is_forwarded() -> None:
    # 'armed' is written inside the try: a SIGINT that comes right after it must find the handler
    proc = start_armed("import sys, time\ntry:\n    sys.stderr.write('armed\\n'); sys.stderr.flush()\n"
                       "    time.sleep(30)\nexcept KeyboardInterrupt:\n    sys.exit(5)")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(TIMEOUT) == 5


def test_a_child_killed_by_a_signal_kills_cudadoctor_with_the_same_signal() -> None:
    result = run(RUN + ["--"] + py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert result.returncode == -signal.SIGKILL
    assert result.stderr == b""


def in_terminal(argv: Sequence[str], rows: int = 33, cols: int = 111) -> "Tuple[subprocess.Popen[bytes], int]":
    """Start ``argv`` as the session leader of a new pseudo-terminal (raw, ``rows`` x ``cols``),
    its stdin, stdout and stderr: a terminal as a user has. Returns the process and the master."""
    master, slave = os.openpty()
    tty.setraw(slave)
    attrs = termios.tcgetattr(slave)
    attrs[3] |= termios.ISIG  # raw, but Ctrl-C still sends SIGINT, as in a shell
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def controlling_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            preexec_fn=controlling_terminal)
    os.close(slave)
    return proc, master


def finish(proc: "subprocess.Popen[bytes]", master: int) -> bytes:
    rest = read_until(master, b"\0never", 20)
    os.close(master)
    proc.wait(TIMEOUT)
    return rest


def test_a_terminal_sees_a_tty_on_stderr_of_its_size_and_unchanged_bytes() -> None:
    code = ("import os, sys; s = os.get_terminal_size(2)\n"
            "sys.stderr.write(f'tty={os.isatty(2)} size={s.columns}x{s.lines}\\nraw\\n')")
    proc, master = in_terminal(RUN + ["--"] + py(code))
    output = finish(proc, master)
    assert proc.returncode == 0
    assert output == b"tty=True size=111x33\nraw\n"  # no "\r\n" added by cudadoctor's pty


def test_ctrl_c_in_a_terminal_reaches_the_child_once() -> None:
    """The terminal signals the whole foreground group; cudadoctor must not add a second SIGINT."""
    # The child takes its signals with sigwaitinfo, which counts two deliveries that Python's
    # handlers would merge into one call.
    code = ("import signal, sys\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
            "sys.stderr.write('armed\\n'); sys.stderr.flush()\n"
            "count = 0 if signal.sigtimedwait({signal.SIGINT}, 20) is None else 1\n"
            "while signal.sigtimedwait({signal.SIGINT}, 0.5) is not None: count += 1\n"
            "sys.exit(10 + count)")
    proc, master = in_terminal(RUN + ["--"] + py(code))
    assert b"armed" in read_until(master, b"armed")
    os.write(master, b"\x03")  # Ctrl-C
    finish(proc, master)
    assert proc.returncode == 11


def test_a_terminal_resize_reaches_the_child_with_the_new_size() -> None:
    code = ("import os, signal, sys, time\n"
            "def show(*a):\n    s = os.get_terminal_size(2); sys.stderr.write(f'size={s.columns}x{s.lines}\\n')\n"
            "signal.signal(signal.SIGWINCH, show)\n"
            "sys.stderr.write('armed\\n'); sys.stderr.flush(); time.sleep(3)")
    proc, master = in_terminal(RUN + ["--"] + py(code))
    assert b"armed" in read_until(master, b"armed")
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 132, 0, 0))
    assert b"size=132x40\n" in read_until(master, b"size=132x40\n")
    finish(proc, master)


# ---------------------------------------------------------------------------- diagnosis


def test_a_known_gpu_error_is_followed_by_the_diagnosis_of_the_machine() -> None:
    result = run(RUN + ["--machine", LAPTOP, "--"] + failing_with(KERNEL_IMAGE))
    assert result.returncode == 1
    assert result.stdout == b"training\n"
    err = result.stderr.decode()
    own, _, ours = err.partition("cudadoctor: ")
    assert own == KERNEL_IMAGE + "\n"  # the command's own output first, unchanged
    head = ours.splitlines()[0]
    assert head.startswith(f"'{PY} -c \"import sys; print('training'); ")
    assert head.endswith(" failed (exit 1) with a known GPU error: cuda-no-kernel-image")
    assert "Known error: cuda-no-kernel-image" in ours
    assert "Checked against" in ours
    assert "[driver-too-old-for-build]" in ours  # the recorded laptop's real problem
    assert "470.82.01" in ours


def test_no_check_explains_without_probing() -> None:
    result = run(RUN + ["--no-check", "--"] + failing_with(KERNEL_IMAGE))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert "with a known GPU error: cuda-no-kernel-image" in err
    assert err.rstrip().endswith("Not checked against this machine (--no-check).")


def test_a_child_killed_by_a_signal_after_a_known_error_is_diagnosed_then_dies_alike() -> None:
    code = f"import os, sys; sys.stderr.write({KERNEL_IMAGE!r} + '\\n'); sys.stderr.flush(); os.abort()"
    result = run(RUN + ["--no-check", "--"] + py(code))
    assert result.returncode == -signal.SIGABRT
    assert b"was killed by signal 6 (SIGABRT) with a known GPU error: cuda-no-kernel-image" in result.stderr


def test_report_writes_a_redacted_json_report_with_the_error(tmp_path: Path) -> None:
    target = tmp_path / "gpu-error.json"
    result = run(RUN + ["--machine", LAPTOP, "--report", str(target), "--"] + failing_with(KERNEL_IMAGE))
    assert result.returncode == 1
    assert result.stderr.decode().endswith(f"cudadoctor: wrote a redacted report to {target}\n")
    text = target.read_text()
    document = json.loads(text)
    assert document["format"] == "cudadoctor.report"
    assert KERNEL_IMAGE in document["snapshot"]["error_message"]
    assert "driver-too-old-for-build" in {f["code"] for f in document["findings"]}
    assert "maya-laptop" not in text and "/home/maya" not in text


def test_report_redacts_the_home_of_the_user_running_it_outside_home(tmp_path: Path) -> None:
    """HOME=/scratch/... is in no probed variable: the report learns it from the process (issue 16, item 3)."""
    target = tmp_path / "gpu-error.json"
    home = "/scratch/zqxhome7"
    error = f'File "{home}/proj/train.py", line 3\n{KERNEL_IMAGE}'
    env = {**os.environ, "HOME": home, "USER": "zqxuser7", "LOGNAME": "zqxlog7"}
    result = subprocess.run(RUN + ["-q", "--machine", LAPTOP, "--report", str(target), "--"] + failing_with(error),
                            capture_output=True, timeout=TIMEOUT, env=env)
    assert result.returncode == 1, result.stderr
    text = target.read_text()
    assert '<home>/proj/train.py' in text
    assert "zqx" not in text


def test_quiet_prints_nothing_but_still_writes_the_report(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    result = run(RUN + ["-q", "--machine", LAPTOP, "--report", str(target), "--"] + failing_with(KERNEL_IMAGE))
    assert (result.returncode, result.stderr) == (1, KERNEL_IMAGE.encode() + b"\n")
    assert json.loads(target.read_text())["format"] == "cudadoctor.report"


def test_a_failure_without_a_known_error_prints_nothing_extra_and_verbose_says_so() -> None:
    command = failing_with("ValueError: the loss is NaN", 2)
    quiet = run(RUN + ["--"] + command)
    assert (quiet.returncode, quiet.stderr) == (2, b"ValueError: the loss is NaN\n")
    verbose = run(RUN + ["-v", "--"] + command)
    assert verbose.returncode == 2
    lines = verbose.stderr.decode().splitlines()
    assert len(lines) == 2
    assert lines[1].endswith("failed (exit 2); no known GPU error in its error output")


def test_success_prints_nothing_even_after_a_gpu_error_message() -> None:
    result = run(RUN + ["-v", "--machine", LAPTOP, "--"] + failing_with(KERNEL_IMAGE, 0))
    assert (result.returncode, result.stderr) == (0, KERNEL_IMAGE.encode() + b"\n")


def test_an_early_gpu_error_is_found_after_megabytes_of_later_output() -> None:
    """The error line is long out of the kept tail; the keyword lines before it are kept."""
    code = (f"import sys; sys.stderr.write({KERNEL_IMAGE!r} + '\\n')\n"
            "for i in range(120000): sys.stderr.write(f'step {i} loss 0.25 lr 0.0001 something long enough\\n')\n"
            "sys.exit(1)")
    result = run(RUN + ["--no-check", "--"] + py(code))
    assert result.returncode == 1
    assert len(result.stderr) > 2 * oncall.TAIL_BYTES
    assert b"with a known GPU error: cuda-no-kernel-image" in result.stderr


def test_the_console_script_runs_the_same_fast_path() -> None:
    script = Path(sys.executable).parent / "cudadoctor"
    if not script.exists():
        pytest.skip("no console script next to this interpreter")
    result = run([str(script), "run", "--no-check", "--"] + failing_with(KERNEL_IMAGE, 4))
    assert result.returncode == 4
    assert b"with a known GPU error: cuda-no-kernel-image" in result.stderr


# ---------------------------------------------------------------------------- parts


def test_every_signature_example_passes_the_keyword_prefilter() -> None:
    """Lines kept from before the tail are chosen by oncall.KEYWORDS: none may miss a signature."""
    from cudadoctor.data.source import default_matrix

    from cudadoctor.diagnosis.matching import match as match_text

    matrix = default_matrix()
    missed = []
    for sig in matrix.signatures.signatures:
        match = next(m for m in match_text(sig.example, matrix) if m.signature.id == sig.id)
        if not any(word in match.line.lower().encode() for word in oncall.KEYWORDS):
            missed.append(sig.id)
    assert missed == []


@pytest.mark.parametrize("args, expected", [
    (["--", "python", "x.py"], ("python", "x.py")),
    (["-q", "-v", "--no-check", "--timeout=2", "python"], ("python",)),
    (["--report", "r.json", "--machine", "m", "cmd", "-v"], ("cmd", "-v")),
])
def test_the_fast_parser_takes_the_plain_forms(args: List[str], expected: Tuple[str, ...]) -> None:
    options = oncall.parse(args)
    assert options is not None and options.command == expected


@pytest.mark.parametrize("args", [[], ["--"], ["--help", "--", "x"], ["-qv", "x"], ["--timeout", "abc", "x"],
                                  ["--timeout", "0", "x"], ["--report"], ["--no-check", "--report", "f", "x"]])
def test_the_fast_parser_leaves_everything_else_to_click(args: List[str]) -> None:
    assert oncall.parse(args) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="si_code values are Linux's")
def test_only_signals_from_the_terminal_are_taken_as_already_delivered() -> None:
    """Ctrl-C reaches the whole foreground group (si_code SI_KERNEL): not forwarded; a kill(2) of
    cudadoctor alone (SI_USER, 0) is. The end-to-end test above can miss a second SIGINT, which
    the kernel merges with the first when it is still pending."""
    assert oncall._from_terminal(signal.SIGINT, 0x80) is True
    assert oncall._from_terminal(signal.SIGINT, 0) is False
    assert oncall._from_terminal(signal.SIGTERM, -6) is False  # SI_TKILL


def test_in_process_the_click_command_returns_the_exit_code(capfd: pytest.CaptureFixture[str]) -> None:
    from cudadoctor.cli.app import run as cli_run

    assert cli_run(["run", "--", "sh", "-c", "echo to-stderr >&2; exit 9"]) == 9
    assert capfd.readouterr().err == "to-stderr\n"



def test_a_cpu_build_of_torch_is_named_as_the_cause() -> None:
    """On a machine with torch's CPU build (CI's), `.cuda()` fails with 'Torch not compiled with
    CUDA enabled': the CPU build holds, even where no GPU keeps the build checks quiet."""
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("torch here is a CUDA build")
    result = run(RUN + ["--"] + py("import torch; torch.zeros(1).cuda()"))
    assert result.returncode == 1
    err = result.stderr.decode()
    assert "1. a CPU-only build of the framework\n       holds here: torch " in err
    assert "is a CPU-only build" in err and "not the cause here" not in err.split("1. a CPU-only build")[1][:200]
