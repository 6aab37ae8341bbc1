"""Many certifications in one pytest session: collect the suite once, then run each job on it.

``akc selftest`` certifies hundreds of kernels, most against one or two requirements. Through
:func:`~conformance.harness.certify.certify`, each paid a whole ``pytest.main``: start-up, plugin
registration and the collection of every feature and property (most of a small job's time).
:func:`run_batch` starts one session that collects the whole suite with the ``akc`` plugin, and
inside it hands ``body`` a ``certify(spec, ...)`` that, for each job:

* builds the job's plugin state (adapter, profile, requirements, timeout cap) as a session of its
  own would (:func:`~conformance.harness.plugin.build_state`) and puts it in the session's place;
* selects the job's items from the one collection
  (:func:`~conformance.harness.plugin.select_items`: the same Checks, *not offered* skips applied
  at set-up instead of as marks, so nothing of one job stays on the items);
* runs each item's full test protocol through the session's hooks (the plugin's evidence, timeout,
  circuit-breaker and trace hooks run as in any run; the last item tears everything down);
* builds the Report as the plugin does at session end, stops the job's event loop, and puts the
  session's own state back.

Jobs run one after the other; a job's state is never reused. The normal ``akc run`` path does not
come here.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
import pytest

from conformance.harness import plugin
from conformance.harness.certify import SuiteOptions, hypothesis_storage, pytest_args
from conformance.harness.loading import DEFAULT_ADAPTER
from conformance.report.model import Report

#: ``certify(spec, profile=None, reqs=None, timeout_cap_s=None) -> Report`` within a batch.
Certify = Callable[..., Report]


class _Batch:
    """The pytest plugin that collects once and then runs ``body``'s jobs in its run loop."""

    def __init__(self, body: Callable[[Certify], None]) -> None:
        self.body = body
        self.items: list[pytest.Item] = []
        self.not_offered: dict[str, str] = {}
        self.session: pytest.Session | None = None
        self.failure: BaseException | None = None
        self.ran = False

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        state = config.stash.get(plugin.STATE_KEY, None)
        if state is not None:
            state.batch = True  # the plugin keeps the collection whole: each job selects

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        self.items = list(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        reason = self.not_offered.get(item.nodeid)
        if reason is not None:
            pytest.skip(reason)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        self.session = session
        try:
            self.body(self.certify)
            self.ran = True
        except BaseException as exc:  # noqa: BLE001 - raised again by run_batch, after the session
            self.failure = exc
        return True

    def certify(self, spec: str, *, profile: str | None = None, reqs: Sequence[str] | None = None,
                timeout_cap_s: float | None = None) -> Report:
        """Certify ``spec`` on the collected items; UsageError as certify() would raise it."""
        session = self.session
        assert session is not None, "certify is only usable inside run_batch's body"
        config = session.config
        home = config.stash[plugin.STATE_KEY]
        config.option.kernel = spec
        config.option.akc_profile = profile
        config.option.akc_req = [r.strip().upper() for r in reqs or []]
        config.option.akc_timeout_cap = timeout_cap_s
        state = plugin.build_state(config)
        state.collect_errors = list(home.collect_errors)
        place = plugin._STACK.index(home)
        config.stash[plugin.STATE_KEY] = state
        plugin._STACK[place] = state
        try:
            keep, _, self.not_offered = plugin.select_items(state, self.items)
            status = self._run(session, keep)
            plugin.finish_run(session, status)
            assert state.report is not None
            return state.report
        finally:
            if state.runner is not None:
                state.runner.stop()
                state.runner = None
            self.not_offered = {}
            session.shouldstop = session.shouldfail = False
            session.testsfailed = 0
            config.stash[plugin.STATE_KEY] = home
            plugin._STACK[plugin._STACK.index(state)] = home

    @staticmethod
    def _run(session: pytest.Session, items: list[pytest.Item]) -> int:
        """Run ``items`` as pytest's own run loop does; the session's exit status for them."""
        done = False
        try:
            for i, item in enumerate(items):
                nextitem = items[i + 1] if i + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                if session.shouldfail or session.shouldstop:
                    session._setupstate.teardown_exact(None)
                    return int(pytest.ExitCode.INTERRUPTED)
            done = True
        finally:
            if not done:  # an exception escaped an item: leave no fixture set up for the next job
                with contextlib.suppress(Exception):
                    session._setupstate.teardown_exact(None)
        if not items:
            return int(pytest.ExitCode.NO_TESTS_COLLECTED)
        return int(pytest.ExitCode.TESTS_FAILED if session.testsfailed else pytest.ExitCode.OK)


def run_batch(body: Callable[[Certify], None], *, extra_args: Sequence[str] = ()) -> None:
    """Collect the suite once (pytest's output is discarded) and call ``body(certify)`` inside
    that session. What ``body`` raises is raised again here, after the session has ended;
    HarnessError if the session never reached its run loop (the suite did not collect)."""
    batch = _Batch(body)
    args = pytest_args(SuiteOptions(adapter=DEFAULT_ADAPTER, extra_args=list(extra_args)))
    buffer = io.StringIO()
    with contextlib.ExitStack() as stack:
        hypothesis_storage(stack)
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = pytest.main(args, plugins=[batch])
    if batch.failure is not None:
        raise batch.failure
    if not batch.ran:
        from conformance.errors import HarnessError

        tail = "\n".join(buffer.getvalue().strip().splitlines()[-15:])
        raise HarnessError(f"the batch session never ran (pytest exit {int(code)}):\n{tail}")
