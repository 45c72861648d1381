"""`python -m mpsim` is the `mpsim` command."""

from .cli import main

main()
