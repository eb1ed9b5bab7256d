"""How much text a person may type and the lab stores: labels of runs, sweeps and comparisons, names of a
comparison's configurations, a whole config.pbtxt (the raw editor). Longer text is refused with a message, never
cut silently; text the lab makes itself from them is fitted with fit()."""
from __future__ import annotations

MAX_LABEL_CHARS = 200  # a run's, a sweep's, a comparison's label
MAX_ARM_CHARS = 100  # a comparison's configuration: its trials are labelled '<name> — trial N' within MAX_LABEL_CHARS
MAX_CONFIG_CHARS = 256 * 1024  # a whole config.pbtxt typed in the raw editor or applied as a text


def label_problem(text: str, what: str = "a label", most: int = MAX_LABEL_CHARS) -> str | None:
    """Return why text cannot be stored as `what` (None when it can)."""
    if not isinstance(text, str):
        return f"{what} must be text, got {type(text).__name__}"
    if len(text.strip()) > most:
        return f"{what} is {len(text.strip()):,} characters; it may have at most {most}: shorten it"
    return None


def check_label(text: str, what: str = "a label", most: int = MAX_LABEL_CHARS) -> str:
    """Return text stripped; ValueError naming `what` when it is longer than `most` characters."""
    wrong = label_problem(text, what, most)
    if wrong:
        raise ValueError(wrong)
    return text.strip()


def fit(text: str, most: int = MAX_LABEL_CHARS) -> str:
    """Return a label the lab makes (from names already bounded) cut to `most` characters, marked with '…'."""
    return text if len(text) <= most else text[:most - 1] + "…"


def config_size_problem(text: str) -> str | None:
    """Return why a config text is too large to edit or apply (None when it is not)."""
    if len(text) <= MAX_CONFIG_CHARS:
        return None
    return (f"the config text is {len(text):,} characters; a config.pbtxt edited or applied here may have at most "
            f"{MAX_CONFIG_CHARS:,} (256 KiB): edit the file itself, or move large data out of the config")
