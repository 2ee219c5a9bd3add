"""`python -m certs --out DIR --host NAME_OR_IP [--host ...]`."""

from __future__ import annotations

from certs.tls import cli_main

raise SystemExit(cli_main())
