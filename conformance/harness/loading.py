"""Turn an adapter spec (``pkg.mod:factory``) into a live adapter, with one-line errors.

Every way the spec can be wrong gives a :class:`~conformance.errors.UsageError` naming the spec
and what is wrong (the CLI prints it and exits 2). Specs with a scheme (``stdio:<command>``, for
the wire protocol to out-of-process kernels) are dispatched through :data:`SCHEMES`, which the
wire-protocol module fills in when it lands.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from conformance.boundary.adapter import AdapterInfo
from conformance.errors import UsageError

DEFAULT_ADAPTER = "reference_kernel.adapter:factory"

#: scheme → function(rest of the spec) returning an adapter. Built-in schemes are named here and
#: imported on first use (the wire protocol is a layer below the harness and knows nothing of it);
#: others are added with :func:`register_scheme`.
BUILTIN_SCHEMES: dict[str, str] = {"stdio": "conformance.wire.client:load_stdio"}
SCHEMES: dict[str, Callable[[str], Any]] = {}


def register_scheme(scheme: str, loader: Callable[[str], Any]) -> None:
    """Let ``<scheme>:<rest>`` specs be loaded by ``loader(rest)`` (e.g. the stdio wire protocol)."""
    SCHEMES[scheme] = loader


def _scheme_of(spec: str) -> str | None:
    head, sep, _ = spec.partition(":")
    if sep and head in SCHEMES:
        return head
    if sep and head in BUILTIN_SCHEMES:
        module, _, attr = BUILTIN_SCHEMES[head].partition(":")
        try:
            SCHEMES[head] = getattr(importlib.import_module(module), attr)
        except ImportError:
            return None
        return head
    return None


def load_factory(spec: str) -> Callable[[], Any]:
    """Import ``pkg.mod:factory`` and return the factory (not called)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(
            f"adapter {spec!r}: expected 'pkg.module:factory' (a Python adapter) or 'stdio:CMD' (a program "
            "of any language speaking docs/protocol.md)"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        raise UsageError(
            f"adapter {spec!r}: module {missing!r} not found (for a kernel that is a program, use 'stdio:CMD')"
        ) from None
    except Exception as exc:  # the module itself raised on import
        raise UsageError(
            f"adapter {spec!r}: importing {module_name!r} raised {type(exc).__name__}: {_first_error(exc)}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"adapter {spec!r}: {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise UsageError(f"adapter {spec!r}: {attr!r} is not callable")
    return obj


def check_adapter(adapter: Any, where: str) -> Any:
    """The object must have an ``info`` (AdapterInfo or its dict) and an ``async run``; anything
    raised while inspecting it is a one-line UsageError too."""
    try:
        return _check_adapter(adapter, where)
    except UsageError:
        raise
    except Exception as exc:  # an ``info`` property that raises, a ``run`` that cannot be read…
        raise UsageError(f"adapter {where}: inspecting the adapter raised {type(exc).__name__}: {_first_error(exc)}") from None


def _check_adapter(adapter: Any, where: str) -> Any:
    info = getattr(adapter, "info", None)
    if info is None:
        raise UsageError(f"adapter {where}: the factory returned {type(adapter).__name__}, which has no 'info'")
    try:
        info = validated_info(info)
    except (ValidationError, TypeError, ValueError) as exc:
        raise UsageError(f"adapter {where}: 'info' is not a valid AdapterInfo ({_first_error(exc)})") from None
    if not isinstance(adapter.info, AdapterInfo):
        try:
            adapter.info = info
        except AttributeError:
            pass
    if info.readings:
        from conformance.catalog.readings import validate_declared

        problems = validate_declared(info.readings)
        if problems:
            raise UsageError(f"adapter {where}: 'info.readings': {problems[0]}")
    run = getattr(adapter, "run", None)
    if run is None or not callable(run):
        raise UsageError(f"adapter {where}: {type(adapter).__name__} has no 'run' method")
    if not (inspect.iscoroutinefunction(run) or inspect.iscoroutinefunction(getattr(run, "__call__", None))):
        raise UsageError(f"adapter {where}: 'run' must be 'async def run(scenario, doubles)'")
    return adapter


def validated_info(info: Any) -> AdapterInfo:
    """A validated copy of an adapter's ``info`` (an AdapterInfo, its dict, or pairs): an
    AdapterInfo built with ``model_construct`` (or changed since) is validated again, and the
    copy the run uses cannot change under it."""
    if isinstance(info, AdapterInfo):
        info = info.model_dump(warnings=False)
    return AdapterInfo.model_validate(info if isinstance(info, dict) else dict(info))


def adapter_info(adapter: Any) -> AdapterInfo:
    """The adapter's info as the run uses it: a validated copy (:func:`validated_info`);
    UsageError if reading or validating it fails."""
    try:
        return validated_info(adapter.info)
    except ValidationError as exc:
        raise UsageError(f"adapter: 'info' is not a valid AdapterInfo ({_first_error(exc)})") from None
    except Exception as exc:
        raise UsageError(f"adapter: reading its info raised {type(exc).__name__}: {_first_error(exc)}") from None


def load_adapter(spec: str) -> Any:
    """Build the adapter named by ``spec``; raise UsageError (one line) on any problem."""
    spec = spec.strip()
    scheme = _scheme_of(spec)
    if scheme is not None:
        try:
            adapter = SCHEMES[scheme](spec.partition(":")[2])
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(f"adapter {spec!r}: {type(exc).__name__}: {_first_error(exc)}") from None
        return check_adapter(adapter, repr(spec))
    factory = load_factory(spec)
    try:
        adapter = factory()
    except Exception as exc:
        raise UsageError(f"adapter {spec!r}: the factory raised {type(exc).__name__}: {_first_error(exc)}") from None
    return check_adapter(adapter, repr(spec))


def _first_error(exc: Exception) -> str:
    """One line: the first validation error, or the exception's first line."""
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        return f"{loc}: {err.get('msg')}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
