"""The click group and the top-level handler that turns every failure into an exit code."""

from __future__ import annotations

import importlib
import sys
from typing import List, Optional

import click

from cudadoctor.cli.handler import guarded
from cudadoctor.errors import CudadoctorError, ExitCode
from cudadoctor.cli._version import line as version_line


# Each command lives in its own module, imported only when it runs (or for --help), so that
# `cudadoctor check` does not pay for the others.
COMMANDS = {
    "check": "check",
    "diagnose": "diagnose",
    "explain": "explain",
    "smoke": "smoke",
    "data": "data",
    "install": "install",
    "report": "report",
    "diff": "diff",
    "fleet": "fleet",
    "run": "run",
    "triage": "triage",
    "docker": "docker",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(f"{__package__}.{module}"), cmd_name)
        return command if isinstance(command, click.Command) else None


def _data_option(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> None:
    import os

    from cudadoctor.data.source import DataSource, use

    # A folder the user names that holds no data is their mistake, said here in one line; found
    # later by the matrix it read as a broken installation ("DataError ... please report it").
    if value and not ctx.resilient_parsing and not os.path.isfile(os.path.join(value, "manifest.json")):
        why = "no such folder" if not os.path.exists(value) else "no manifest.json in it"
        raise CudadoctorError(f"--data {value}: not a compat_data folder ({why})",
                              hint="give a folder holding compat_data (its manifest.json), or leave --data out")
    use(DataSource(value))


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_line())
        ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data", "data_dir", type=click.Path(file_okay=False), is_eager=True, expose_value=False,
    callback=_data_option, metavar="DIR",
    help="Use the compat_data folder DIR (also CUDADOCTOR_DATA_DIR).",
)
@click.option("--version", is_flag=True, is_eager=True, expose_value=False, callback=_show_version,
              help="Show the version and the data in use, and exit.")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Why your GPU software stack does or does not work, and how to fix it."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def run(args: List[str]) -> int:
    """Run the CLI on ``args``; return the exit code. Never lets a traceback out unless --debug."""

    def call() -> int:
        try:
            result = cli.main(args=args, prog_name="cudadoctor", standalone_mode=False)
            return int(result) if isinstance(result, int) else ExitCode.OK
        except click.exceptions.Exit as exc:
            return int(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            return ExitCode.USAGE
        except click.exceptions.Abort:
            sys.stderr.write("cudadoctor: interrupted\n")
            return ExitCode.INTERRUPTED

    return guarded(call, args)
