"""Misbehaving in-process adapters: each wraps the reference kernel's adapter and misbehaves in
one way (on its Nth scenario, where the harness must still run the earlier ones normally)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import anyio

from reference_kernel.adapter import factory as reference

_runs = 0


def _nth() -> int:
    global _runs
    _runs += 1
    return _runs


class Wrapper:
    def __init__(self) -> None:
        self.inner = reference()
        self.info = self.inner.info

    async def run(self, scenario: Any, doubles: Any) -> Any:
        return await self.inner.run(scenario, doubles)


class SignalOwnProcess(Wrapper):
    """Sends SIGNUM to its own process on its 3rd scenario (a user's Ctrl-C, a CI's SIGTERM)."""

    signum = signal.SIGINT

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 3:
            os.kill(os.getpid(), self.signum)
        return await self.inner.run(scenario, doubles)


class Sigterm(SignalOwnProcess):
    signum = signal.SIGTERM


class BlocksLoop(Wrapper):
    """Blocks the event loop with a synchronous sleep of 30 s on its first scenario."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 1:
            time.sleep(30)
        return await self.inner.run(scenario, doubles)


class OsExit(Wrapper):
    """Ends the whole process with os._exit(0) on its 3rd scenario (of FEW: after TOOL-004's two,
    which pass, LOOP-001's)."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 3:
            os._exit(0)
        return await self.inner.run(scenario, doubles)


class OsExitInOrderScenario(Wrapper):
    """Ends the whole process with os._exit(0) in the smoke scenario of TOOL-003 only (results in
    the order the model asked): with ``--jobs``, one shard dies and the others run on."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if "in the order the model asked" in scenario.name:
            os._exit(0)
        return await self.inner.run(scenario, doubles)


class RaisesSystemExit(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 1:
            raise SystemExit(0)
        return await self.inner.run(scenario, doubles)


class RaisesKeyboardInterrupt(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 1:
            raise KeyboardInterrupt
        return await self.inner.run(scenario, doubles)


class InfoRaises(Wrapper):
    @property  # type: ignore[override]
    def info(self) -> Any:
        raise RuntimeError("info is broken")

    @info.setter
    def info(self, value: Any) -> None:
        pass


class MisspeltCapability(Wrapper):
    def __init__(self) -> None:
        super().__init__()
        self.info = {**self.inner.info.model_dump(), "capabilities": ["subagent", "max_cost_usd "]}


class ConstructedInfo(Wrapper):
    """Builds its info with ``model_construct`` (no validation): a misspelt capability."""

    def __init__(self) -> None:
        super().__init__()
        self.info = type(self.inner.info).model_construct(**{**dict(self.inner.info), "capabilities": ["subagent"]})


class InfoChangesAfterRead(Wrapper):
    """Its info is valid when first read, then claims an unknown capability (a property)."""

    def __init__(self) -> None:
        self.reads = 0
        super().__init__()

    @property  # type: ignore[override]
    def info(self) -> Any:
        self.reads += 1
        info = self.inner.info
        if self.reads > 1:
            info = type(info).model_construct(**{**dict(info), "capabilities": [*info.capabilities, "max_cost_usd "]})
        return info

    @info.setter
    def info(self, value: Any) -> None:
        pass


class ManyCapabilities(Wrapper):
    def __init__(self) -> None:
        super().__init__()
        self.info = {**self.inner.info.model_dump(), "capabilities": [f"cap{i}" for i in range(100_000)]}


class _SlowDoubles:
    """The real doubles, each model call 0.2 s late: a correct kernel on a slow machine."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def model_stream(self, request: Any, turn: Any) -> Any:
        stream = self._inner.model_stream(request, turn)

        async def late() -> Any:
            await anyio.sleep(0.2)
            async for chunk in stream:
                yield chunk

        return late()


class Slow(Wrapper):
    """Correct, but every model call takes 0.2 s and every scenario needs 25 of them."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        return await self.inner.run(scenario, _SlowDoubles(doubles))


class HangsAlways(Wrapper):
    """Runs the kernel, then never returns: every scenario hangs."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        await anyio.sleep_forever()


class MutatesTimeout(Wrapper):
    """Gives itself 1000 s on the scenario object it was handed, then hangs."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        scenario.timeout_s = 1000.0
        await anyio.sleep_forever()


class CallsToolNotOffered(Wrapper):
    """Runs the kernel, then also invokes a tool the scenario never offered."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        result = await self.inner.run(scenario, doubles)
        turn = {"profile_id": "default", "session_id": "s", "turn_id": "t", "parent_turn_id": None, "tags": [], "depth": 0}
        await doubles.invoke_tool({"id": "zz1", "name": "rm_rf", "args": {}}, turn)
        return result


#: Text a hostile kernel sends: screen clear, cursor home, window title, clipboard write (OSC 52),
#: a hyperlink, a forged "conformant" line, NUL, lone surrogates, a bidi override, a C1 CSI.
HOSTILE = (
    "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
    "\r\nconformant\n\x00\ud800\u202eevil\x9b31m|<b>&</b>"
)


class HostileText(Wrapper):
    """Names itself with hostile text, and raises it as its error on its first scenario."""

    def __init__(self) -> None:
        super().__init__()
        self.info = self.inner.info.model_copy(update={"name": "k" + HOSTILE, "version": HOSTILE})

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 1:
            raise RuntimeError(HOSTILE)
        return await self.inner.run(scenario, doubles)


class BreaksOutputFolder(Wrapper):
    """On its first scenario, replaces the folder ``$ZOO_OUTDIR`` (where the reports go, checked
    writable before the run) with a file: every report write fails at the end of the run."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 1:
            folder = os.environ["ZOO_OUTDIR"]
            os.rename(folder, folder + ".moved")
            with open(folder, "w") as fh:
                fh.write("not a folder any more\n")
        return await self.inner.run(scenario, doubles)


def factory(name: str) -> Any:
    return globals()[name]()


for _name in list(globals()):
    obj = globals()[_name]
    if isinstance(obj, type) and issubclass(obj, Wrapper):
        globals()[_name.lower()] = obj


class SignalParent(Wrapper):
    """Sends SIGTERM to its parent (the supervisor of the forked run) on its 3rd scenario: as a CI
    runner cancelling the job would."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        if _nth() == 3:
            # Never the test runner itself: unsupervised (no fork), the adapter signals its own process.
            parent = os.getppid()
            os.kill(parent if str(parent) != os.environ.get("ZOO_TEST_PID") else os.getpid(), signal.SIGTERM)
        return await self.inner.run(scenario, doubles)


signalparent = SignalParent
