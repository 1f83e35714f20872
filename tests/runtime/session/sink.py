"""Where the test programs' Python playbooks note their calls (a module outlives the runs that import it,
so a test sees whether a resumed run called a playbook again)."""

from __future__ import annotations

CALLS: list[tuple[str, str | None]] = []
"""(label, idempotency key) of every call of `Record`."""

OUTAGES: list[str] = []
"""While it holds messages, `Lookup` fails with the last one (a service that is down); a test empties it
when the service is back."""
