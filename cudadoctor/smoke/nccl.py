"""``python -m cudadoctor.smoke.nccl``: the multi-node NCCL check, run under torchrun on every node
(docs/fleet.md). Its code is the child-side module :mod:`cudadoctor.smoke.suites.nccl`; this name
is the one the fleet recipes use."""

from __future__ import annotations

import sys

from cudadoctor.smoke.suites.nccl import main

if __name__ == "__main__":
    sys.exit(main())
