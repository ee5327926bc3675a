"""Check simpe's SBLEU (Nakov BLEU+1) against the C++ scorer of Simianer et al. (2019)'s authors on whole runs.

The scorer is ``PerSentenceBleuScorer`` ("Nakov et al. '12") in ``training/dtrain/score.h``
of github.com/pks/cdec-dtrain-legacy (the dtrain of the first author of Simianer et al. (2019), commit 8d900ca;
cdec's later ``NakovBleuScorer`` computes the same). This script compiles that header
unchanged with a small driver (``dtrain.h`` stubbed with the typedefs it needs), feeds it the 13a tokens
of every segment's hypothesis and post-edit (sacreBLEU's tokenizer, the tokens simpe's BLEU
statistics count), and compares its per-segment scores (x 100) with the ``metrics.sbleu``
simpe logged, and the means. Exits 1 when any segment differs by more than --tolerance.

Needs g++ (Debian: ``apt-get install g++``) and a clone of the repository. CI does not:
this is a verification script, not a test.

Usage: python scripts/check_sbleu.py --score-h .../training/dtrain/score.h RUN_OR_GROUP...
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from simpe.rundir.layout import is_run_dir
from simpe.rundir.reader import read_jsonl

DTRAIN_H = """#include <map>
#include <vector>
#include <cmath>
#include <cassert>
#include <cstdlib>
#include <limits>
#include <iostream>
using namespace std;
typedef double score_t;
typedef double weight_t;
typedef int WordID;
inline size_t abs(size_t x) { return x; }  // score.h takes abs() of a size_t difference (one reference: unused)
"""

DRIVER = """#include "score.h"
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <iomanip>
// reads two files of space-separated tokens (hypotheses, references), prints one score per line
static vector<WordID> ids(const string& line, unordered_map<string, WordID>& vocab) {
  vector<WordID> out; istringstream in(line); string tok;
  while (in >> tok) { auto it = vocab.find(tok); if (it == vocab.end()) it = vocab.emplace(tok, (WordID)vocab.size()).first;
                      out.push_back(it->second); }
  return out;
}
int main(int argc, char** argv) {
  ifstream hyps(argv[1]), refs(argv[2]); string h, r; unordered_map<string, WordID> vocab;
  dtrain::PerSentenceBleuScorer scorer(4);
  cout << setprecision(17);
  while (getline(hyps, h) && getline(refs, r)) {
    vector<WordID> ref = ids(r, vocab);
    vector<dtrain::Ngrams> ngrams(1, dtrain::MakeNgrams(ref, 4)); vector<size_t> lengths(1, ref.size());
    cout << scorer.Score(ids(h, vocab), ngrams, lengths) << "\\n";
  }
}
"""


def compile_scorer(score_h: Path, workdir: Path) -> Path:
    (workdir / "dtrain.h").write_text(DTRAIN_H)
    (workdir / "score.h").write_text(score_h.read_text())
    (workdir / "driver.cc").write_text(DRIVER)
    binary = workdir / "bleu_plus_one"
    subprocess.run(["g++", "-O2", "-std=c++11", "-o", str(binary), str(workdir / "driver.cc")], check=True, cwd=workdir)
    return binary


def check_run(run: Path, binary: Path, workdir: Path, tolerance: float) -> bool:
    tok = Tokenizer13a()
    records = list(read_jsonl(run / "segments.jsonl"))
    hyp, ref = workdir / "hyp.13a", workdir / "ref.13a"
    hyp.write_text("".join(tok(r["hypothesis"]) + "\n" for r in records), encoding="utf-8")
    ref.write_text("".join(tok(r["reference"]) + "\n" for r in records), encoding="utf-8")
    out = subprocess.run([str(binary), str(hyp), str(ref)], check=True, capture_output=True, text=True).stdout.split()
    theirs = [100 * float(v) for v in out]
    ours = [float(r["metrics"]["sbleu"]) for r in records]
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    same = len(theirs) == len(ours) and worst <= tolerance
    print(f"{run.name:<12} {len(ours)} segments  SBLEU simpe {sum(ours) / len(ours):.4f}  dtrain {sum(theirs) / len(theirs):.4f}  "
          f"largest segment difference {worst:.2e}  {'same' if same else 'DIFFERENT'}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--score-h", type=Path, required=True, help="training/dtrain/score.h of github.com/pks/cdec-dtrain-legacy")
    parser.add_argument("--tolerance", type=float, default=1e-6, help="largest allowed per-segment difference (default: %(default)s)")
    parser.add_argument("paths", nargs="+", type=Path, help="run directories or group folders")
    args = parser.parse_args()
    runs = [p for path in args.paths for p in ([path] if is_run_dir(path) else sorted(q for q in path.iterdir() if is_run_dir(q)))]
    with tempfile.TemporaryDirectory() as tmp:
        binary = compile_scorer(args.score_h, Path(tmp))
        ok = all([check_run(run, binary, Path(tmp), args.tolerance) for run in runs])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
