#!/bin/sh
# Prove cudadoctor on this machine's GPU: tools/gpu_proof.sh OUT_DIR [--budget S] [--only STEP]...
# Writes OUT_DIR/gpu-proof.tar.gz and OUT_DIR/summary.txt (docs/gpu-proof.md). Runs from a source
# checkout with the machine's python3 (no install, no network) or with cudadoctor installed.
#
# The kit keeps itself within its budget (390 s, counted from its start); `timeout` is the backstop for a kit that does
# not: SIGTERM at 410 s (the kit then kills the running step and writes the archive), SIGKILL
# 5 s later, so the whole command ends within 7 minutes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
if [ $# -lt 1 ]; then
    echo "usage: $0 OUT_DIR [--budget SECONDS] [--only STEP]..." >&2
    exit 2
fi
limit=${GPU_PROOF_LIMIT_S:-410}
if command -v timeout >/dev/null 2>&1; then
    exec timeout --kill-after=5 "$limit" "$python" "$here/gpu_proof.py" --python "$python" "$@"
fi
exec "$python" "$here/gpu_proof.py" --python "$python" "$@"
