"""Model scripts from files (``akc model-server --script``): a list of responses, a model or a
whole scenario, read into a :class:`ModelDef` with one clear message per bad field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from conformance.boundary.scenario import ModelDef, ModelResponse, Scenario

JSON = dict[str, Any]

_RESPONSES = TypeAdapter(list[ModelResponse])


class ScriptError(ValueError):
    """A model script that cannot be used; the message names the file and the bad field."""


def load_script(source: str | Path | list[Any] | JSON, *, where: str | None = None) -> ModelDef:
    """A script as a :class:`ModelDef`, from a file or parsed JSON.

    Accepted shapes: a bare list of ``ModelResponse``; a ``ModelDef`` (``{"name", "pricing",
    "responses"}``); a whole ``Scenario`` (its ``model`` is used).
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        where = where or str(path)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"model script {where}: cannot read it ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise ScriptError(f"model script {where}: not valid JSON ({exc})") from None
        except RecursionError:
            raise ScriptError(f"model script {where}: nested too deeply") from None
    else:
        data, where = source, where or "(inline)"
    try:
        if isinstance(data, list):
            return ModelDef(responses=_RESPONSES.validate_python(data))
        if isinstance(data, dict) and "profile" in data and "name" in data:
            return Scenario.model_validate(data).model
        if isinstance(data, dict):
            return ModelDef.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        raise ScriptError(f"model script {where}: {loc}: {err.get('msg')}") from None
    except RecursionError:
        raise ScriptError(f"model script {where}: nested too deeply") from None
    raise ScriptError(f"model script {where}: expected a list of responses, a model or a scenario")
