"""Typed options of pluggable parts: fields that carry their flag, help and parser.

A part (a planning method, a simulator policy part, a sharing policy) declares its own
options as a frozen dataclass of :func:`option` fields. The command line builds its flags
from them, options files and ``gpuplan bench`` specs give them by key, and the API passes
them as a mapping or as the typed object: every route goes through :func:`build_options`,
so a setting the part does not take is refused the same way everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import MAX_TIME_S


def option(default: Any, flag: str, help: str, *, parse: Callable[[str], Any] | None = None,
           choices: Sequence[str] | None = None, metavar: str | None = None) -> Any:
    """A part's option: a dataclass field that knows its flag, help and parser.

    Parameters
    ----------
    default
        The default, written here once for the API, the CLI and bench specs.
    flag
        The command-line flag (``--policy``).
    help
        One line for ``--help``.
    parse
        Turns the text of a flag or spec value into the value; None: ``choices`` or text.
    choices
        The names the value may take.
    metavar
        How ``--help`` shows the value.
    """
    return field(default=default, metadata={
        "flag": flag, "help": help, "parse": parse,
        "choices": None if choices is None else tuple(choices), "metavar": metavar,
    })


@dataclass(frozen=True)
class NoOptions:
    """The options of a part that takes none of its own."""


class Part(Protocol):
    """A pluggable part: its name in its registry, a line of help and its typed options.

    Planning methods, the simulator's admissions, schedulers and placements, and the
    sharing policies all declare these, so the command line, options files, bench specs
    and the API build their options the same way (:func:`part_options`).
    """

    #: The name the part is registered under.
    name: ClassVar[str]
    #: One line for ``--help``.
    description: ClassVar[str]
    #: Its own options: a frozen dataclass of :func:`option` fields.
    options_type: ClassVar[type[Any]]


def check_range(name: str, value: float | None, low: float, high: float,
                closed: bool = True) -> None:
    """Refuse ``value`` outside ``[low, high]`` (``(low, high]`` when not ``closed``).

    Raises
    ------
    InputError
        Naming the setting and its range.
    """
    if value is None:
        return
    if (value >= low if closed else value > low) and value <= high:
        return
    shown = f"{high:g}" if isinstance(high, float) else str(high)
    raise InputError(setting(name), "", f"{value!r} is out of range: expected "
                     f"{'from' if closed else 'above'} {low} to {shown}")


def option_fields(options_type: type[Any]) -> list[dataclasses.Field[Any]]:
    """The :func:`option` fields of a part's options type."""
    return [f for f in dataclasses.fields(options_type) if "flag" in f.metadata]


def takes(options_type: type[Any], keys: bool = False) -> str:
    """The settings an options type holds, for messages: marked (:func:`setting`) or as keys."""
    listed = [f.name if keys else setting(f.name) for f in option_fields(options_type)]
    return ", ".join(listed) if listed else "no options of its own"


def build_options(options_type: type[Any], given: Mapping[str, Any], owner: str,
                  source: str | None = None) -> Any:
    """A part's typed options from settings by key or flag, text or value.

    Parameters
    ----------
    options_type
        The part's frozen dataclass of :func:`option` fields.
    given
        Setting name (a field name such as ``round_s``, or its flag with or without
        ``--``) to value; a text value is parsed as the flag would parse it.
    owner
        The part, for messages (``method 'balance'``).
    source
        The file or spec the settings were written in, whose keys messages then name;
        None for settings given by name (the API, the command line).

    Raises
    ------
    InputError
        For a setting the part does not take (naming it, the part and what it does
        take), or a value that does not parse or is out of range.
    """
    found = {key: _field_of(options_type, key) for key in given}
    unknown = [key for key, field_ in found.items() if field_ is None]
    if unknown:
        if source is not None:
            raise InputError(source, unknown[0], f"{owner} does not take {unknown[0]}; it "
                             f"takes {takes(options_type, keys=True)}")
        bare = [key.lstrip("-").replace("-", "_") for key in unknown]
        raise InputError(setting(bare[0]), "", f"{owner} does not take "
                         f"{', '.join(map(setting, bare))}; it takes {takes(options_type)}")
    values: dict[str, Any] = {}
    for key, value in given.items():
        field_ = found[key]
        assert field_ is not None
        if isinstance(value, str):
            value = _parsed(owner, field_, value, source, key)
        values[field_.name] = value
    try:
        return options_type(**values)
    except InputError as exc:
        if source is None:
            raise
        # Checks across settings name a setting; a file or spec names its key.
        raise InputError(source, exc.source.strip("`"), exc.message) from None


def part_options(part: Part | type[Part], kind: str, given: Mapping[str, Any],
                 source: str | None = None) -> Any:
    """A registered part's typed options from settings by key or flag (:func:`build_options`).

    ``kind`` says what the part is in messages (``method``, ``scheduler``...).
    """
    return build_options(part.options_type, given, f"{kind} {part.name!r}", source)


def declared_options(parts: Iterable[Part | type[Part]]
                     ) -> dict[str, tuple[dataclasses.Field[Any], list[str]]]:
    """Every option the parts declare, once by flag, with the names of the parts taking it.

    The command line adds one flag for each. Parts that share an option declare the same
    field (``partitions`` comes from :func:`~gpuplan.parts.allocation.partitions_option`).

    Raises
    ------
    TypeError
        If two parts declare one flag differently: a bug of a registered part.
    """
    found: dict[str, tuple[dataclasses.Field[Any], list[str]]] = {}
    for part in parts:
        for f in option_fields(part.options_type):
            flag = f.metadata["flag"]
            field_, takers = found.setdefault(flag, (f, []))
            if (field_.name, field_.default, field_.metadata) != (
                    f.name, f.default, f.metadata):
                raise TypeError(f"parts declare {flag} differently: {takers[0]!r} and "
                                f"{part.name!r}; declare it once and share it")
            takers.append(part.name)
    return found


def takes_key(options_type: type[Any], key: str) -> bool:
    """Whether an options type takes a setting given as ``key`` (a name or a flag)."""
    return _field_of(options_type, key) is not None


def _field_of(options_type: type[Any], key: str) -> dataclasses.Field[Any] | None:
    """The option a setting given by field name or flag (with or without dashes) sets."""
    bare = key.lstrip("-")
    for f in option_fields(options_type):
        if bare in (f.name, f.metadata["flag"].lstrip("-")) or (
                bare.replace("_", "-") == f.metadata["flag"].lstrip("-")):
            return f
    return None


def _parsed(owner: str, f: dataclasses.Field[Any], text: str, source: str | None,
            key: str) -> Any:
    """A setting's text parsed as its flag parses it, or an error naming it and the part."""
    where = (setting(f.name), "") if source is None else (source, key)
    choices = f.metadata["choices"]
    if choices is not None and f.metadata["parse"] is None:
        if text not in choices:
            raise InputError(*where, f"unknown value {text!r}; {owner} takes "
                             f"{' or '.join(choices)}")
        return text
    parse = f.metadata["parse"]
    if parse is None:
        return text
    try:
        return parse(text)
    except (ValueError, TypeError) as exc:
        raise InputError(*where, f"{exc} ({owner})") from None


def parse_bool(text: str) -> bool:
    """``true``/``false`` (and ``1``/``0``, ``yes``/``no``) as a bool."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def parse_number(convert: Callable[[str], float], low: float, high: float,
                 closed: bool = True) -> Callable[[str], Any]:
    """A parser of numbers from ``low`` to ``high`` (above ``low`` when not ``closed``)."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            value = float("nan")
        if not ((value >= low if closed else value > low) and value <= high):
            shown = f"{high:g}" if isinstance(high, float) else str(high)
            raise ValueError(f"expected a number {'from' if closed else 'above'} {low} to "
                             f"{shown}, got {text!r}")
        return value
    return parse


#: Seconds up to the instance format's longest time: time limits, ticks, rounds.
parse_seconds = parse_number(float, 0, MAX_TIME_S, closed=False)
