"""Paper reproductions run by `mpsim reproduce` (see mpsim.reproduce): one
module per paper, each with `PAPER` (a `mpsim.reproduce.Paper`) and
`run(ctx) -> list[Claim]`."""
