"""The online loop, one segment at a time: translate -> correct -> score -> update -> record.

The files follow the loop's shape:

The loop by lifetime:

* ``plan``: what is checked before the model loads (``RunPlan``: settings, stream, method, decoder, glossary, probes,
  scorer; ``group_identity`` and ``run_path``: a run's group and folder from its config alone).
* ``segment``: one segment of one run, top to bottom (``SegmentSteps.step`` = ``translate`` then ``learn``: the
  correction, the score, the update, the record); ``draft``: a segment translated and not yet learnt from.
* ``run``: ``Loop`` (a plan, then the model loaded and the method attached), the run over the stream (checkpoints,
  resume, the end: ``restore``, ``finish``, public for ``simpe serve``), ``check_runs`` and ``simulate``.
* ``group``: runs in lockstep, one pass for all (``Group``: one segment for all of them in ``_segment``; which runs
  go together); ``group_update``: their update's repetitions together (docs/lockstep.md).
* ``phases``: the clock, a context manager per phase (``Phases``) and the time inside the model (``ModelTimer``).
* ``protocols``: where a post-edit comes from: the simulated post-editor, the simulated interactive translator
  (``interactive``: its sessions and effort), or a person at ``simpe serve``; one interface, ``Protocol.correct``.
* ``update``: the shared SGD update on one pair, with ``undo`` (a step undone bit for bit) and ``masters`` (float32
  master copies of bfloat16/float16 tensors); ``malloc`` keeps freed memory between steps.
* ``stream``: the segments a run reads (the stream, the probes' sentences, a method's own train/dev sentences).
* ``warmstart``: adaptation on the translator's memory before the stream.
* ``probes``: the observers that measure the model while it adapts (the ranking snapshot, the forgetting probe).
* ``summary``: a complete run's summary.json.
* ``select_fixed``: `simpe select-fixed`, the `fixed` method's tensors chosen by adapting on the dev stream.
* ``dryrun``: `simpe simulate --dry-run`, whether a run fits and how long it takes, from the model's shapes and each
  method's own footprint (``Method.footprint``), without loading weights.

Import from the modules (``from simpe.loop.run import Loop``): this file imports nothing, so that a module's code
fingerprint (``simpe.fingerprint``) holds only what it uses.
"""
