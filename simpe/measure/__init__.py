"""The measuring commands outside the loop (``simpe.cli.measure``): ``score`` (`simpe score`: every metric on a
hypothesis file and a reference file), ``rank`` (`simpe rank`: Yan et al. (2022)'s top region and Monte Carlo study of a
model or a store, and the systems correlation) and ``sensitivity`` (`simpe sensitivity`: Amrhein and Sennrich (2022)'s
MBR sensitivity of a utility). Import from the modules."""
