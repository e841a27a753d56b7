"""PLACEHOLDER being written by the scale-out work (bench scale)."""


def add_arguments(kinds) -> None:
    kinds.add_parser("scale", help="(in progress)")


def run(args):
    raise ValueError("bench scale is not written yet")
