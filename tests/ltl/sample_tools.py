"""A tool module for --tool-module tests."""


def shout(text: str) -> str:
    """returns the input in capitals"""
    return text.upper()


def broken(text: str) -> str:
    """always fails"""
    raise RuntimeError("disk on fire")


TOOLS = [shout, broken]


class Square:
    """A tool that declares its input language."""

    name = "square"
    description = "returns the square of a whole number"
    input_language = "integer"

    def __call__(self, text: str) -> str:
        return str(int(text) ** 2)


TOOLS.append(Square())
