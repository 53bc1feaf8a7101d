"""Gather published, externally written KernelBench candidates ("generations") into a manifest for
bench/generations_bench.py and bench/batch_bench.py (issue 34).

    python tools/gather_generations.py OUT [--mirrors /work/.mirror] [--git owner/name=GIT_DIR ...]
                                       [--kb .kb] [--judged bench/data/generations_judged.jsonl] [--count 320]

Reads git mirrors (a bare repository each, e.g. what ``git clone --mirror`` makes; found as
MIRRORS/<owner>+<name>/repo unless --git names one) and writes OUT/manifest.jsonl plus each candidate as
OUT/<prefix>/<id>.py. Every entry: ``id``, ``level``, ``problem`` (the file name in KB/levelN/), ``candidate``,
``source_verdict`` ({compiled, correct}), ``source_tolerance``, ``same_reference`` (the source's copy of the
problem equals KB's, whitespace aside: the repository's KernelBench/levelN/ for yh and tb, though tb's runs
read the Hugging Face dataset; the leaderboard's docs/assets/problems/; CUDA-L1's ref_code), ``source``
(owner/name@commit:path), ``model``, ``source_note`` (the source's error or mismatch, cut short) and
``defines_model_new``. A file without ``class ModelNew`` is kept only where its source published it as not
compiled (a verdict to compare with; ours reads "exception on import"), else left out.

Sources (the commit named here when the mirror has it, else its newest, recorded in ``source``):
  yenhao-huang/KernelBench 62472a67, runs/<run>_l<L>/ with KernelBench's eval_results.json, judged at
    atol = rtol = 1e-4 on an RTX 4090: yhcx Codex GPT-5.5, yhds DeepSeek V4 Pro, yhgm Gemma 4, yhqw Qwen 3.6.
  technoabsurdist/KernelBench 9202a5c5, judged at 1e-2 on an A100: tbgem gemini-2.5-pro, tbqwc
    Qwen3-Coder (qwencoder_level*_run; qwen3_level1_run, a second level-1 run, is left out), tbop
    claude-opus-4.1 (opus4_level*_*/detailed_results.json). The twenty-third session's gather named the
    opus run ``tbcl``: an opus candidate judged under that id (--judged) keeps it (``canonical_id``: tbop_...).
  anneouyang/KernelBenchLeaderboard 170ca796, docs/assets/raw_data.json (every entry a correct solution,
    KernelBench v0 at 1e-2): lbgf gemini-1.5-flash, lbds deepseek-coder, lbcs claude-3.5-sonnet, lbo1 gpt-o1,
    lb4o gpt-4o, lbl4 llama-3.1-405b, lbl7 llama-3.1-70b. Its ``problem_id`` counts from 0: the problem is
    problem_id + 1, while the id keeps problem_id as earlier gathers wrote it (an id names the same file in
    every gather; ``source_problem_id`` says so). Earlier gathers also paired it with problem problem_id, the
    wrong one: the verdicts judged then for lb ids are for another problem than this manifest's.
  deepreinforce-ai/CUDA-L1 51e8356b, optimized_cuda_code/a100.json (cl1; correct by its eval at 1e-2;
    entries whose custom_code is empty or has no ModelNew are left out).

Ids: <prefix>_l<level>_<problem, 3 digits>_s<sample>. OUT/manifest.jsonl holds every candidate judged
before (--judged) and, of the rest, the first in sha1(id) order up to --count, in (level, problem, prefix)
order. License: the candidates are their authors' code, under their repositories' terms; OUT is for local
judging only and is never committed to this repository.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PINNED = {"yenhao-huang/KernelBench": "62472a67", "technoabsurdist/KernelBench": "9202a5c5",
          "anneouyang/KernelBenchLeaderboard": "170ca796", "deepreinforce-ai/CUDA-L1": "51e8356b"}
YH_RUNS = {"yhcx": ("codex_gpt55_retime", "Codex GPT-5.5"), "yhds": ("openrouter_deepseek_v4_pro_leaderboard",
           "DeepSeek V4 Pro"), "yhgm": ("gemma4_retime", "Gemma 4"), "yhqw": ("qwen36_retime", "Qwen 3.6")}
TB_RUNS = {"tbgem": ("gemini_level{}_run", "gemini-2.5-pro"), "tbqwc": ("qwencoder_level{}_run", "Qwen3-Coder")}
LB_MODELS = {"gemini-1.5-flash": "lbgf", "deepseek-coder": "lbds", "claude-3.5-sonnet": "lbcs", "gpt-o1": "lbo1",
             "gpt-4o": "lb4o", "llama-3.1-405b": "lbl4", "llama-3.1-70b": "lbl7"}
ALIASES = {"tbop": "tbcl"}  # the same candidates under the prefix an earlier gather gave them
NOTE_KEYS = ("correctness_issue", "runtime_error", "compilation_error", "cuda_error", "error", "max_difference")
KB_FILE = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)


class Mirror:
    def __init__(self, name: str, git_dir: Path):
        self.name, self.git_dir, self.problems = name, git_dir, None
        pinned = PINNED[name]
        has = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{pinned}^{{commit}}"],
                             capture_output=True).returncode == 0
        self.commit = self._git("rev-parse", pinned if has else "HEAD").strip()
        tree = self._git("ls-tree", "-r", self.commit).splitlines()
        self.modes = {line.split("\t", 1)[1]: line.split()[0] for line in tree}
        if not has:
            print(f"{name}: {pinned} not in the mirror, using its newest commit {self.commit[:8]}")

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True, text=True,
                              check=True).stdout

    def files(self, folder: str) -> list[str]:
        return [p for p in self.modes if p.startswith(folder.rstrip("/") + "/")]

    def show(self, path: str) -> str:
        """The file's text, a symbolic link followed (the yenhao-huang runs link their kernels)."""
        for _ in range(8):
            text = self._git("show", f"{self.commit}:{path}")
            if self.modes.get(path) != "120000":
                return text
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), text.strip()))
        raise ValueError(f"{self.name}: {path}: too many links")

    def cite(self, path: str) -> str:
        return f"{self.name}@{self.commit[:8]}:{path}"


def normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def kb_problems(kb: Path) -> dict[tuple[int, int], Path]:
    return {(level, int(p.name.split("_")[0])): p for level in (1, 2, 3)
            for p in sorted((kb / f"level{level}").glob("*.py")) if p.name.split("_")[0].isdigit()}


def source_note(metadata: dict | None) -> str:
    metadata = metadata or {}
    return next((str(metadata[k])[:200] for k in NOTE_KEYS if metadata.get(k)), "")


def entry(prefix: str, level: int, number: int, sample: int, code: str, mirror: Mirror, path: str, model: str,
          verdict: dict, tolerance: float, reference: str | None, note: str = "", id_number: int | None = None):
    """One candidate; ``reference``: the source's copy of the problem (None: unknown)."""
    ident = f"{prefix}_l{level}_{number if id_number is None else id_number:03d}_s{sample}"
    return {"id": ident, "level": level, "number": number, "code": code, "source_verdict": verdict,
            "source_tolerance": tolerance, "reference": reference, "source": mirror.cite(path), "model": model,
            "source_note": note}


def kernelbench_runs(mirror: Mirror, runs: dict, folder_of, tolerance: float) -> list[dict]:
    """Runs laid out by KernelBench's scripts: level_L_problem_P_sample_S_kernel.py beside eval_results.json."""
    out = []
    for prefix, (run, model) in runs.items():
        for level in (1, 2, 3):
            folder = f"runs/{folder_of(run, level)}"
            results = json.loads(mirror.show(f"{folder}/eval_results.json"))
            for path in mirror.files(folder):
                found = KB_FILE.search(path)
                if not found or int(found[1]) != level:
                    continue
                number, sample = int(found[2]), int(found[3])
                said = next((r for r in _listed(results.get(str(number))) if int(r.get("sample_id", 0)) == sample),
                            None)
                if said is None:
                    continue  # no verdict published for it
                verdict = {"compiled": bool(said.get("compiled")), "correct": bool(said.get("correctness"))}
                out.append(entry(prefix, level, number, sample, mirror.show(path), mirror, path, model, verdict,
                                 tolerance, _repo_problem(mirror, level, number), source_note(said.get("metadata"))))
    return out


def _listed(value) -> list[dict]:
    return value if isinstance(value, list) else [value] if isinstance(value, dict) else []


def _repo_problem(mirror: Mirror, level: int, number: int) -> str | None:
    if mirror.problems is None:  # the repository's own copy of KernelBench's problems, read once
        mirror.problems = {}
        for path in mirror.files("KernelBench"):
            parts = path.split("/")
            if len(parts) == 3 and parts[1].startswith("level") and parts[2].split("_")[0].isdigit():
                mirror.problems[(int(parts[1][5:]), int(parts[2].split("_")[0]))] = path
    path = mirror.problems.get((level, number))
    return mirror.show(path) if path else None


def yenhao(mirror: Mirror) -> list[dict]:
    return kernelbench_runs(mirror, YH_RUNS, lambda run, level: f"{run}_l{level}", 1e-4)


def technoabsurdist(mirror: Mirror) -> list[dict]:
    out = kernelbench_runs(mirror, TB_RUNS, lambda run, level: run.format(level), 1e-2)
    for level in (2, 3):
        folder = next(p.rsplit("/", 1)[0] for p in mirror.files("runs") if p.startswith(f"runs/opus4_level{level}_"))
        detail = json.loads(mirror.show(f"{folder}/detailed_results.json"))
        for result in detail["results"]:
            said, number = result.get("eval_result"), int(result["problem_id"])
            path = f"{folder}/problem_{number}_kernel.py"
            if not result.get("success") or not said:
                continue  # nothing generated, or not evaluated
            verdict = {"compiled": bool(said.get("compiled")), "correct": bool(said.get("correctness"))}
            out.append(entry("tbop", level, number, 0, mirror.show(path), mirror, path, detail["config"]["model_name"],
                             verdict, 1e-2, _repo_problem(mirror, level, number), source_note(said.get("metadata"))))
    return out


def leaderboard(mirror: Mirror) -> list[dict]:
    out, path = [], "docs/assets/raw_data.json"
    for row in json.loads(mirror.show(path)):
        level, pid = int(row["level"]), int(row["problem_id"])
        prefix = LB_MODELS.get(row["display_name"])
        if prefix is None:
            print(f"{mirror.name}: unknown model {row['display_name']!r}, left out")
            continue
        reference = mirror.show(f"docs/assets/problems/l{level}_p{pid + 1}.py")
        item = entry(prefix, level, pid + 1, 0, row["code"], mirror, f"{path}#{row['file']}", row["model"],
                     {"compiled": True, "correct": True}, 1e-2, reference, id_number=pid)
        item["source_problem_id"] = pid
        out.append(item)
    return out


def cuda_l1(mirror: Mirror) -> list[dict]:
    out, path = [], "optimized_cuda_code/a100.json"
    for line in mirror.show(path).splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        level, number = int(row["level_id"]), int(row["task_id"])
        out.append(entry("cl1", level, number, 0, row.get("custom_code") or "", mirror, f"{path}#l{level}_{number}",
                         "CUDA-L1", {"compiled": True, "correct": True}, 1e-2, row.get("ref_code"),
                         f"score_default {row.get('score_default')}"))
    return out


GATHER = {"yenhao-huang/KernelBench": yenhao, "technoabsurdist/KernelBench": technoabsurdist,
          "anneouyang/KernelBenchLeaderboard": leaderboard, "deepreinforce-ai/CUDA-L1": cuda_l1}


def finish(items: list[dict], kb: Path, judged: set[str]) -> tuple[list[dict], list[str]]:
    """KB's problem file, same_reference and the judged alias for each; candidates without ModelNew left out."""
    problems, kept, dropped = kb_problems(kb), [], []
    for item in items:
        problem = problems.get((item["level"], item["number"]))
        has_model = MODEL_NEW.search(item["code"]) is not None
        item["defines_model_new"] = has_model
        # without a ModelNew only what its source published as not compiled (a verdict to compare with)
        if problem is None or not (has_model or item["code"].strip() and not item["source_verdict"]["compiled"]):
            dropped.append(f"{item['id']} ({'no such problem' if problem is None else 'no class ModelNew'})")
            continue
        prefix, rest = item["id"].split("_", 1)
        alias = f"{ALIASES[prefix]}_{rest}" if prefix in ALIASES else None
        if alias in judged and item["id"] not in judged:
            item["id"], item["canonical_id"] = alias, item["id"]
        reference = item.pop("reference")
        item["problem"] = problem.name
        item["same_reference"] = reference is not None and normalised(reference) == normalised(problem.read_text())
        kept.append(item)
    return kept, dropped


def select(items: list[dict], judged: set[str], count: int) -> list[dict]:
    chosen = [i for i in items if i["id"] in judged]
    rest = sorted((i for i in items if i["id"] not in judged), key=lambda i: hashlib.sha1(i["id"].encode()).hexdigest())
    chosen += rest[:max(0, count - len(chosen))]
    return sorted(chosen, key=lambda i: (i["level"], i["number"], i["id"].split("_")[0], i["id"]))


def write(items: list[dict], out: Path) -> None:
    fields = ("id", "level", "problem", "candidate", "source_verdict", "source_tolerance", "same_reference",
              "source", "model", "source_note", "defines_model_new", "source_problem_id", "canonical_id")
    lines = []
    for item in items:
        candidate = Path(item["id"].split("_")[0]) / f"{item['id']}.py"
        (out / candidate).parent.mkdir(parents=True, exist_ok=True)
        (out / candidate).write_text(item["code"])
        item["candidate"] = candidate.as_posix()
        lines.append(json.dumps({k: item[k] for k in fields if k in item}))
    (out / "manifest.jsonl").write_text("\n".join(lines) + "\n")


def mirrors(args) -> list[Mirror]:
    given = dict(g.split("=", 1) for g in args.git)
    found = []
    for name in GATHER:
        git_dir = Path(given.get(name) or args.mirrors / name.replace("/", "+") / "repo")
        if not git_dir.exists():
            raise SystemExit(f"{name}: no mirror at {git_dir} (pass --git {name}=GIT_DIR)")
        found.append(Mirror(name, git_dir))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=GIT_DIR")
    parser.add_argument("--kb", type=Path, default=REPO / ".kb")
    parser.add_argument("--judged", type=Path, default=REPO / "bench" / "data" / "generations_judged.jsonl")
    parser.add_argument("--count", type=int, default=320, help="candidates in all (the judged ones always)")
    args = parser.parse_args()
    judged = {json.loads(line)["id"] for line in args.judged.read_text().splitlines() if line.strip()}
    items = [item for mirror in mirrors(args) for item in GATHER[mirror.name](mirror)]
    items, dropped = finish(items, args.kb, judged)
    print(f"{len(items)} candidates found, {len(dropped)} left out: {', '.join(dropped)}")
    chosen = select(items, judged, args.count)
    args.out.mkdir(parents=True, exist_ok=True)
    write(chosen, args.out)
    missing = sorted(judged - {i["id"] for i in chosen})
    print(f"{len(chosen)} written to {args.out / 'manifest.jsonl'}; judged ids missing: {missing or 'none'}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
