"""The state one CLI invocation shares, and the flags every command takes the kubectl way.

kubectl and kueuectl accept their connection flags anywhere on the line (`create lq x -n ns` as well as
`-n ns create lq x`): click binds options to one command, so each command carries them and they all
write into the one `Session`. Aliases (`cq`, `lq`, `kwl`, …) are resolved by `AliasedGroup`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import click

from webhook.cli.api import Api, CliError
from webhook.cli.output import OUTPUT_FORMATS

__all__ = [
    "AliasedGroup",
    "Connect",
    "DryRun",
    "Session",
    "all_namespaces_option",
    "dry_run_option",
    "kube_options",
    "output_option",
    "parse_dry_run",
    "session",
]

Connect = Callable[[str | None, str | None], tuple[Api, str]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class Session:
    """Connection flags as given, and the client made from them on first use."""

    connect: Connect
    clock: Callable[[], datetime]
    argv: Sequence[str] = ()
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    _client: tuple[Api, str] | None = field(default=None, repr=False)

    def _connected(self) -> tuple[Api, str]:
        if self._client is None:
            self._client = self.connect(self.kubeconfig, self.context)
        return self._client

    @property
    def api(self) -> Api:
        return self._connected()[0]

    @property
    def ns(self) -> str:
        """`-n`, else the kubeconfig context's namespace."""
        return self.namespace or self._connected()[1]


def session() -> Session:
    return click.get_current_context().find_object(Session)  # type: ignore[return-value]


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is not None and param.name:
        setattr(ctx.find_object(Session), param.name, value)


def kube_options(f: F) -> F:
    """--kubeconfig, --context and -n/--namespace, written into the Session wherever they appear."""
    f = click.option(
        "-n",
        "--namespace",
        expose_value=False,
        callback=_store,
        help="If present, the namespace scope for this CLI request.",
    )(f)
    f = click.option(
        "--context", expose_value=False, callback=_store, help="The name of the kubeconfig context to use."
    )(f)
    return click.option(
        "--kubeconfig", expose_value=False, callback=_store, help="Path to the kubeconfig file to use for CLI requests."
    )(f)


def output_option(*, table: bool) -> Callable[[F], F]:
    formats = OUTPUT_FORMATS if table else OUTPUT_FORMATS[:3]
    return click.option(
        "-o", "--output", metavar="FORMAT", default=None, help=f"Output format. One of: ({', '.join(formats)})."
    )


def all_namespaces_option(f: F) -> F:
    return click.option(
        "-A",
        "--all-namespaces",
        is_flag=True,
        default=False,
        help="If present, list the requested object(s) across all namespaces. Namespace in "
        "current context is ignored even if specified with --namespace.",
    )(f)


class DryRun:
    NONE = "none"
    CLIENT = "client"
    SERVER = "server"


def parse_dry_run(value: str) -> str:
    if value not in (DryRun.NONE, DryRun.CLIENT, DryRun.SERVER):
        raise CliError(f'invalid dry-run value ({value}). Must be "none", "server", or "client"')
    return value


def dry_run_option(f: F) -> F:
    return click.option(
        "--dry-run",
        default=DryRun.NONE,
        metavar="STRATEGY",
        help='Must be "none", "server", or "client". If client strategy, only print the object '
        "that would be sent, without sending it. If server strategy, submit a server-side "
        "request without persisting the resource.",
    )(f)


class AliasedGroup(click.Group):
    """A group whose commands also answer to short names (`cq` for clusterqueue)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases: dict[str, str] = {}

    def add_command(self, cmd: click.Command, name: str | None = None, aliases: Sequence[str] = ()) -> None:
        super().add_command(cmd, name)
        for alias in aliases:
            self.aliases[alias] = name or cmd.name or ""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        return (cmd.name if cmd else name), cmd, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        by_target: dict[str, list[str]] = {}
        for alias, target in sorted(self.aliases.items()):
            by_target.setdefault(target, []).append(alias)
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            label = f"{name} ({', '.join(by_target[name])})" if name in by_target else name
            rows.append((label, cmd.get_short_help_str(limit=80)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
