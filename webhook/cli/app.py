"""`kubectl kueue` / `kueuectl`: the root command, `version`, `completion`, and the two entry points.

Mirrors cmd/kueuectl/app/cmd.go and main.go. Every failure ends as one `Error: …` line on stderr and
exit status 1, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib import metadata

import click
from click import shell_completion

from webhook import kube
from webhook.cli.api import CliError, get_object
from webhook.cli.control import resume, stop
from webhook.cli.create import create
from webhook.cli.explain import dry_run, explain
from webhook.cli.listing import list_
from webhook.cli.output import now_utc
from webhook.cli.passthrough import passthrough_groups
from webhook.cli.session import AliasedGroup, Connect, Session, kube_options, session
from webhook.cli.usage import usage_command

__all__ = ["cli", "complete_main", "main", "run"]

PROG = "kubectl-kueue"
_DEPLOYMENT = "/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager"


@click.group(
    cls=AliasedGroup, help="Controls Kueue queueing manager", context_settings={"help_option_names": ["-h", "--help"]}
)
@kube_options
def cli() -> None:
    """The root: only flags."""


@cli.command(help="Prints the client version and the kueue controller manager image, if installed")
@kube_options
def version() -> None:
    click.echo(f"Client Version: v{metadata.version('pykueue')}")
    deployment = get_object(session().api, _DEPLOYMENT)
    containers = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    ) or []
    for container in containers:
        if container.get("name") == "manager":
            click.echo(f"Kueue Controller Manager Image: {container.get('image', '')}")
            break


@cli.command(help="Output shell completion code for the specified shell (bash, zsh or fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    cls = shell_completion.get_completion_class(shell)
    assert cls is not None  # click.Choice admits only the shells click knows
    click.echo(cls(cli, {}, PROG, "_KUBECTL_KUEUE_COMPLETE").source())


cli.add_command(create)
cli.add_command(list_, "list")
cli.add_command(stop)
cli.add_command(resume)
cli.add_command(explain)
cli.add_command(dry_run)
cli.add_command(usage_command)
for _group in passthrough_groups():
    cli.add_command(_group)


def run(argv: Sequence[str], connect: Connect = kube.Kube.for_context, clock: Callable[[], datetime] = now_utc) -> int:
    """Run one command line; the exit status. Tests pass `connect` and `clock` to answer from a fake API."""
    state = Session(connect=connect, clock=clock, argv=tuple(argv))
    try:
        result = cli.main(list(argv), prog_name=PROG, standalone_mode=False, obj=state)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:  # a misused command line: status 1 too, as upstream's
        click.echo(f"Error: {exc.format_message()}", err=True)
        return 1
    except click.Abort:
        return 1
    except (CliError, kube.KubeError) as exc:
        click.echo(f"Error: {exc}", err=True)
        return 1
    except Exception as exc:  # a bug of ours: still one line for the user, never a traceback
        click.echo(f"Error: {type(exc).__name__}: {exc}", err=True)
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    """`kubectl-kueue` and `kueuectl`."""
    sys.exit(run(sys.argv[1:]))


def complete_main() -> None:
    """`kubectl_complete-kueue ARGS… TO_COMPLETE`: kubectl's plugin completion protocol (cobra's
    `__complete` output: one candidate per line, then `:DIRECTIVE`; 4 = no file completion)."""
    *args, incomplete = sys.argv[1:] or [""]
    comp = shell_completion.ShellComplete(
        cli, {"obj": Session(connect=kube.Kube.for_context, clock=now_utc)}, PROG, "_KUBECTL_KUEUE_COMPLETE"
    )
    for item in comp.get_completions(args, incomplete):
        click.echo(item.value)
    click.echo(":4")
