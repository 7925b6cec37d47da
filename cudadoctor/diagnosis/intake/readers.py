"""The readers, in the order they run; each records the blocks and facts it finds."""

from __future__ import annotations

from typing import Callable, Tuple

from cudadoctor.diagnosis.intake.collect_env import read as read_collect_env
from cudadoctor.diagnosis.intake.packages import read as read_packages
from cudadoctor.diagnosis.intake.smi import read as read_smi
from cudadoctor.diagnosis.intake.system import read as read_system
from cudadoctor.diagnosis.intake.tools import read as read_tools
from cudadoctor.diagnosis.intake.messages import read as read_messages
from cudadoctor.diagnosis.intake.model import Found
from cudadoctor.diagnosis.intake.reports import read as read_reports
from cudadoctor.diagnosis.intake.shapes import read as read_shapes

READERS: Tuple[Callable[[Found], None], ...] = (read_collect_env, read_smi, read_packages, read_tools, read_system,
                                                   read_messages, read_reports, read_shapes)
