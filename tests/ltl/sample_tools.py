"""A tool module for --tool-module tests."""


def shout(text: str) -> str:
    """returns the input in capitals"""
    return text.upper()


def broken(text: str) -> str:
    """always fails"""
    raise RuntimeError("disk on fire")


TOOLS = [shout, broken]
