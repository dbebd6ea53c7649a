"""Pure parsers: text (or values read from sysfs) in, typed objects out. No I/O here, so each
parser is tested directly on real captured output; a parser that cannot make sense of its
input raises ParseError naming what it expected, and the check fails closed."""


class ParseError(ValueError):
    """The input is not what the parser expects; the message says what was wrong."""


def int_or_none(value: str | None) -> int | None:
    """``"12"`` -> 12; ``"N/A"``, ``"[N/A]"``, ``""`` or None -> None. Other text raises."""
    if value is None:
        return None
    value = value.strip()
    if value in ("", "N/A", "[N/A]", "Unknown", "[Unknown Error]", "Not Supported"):
        return None
    try:
        return int(value)
    except ValueError:
        raise ParseError(f"expected an integer or N/A, got {value!r}") from None
