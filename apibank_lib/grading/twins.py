"""A twin benchmark checked by execution: written under new names, then every gold call judged in the twin's sandbox.

:func:`make_twin` writes a twin (:func:`apibank_lib.data.twins.write_twin`) and replays its gold under each
grading protocol. A call that fails on the twin but not on the source (a search that now ranks another API first,
say: the search text holds the API's name) did not carry over: the sample is listed in ``twin.json`` with the
reason, and the grader leaves it out, as it leaves out a sample an erratum excludes. The twin then replays 100%.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from apibank_lib.data.datasets import default_data_root, load_benchmark
from apibank_lib.data.twins import CHANGES, TwinReport, twin_key, write_manifest, write_twin
from apibank_lib.env.protocols import PROTOCOLS, V2
from apibank_lib.grading.grader import Grader
from apibank_lib.grading.replay import replay

__all__ = ["make_twin"]


def make_twin(src: str | Path | None, out: str | Path, *, seed: int = 0, change: Iterable[str] = CHANGES) -> TwinReport:
    """Write the twin of a benchmark and check its gold by execution (see the module's docstring).

    Args:
        src: the source root (None: the bundled benchmark).
        out: the twin's root (must not exist, or be empty).
        seed: which synonyms are chosen.
        change: ``names`` and/or ``parameters``.

    Raises:
        ConfigError: as :func:`~apibank_lib.data.twins.write_twin`.
    """
    report = write_twin(src, out, seed=seed, change=change)
    source = load_benchmark(src if src is not None else default_data_root())
    twin = load_benchmark(out)
    failed: dict[str, str] = {}
    for protocol in PROTOCOLS.values():
        # A failure the source has too (a quirk of the paper protocol's judging, say) is the protocol's, not the twin's.
        known = {
            twin_key(f"L{level}/api/{f['dialogue']}/{f['sample_id']}", report.renaming)
            for level, figures in replay(source, protocol)["levels"].items() for f in figures["failures"]
        }
        for level, figures in replay(twin, protocol)["levels"].items():
            for f in figures["failures"]:
                key = f"L{level}/api/{f['dialogue']}/{f['sample_id']}"
                if key not in known:
                    failed.setdefault(key, f"under {protocol.name}, the call does not execute to the renamed gold ({f.get('category')})")
                elif protocol is V2:  # the source's gold fails as well: a defect of the source data, not of the twin
                    failed.setdefault(key, f"the source's gold fails under v2 too ({f.get('category')}): a defect of the source")
    # A sample whose gold an erratum of the source excludes or corrects is defective: its twin is left out too.
    errata = Grader(source).errata
    for applied in (errata.applied.values() if errata is not None else []):
        for key in applied.keys:
            failed[twin_key(key, report.renaming)] = f"the source's erratum {applied.erratum.id} ({applied.erratum.decision}) covers it"
    report.excluded = [{"key": k, "reason": failed[k]} for k in sorted(failed)]
    report.manifest["excluded"] = report.excluded
    write_manifest(report.out, report.manifest)
    checked = replay(load_benchmark(out))  # with the exclusions: every sample left must replay
    report.replay = {
        lv: f"{f['samples_correct']}/{f['samples']} ({len(f['excluded'])} excluded)" for lv, f in checked["levels"].items()
    }
    return report
