"""What the layer-time converters (scripts/convert-*-layers.py) write alike: times in the cases'
number format and notes as an indented folded block. Debian's python3 only."""
import textwrap


def fmt(x):
    """A time in seconds as the cases write it: 6 significant decimals, exponent form."""
    return f"{x:.6e}"


def wrap(text):
    """The notes as an indented folded block, lines of at most 110 characters."""
    return textwrap.fill(text.strip(), width=110, initial_indent="  ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False) + "\n"
