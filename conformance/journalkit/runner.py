"""Run the kit's checks against one journal and build the report (the same ``Report`` model,
verdict folding and exit codes as ``akc run``; profile ``journal``).

Every journal call runs on one event loop (an anyio blocking portal) under a hard timeout, so the
checks, Hypothesis properties included, are plain functions. Each check gets fresh stores: a
check never sees another's data. The journal is untrusted: whatever it raises or returns is the
check's verdict, never the kit's crash.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from conformance import __version__
from conformance.errors import Blocked, ConformanceFailure, UsageError
from conformance.journalkit.adapters import Factory, resolve
from conformance.journalkit.checks import CHECKS, CheckDef
from conformance.journalkit.requirements import (
    JOURNAL_CATALOG_VERSION,
    journal_requirements,
)
from conformance.report.model import KernelInfo, Report, SuiteInfo
from conformance.report.verdicts import Check, exit_code, requirement_verdict

PROFILE = "journal"


class JournalTimeout(Exception):
    """A journal call did not return within the kit's timeout."""


class JournalUnavailable(Exception):
    """The journal could not even be opened: no verdict can be given (exit 3)."""


#: Calls that are another requirement's subject when a check only needs them to set its scene:
#: there, their failure blocks the check (one fault, one verdict) instead of failing it.
PRECONDITIONS = {"create_session": "JKIT-002", "start_turn": "JKIT-005"}
#: Checks whose subject includes those calls failing (unknown ids) or making ids.
_OWN_PRECONDITIONS = frozenset({"JKIT-001", "JKIT-010"})


class SyncJournal:
    """The journal under test, its coroutine methods called from plain code through the portal."""

    def __init__(self, kit: Kit, inner: Any) -> None:
        self._kit, self.inner = kit, inner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        owner = PRECONDITIONS.get(name)
        if owner is None or self._kit.req in (owner, *_OWN_PRECONDITIONS):
            return lambda *args: self._kit.call(method, *args)

        def scene(*args: Any) -> Any:
            try:
                return self._kit.call(method, *args)
            except JournalTimeout:
                raise
            except Exception as exc:  # noqa: BLE001 - the untrusted journal's failure, named
                raise Blocked(by=owner, reason=f"{name} raised {type(exc).__name__}: {str(exc)[:300]}") from None

        return scene


class Kit:
    """What a check uses: fresh journals and stores, and calls under a timeout."""

    timeout_error = JournalTimeout

    def __init__(self, spec: str, factory: Factory, portal: BlockingPortal, root: Path, *,
                 timeout_s: float, examples_scale: float, kills: int, seed: int) -> None:
        self.spec, self.factory, self.portal, self.root = spec, factory, portal, root
        self.timeout_s, self.examples_scale, self.kills, self.seed = timeout_s, examples_scale, kills, seed
        self._opened: list[Any] = []
        self._stores = 0
        self.req = ""  # the requirement of the check running

    def new_store(self) -> str:
        self._stores += 1
        path = self.root / f"store-{self._stores}"
        path.mkdir()
        return str(path)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        async def bounded() -> Any:
            with anyio.move_on_after(self.timeout_s) as scope:
                result = fn(*args)
                return await result if inspect.isawaitable(result) else result
            if scope.cancelled_caught:
                raise JournalTimeout(f"{getattr(fn, '__name__', fn)} did not return within {self.timeout_s:g} s")

        return self.portal.call(bounded)

    def journal(self, store: str | None = None) -> SyncJournal:
        """A journal on ``store`` (a fresh one when None), closed when the check ends."""
        inner = self.call(self.factory, store or self.new_store())
        self._opened.append(inner)
        return SyncJournal(self, inner)

    def run(self, body: Callable[[Any], Any]) -> Any:
        """Run ``async body(journal)`` on the portal's loop with the last journal opened."""
        return self.call(body, self._opened[-1])

    def close_all(self) -> None:
        for inner in reversed(self._opened):
            closer = getattr(inner, "aclose", None) or getattr(inner, "close", None)
            if closer is not None:
                try:
                    self.call(closer)
                except Exception:  # noqa: BLE001 - a journal that cannot close is not this check's verdict
                    pass
        self._opened.clear()


def capabilities_of(journal: Any) -> list[str]:
    caps = []
    if getattr(journal, "durable", False) is True:
        caps.append("durable")
    if callable(getattr(journal, "interrupt", None)):
        caps.append("interrupt")
    from conformance.journalkit.stdio import StdioJournal

    if not isinstance(journal, StdioJournal):  # over stdio the kit's own encoder refuses them first
        caps.append("objects")
    return caps


def run_check(kit: Kit, c: CheckDef) -> Check:
    result = Check([c.req], "journal kit", c.name, profiles=[PROFILE])
    kit.req = c.req
    try:
        result.evidence = c.fn(kit)
        result.worsen("pass", None)
    except Blocked as exc:
        result.worsen("blocked", str(exc), blocked_by=list(getattr(exc, "by", []) or []))
    except ConformanceFailure as exc:
        result.worsen("fail", str(exc))
    except JournalTimeout as exc:
        result.worsen("fail", f"the journal hung: {exc}")
    except Exception as exc:  # noqa: BLE001 - the journal raised where the contract says it returns
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:  # a task group's
            cause = cause.exceptions[0]
        while cause.__cause__ is not None and not isinstance(cause, (ConformanceFailure, Blocked)):  # Hypothesis wraps
            cause = cause.__cause__
        if isinstance(cause, Blocked):
            result.worsen("blocked", str(cause), blocked_by=cause.by)
        elif isinstance(cause, ConformanceFailure):
            result.worsen("fail", str(cause))
        else:
            result.worsen("fail", f"the journal raised {type(cause).__name__}: {str(cause)[:500]}")
    finally:
        kit.close_all()
    return result


@contextmanager
def _kit(spec: str, factory: Factory, **options: Any) -> Iterator[Kit]:
    root = Path(tempfile.mkdtemp(prefix="akc-journal-"))
    try:
        with start_blocking_portal() as portal:
            yield Kit(spec, factory, portal, root, **options)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_kit(spec: str, *, reqs: list[str] | None = None, timeout_s: float = 30.0, examples_scale: float = 1.0,
            kills: int = 3, seed: int = 0, factory: Factory | None = None, name: str | None = None) -> Report:
    """Certify the journal of ``spec`` (or ``factory``) on the kit's requirements (``reqs``: only those)."""
    started = time.perf_counter()
    catalog = journal_requirements()
    known = {r.id for r in catalog}
    unknown = [r for r in reqs or [] if r not in known]
    if unknown:
        raise UsageError(f"unknown journal requirement {', '.join(unknown)} (see conformance/catalog/journal.toml)")
    name = name or spec
    if factory is None:
        spec, factory = resolve(spec)
    chosen = [r for r in catalog if reqs is None or r.id in reqs]
    with _kit(spec, factory, timeout_s=timeout_s, examples_scale=examples_scale, kills=kills, seed=seed) as kit:
        try:
            caps = capabilities_of(kit.journal().inner)
        except UsageError:
            raise
        except Exception as exc:  # noqa: BLE001 - untrusted: its failure to start is said in one line
            raise JournalUnavailable(f"the journal could not be opened: {type(exc).__name__}: {str(exc)[:300]}") from None
        finally:
            kit.close_all()
        ids = {r.id for r in chosen if all(c in caps for c in r.needs)}
        checks = [run_check(kit, c) for c in CHECKS if c.req in ids]
    results = [requirement_verdict(r, [c for c in checks if r.id in c.requirement_ids], caps) for r in chosen]
    summary: dict[str, int] = {}
    for r in results:
        summary[r.verdict] = summary.get(r.verdict, 0) + 1
    return Report(
        suite=SuiteInfo(version=__version__, catalog_version=JOURNAL_CATALOG_VERSION),
        kernel=KernelInfo(name=name, version="", profiles=[PROFILE], capabilities=caps),
        profiles=[PROFILE], requirements=results, summary=summary, exit_code=exit_code(results),
        duration_s=round(time.perf_counter() - started, 2), selected=reqs,
    )
