"""``SelfRoute``'s pydantic fields of the route settings, derived from their declarations.

Each adapter setting of :class:`~selfroute.RouteConfig` (:func:`selfroute._settings.adapter_kwargs`)
becomes a pydantic field of the same name, type and default: checked by pydantic when the
declaration says so (an object such as a :class:`~selfroute.PriceTable` as ``InstanceOf``:
taken as it is, never rebuilt from a dict), else ``SkipValidation`` so that
``RouteConfig`` checks it and a bad value gets the core's message. :func:`settings_model` adds
them to a model class with :func:`pydantic.create_model`; ``SelfRoute`` inherits them.
"""

from __future__ import annotations

import functools
import operator
import types
from typing import Any, Union, cast, get_args, get_origin

from pydantic import InstanceOf, SkipValidation, create_model

from selfroute._settings import AdapterKwarg, adapter_kwargs, document_settings

__all__ = ["field_type", "setting_fields", "settings_model"]


def _instance_of(kind: Any) -> Any:
    # a selfroute object (a PriceTable) is taken as it is, never rebuilt from a dict
    if isinstance(kind, type) and kind.__module__ not in ("builtins", "typing"):
        return cast(Any, InstanceOf)[kind]
    return kind


def field_type(kwarg: AdapterKwarg) -> Any:
    """The pydantic annotation of one adapter keyword argument."""
    kind = kwarg.type
    if not kwarg.checked:
        return cast(Any, SkipValidation)[kind]
    if get_origin(kind) in (Union, types.UnionType):
        return functools.reduce(operator.or_, [_instance_of(arg) for arg in get_args(kind)])
    return _instance_of(kind)


def setting_fields(config_class: type, skip: Any = ()) -> dict[str, Any]:
    """``create_model`` field definitions (``(annotation, default)``) of ``config_class``'s
    adapter settings, in field order, leaving out the names in ``skip``."""
    return {
        kw.name: (field_type(kw), kw.default)
        for kw in adapter_kwargs(config_class)
        if kw.name not in skip
    }


def settings_model(
    base: type, config_class: type, doc: str | None = None, name: str | None = None
) -> Any:
    """A subclass of the pydantic model ``base`` with ``config_class``'s adapter settings as
    fields (those ``base`` has not already) and ``config_class`` as its ``_config_class``.

    Args:
        base: The model class (``SelfRoute``'s own fields, or ``SelfRoute`` itself).
        config_class: ``RouteConfig`` or a subclass declared the same way.
        doc: The docstring, completed with an ``Args:`` entry for each setting it does not
            name (:func:`selfroute._settings.document_settings`); default: ``base``'s.
        name: The class name; default: ``base``'s.
    """
    fields = setting_fields(config_class, skip=getattr(base, "model_fields", {}))
    model: Any = create_model(
        name or base.__name__,
        __base__=base,
        __module__=base.__module__,
        __doc__=document_settings(base.__doc__ if doc is None else doc, config_class),
        **fields,
    )
    model._config_class = config_class
    return model
