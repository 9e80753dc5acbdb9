"""The named languages (``number``, ``arithmetic``, ...): each one a regex or a GBNF grammar."""

from __future__ import annotations

ARITHMETIC_GBNF = r"""
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws ("*" | "//" | "/" | "%") ws factor)*
factor ::= "-" ws factor | power
power  ::= atom (ws "**" ws factor)?
atom   ::= number "%"? | "(" ws expr ws ")" | fn "(" ws expr (ws "," ws expr)* ws ")" | "pi"
fn     ::= "sqrt" | "round" | "abs" | "min" | "max" | "floor" | "ceil"
number ::= ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,10})?  # no leading zeros: 049
ws     ::= " "?
"""

NAMED: dict[str, tuple[str, str, str]] = {
    # name: (form, source, description): the form is a key of language.FORMS
    "number": ("regex", r"-?[0-9]+(\.[0-9]+)?", "a number such as 52.8"),
    "integer": ("regex", r"-?[0-9]+", "a whole number such as 180"),
    "yes-no": ("regex", r"yes|no", "yes or no"),
    "query": ("regex", r"[^ \t\r\n][^\r\n]{0,119}", "a short single-line query"),
    "line": ("regex", r"[^\r\n]+", "one line of text"),
    "arithmetic": (
        "gbnf",
        ARITHMETIC_GBNF,
        "an arithmetic expression such as 0.17 * 240 + 12",
    ),
    # Grounded answers: the language is made at run time from the last observation
    # (fllm_cli.ltl.languages.grounded); these rules only stand in until then.
    "observed-number": ("regex", r"-?[0-9]+(\.[0-9]+)?", "a number from the last observation"),
    "observed-span": ("regex", r"[^\r\n]{1,200}", "words copied from the last observation"),
}
OBSERVED = ("observed-number", "observed-span")
