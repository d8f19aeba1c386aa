#!/usr/bin/env python3
"""Extract measured per-GPU memory from Megatron-LM's functional-test golden values.

Reads a git clone of NVIDIA/Megatron-LM at one commit (no work tree needed) and writes one CSV
row per golden-values file under tests/functional_tests/test_cases/{gpt,moe}/<test_case>/ that
carries the "mem-max-allocated-bytes" series.  Only data (numbers and flags) is copied, each row
with the paths and commit it came from.  See reference/megatron-ci/README.md for what the numbers
mean.

Standard library only.  YAML is read with PyYAML's BaseLoader (every scalar kept as the string
written in the file) when PyYAML is importable, otherwise with the small reader below, which
covers the subset these files use and gives the same result on them.

Usage:
    python3 scripts/extract-megatron-ci-memory.py [--repo GITDIR] [--commit REV] [--out CSV]
"""

import argparse
import csv
import io
import itertools
import json
import math
import os
import re
import subprocess
import sys

DEFAULT_REPO = "/work/.mirror/NVIDIA+Megatron-LM/repo"
DEFAULT_OUT = "reference/megatron-ci/memory.csv"
MODEL_DIRS = ("gpt", "moe")
TEST_CASES_ROOT = "tests/functional_tests/test_cases"
# Where the CI recipes (nodes/gpus per test) have lived over time.
RECIPE_ROOTS = ("tests/test_utils/recipes", "tests/functional_tests/jet_recipes")
MEM_MAX = "mem-max-allocated-bytes"
MEM_CUR = "mem-allocated-bytes"

COLUMNS = [
    "model_dir", "test_case", "environment", "platform", "nodes", "gpus",
    "first_step", "last_step", "mem_allocated_bytes_last", "mem_max_allocated_bytes_last",
    "mem_max_allocated_bytes_first", "model_args_json", "env_vars_json", "golden_path",
    "config_path", "commit",
]

NODES_GPUS_IN_NAME = re.compile(r"(?:^|_)(\d+)N(\d+)G(?:_|$)")


def parse_golden_name(name):
    """(environment, platform) from a golden-values file name, or None if it is not one.

    Names seen over the history: golden_values.json, golden_values_{env}.json,
    golden_values_{env}_{platform}[_2nd].json with platform dgx_a100|dgx_h100|dgx_gb200 or a
    cluster (dgxa100_dracooci, dgxh100_eos, ...), and release-test files such as
    golden_values_0.13.0_PyT25.05_TE2.5_dgx_h100_dev.json."""
    if not (name.startswith("golden_values") and name.endswith(".json")):
        return None
    core = name[len("golden_values"):-len(".json")]
    if core and not core.startswith("_"):
        return None
    core = core[1:]
    if core.endswith("_2nd"):
        core = core[:-4]
    m = re.search(r"(?:^|_)(dev|lts)(?=_|$)", core)
    env = m.group(1) if m else ""
    m = re.search(r"(?:^|_)(dgx_(?:a100|h100|h200|b200|gb200))(?=_|$)", core) or \
        re.search(r"(?:^|_)(dgx(?:a100|h100|h200|b200|gb200)_[A-Za-z0-9-]+?)(?=_dev|_lts|$)", core)
    plat = m.group(1) if m else ""
    return env, plat


# --------------------------------------------------------------------------------------------
# git access
# --------------------------------------------------------------------------------------------

def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE).stdout


class BlobReader:
    """Reads many blobs through one `git cat-file --batch` process."""

    def __init__(self, repo, commit):
        self.commit = commit
        self.proc = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, path):
        self.proc.stdin.write(f"{self.commit}:{path}\n".encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().decode().rstrip("\n")
        if header.endswith(" missing"):
            return None
        size = int(header.split()[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)  # trailing newline
        return data.decode("utf-8")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def ls_tree(repo, commit, paths):
    out = git(repo, "ls-tree", "-r", "--name-only", "-z", commit, "--", *paths)
    return sorted(p for p in out.decode().split("\0") if p)


# --------------------------------------------------------------------------------------------
# YAML: PyYAML BaseLoader if present, else a small reader for the subset used by these files
# --------------------------------------------------------------------------------------------

class MiniYamlError(ValueError):
    pass


def _strip_comment(s):
    """Removes a trailing '# comment' outside quotes."""
    quote = None
    for i, c in enumerate(s):
        if quote:
            if c == quote:
                if quote == "'" and i + 1 < len(s) and s[i + 1] == "'":
                    continue
                quote = None
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"" and (i == 0 or s[i - 1] in " \t[{,:-"):
            quote = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
    return s.rstrip()


def _unquote(s):
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        return json.loads(s)
    if len(s) >= 2 and s[0] == s[-1] == "'":
        return s[1:-1].replace("''", "'")
    return s


def _split_flow(s):
    """Splits the inside of a flow collection at top-level commas."""
    parts, depth, quote, cur = [], 0, None, ""
    for c in s:
        if quote:
            cur += c
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += c
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def _find_key_colon(s):
    """Index of the ':' that ends a mapping key (followed by space or end), or -1."""
    quote = None
    depth = 0
    for i, c in enumerate(s):
        if quote:
            if c == quote:
                quote = None
            continue
        if c in "'\"" and i == 0:
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == ":" and depth == 0 and (i + 1 == len(s) or s[i + 1] in " \t"):
            return i
    return -1


class MiniYaml:
    """Block mappings and sequences, flow sequences/mappings, quoted and plain scalars, block
    scalars (| and >), comments, anchors, aliases and '<<' merge keys.  Every scalar stays a
    string, as with PyYAML's BaseLoader."""

    def __init__(self, text):
        self.raw = text.split("\n")
        self.lines = []  # [indent, content, raw index]
        for idx, line in enumerate(self.raw):
            if line.strip() in ("---", "...") and not line.startswith(" "):
                continue
            content = _strip_comment(line)
            if not content.strip():
                continue
            if "\t" in line[: len(line) - len(line.lstrip())]:
                raise MiniYamlError("tab indentation")
            self.lines.append([len(content) - len(content.lstrip()), content.strip(), idx])
        self.anchors = {}

    def parse(self):
        if not self.lines:
            return None
        value, i = self._block(0, self.lines[0][0])
        if i != len(self.lines):
            raise MiniYamlError(f"unparsed content at line {self.lines[i][2] + 1}")
        return value

    def _block(self, i, indent):
        if self.lines[i][1].startswith("- ") or self.lines[i][1] == "-":
            return self._seq(i, indent)
        return self._map(i, indent)

    def _anchor(self, s):
        name = None
        if s.startswith("&"):
            name, _, s = s[1:].partition(" ")
            s = s.strip()
        return name, s

    def _value(self, s, i, parent_indent, seq_item=False):
        """Parses the value text s that follows a key (or a '- '); i is the next line index."""
        name, s = self._anchor(s)
        if s.startswith("*"):
            value = self.anchors[s[1:].strip()]
        elif s.startswith("|") or s.startswith(">"):
            value, i = self._block_scalar(s, i, parent_indent)
        elif s.startswith("[") or s.startswith("{"):
            # A flow collection may continue on following lines.
            while not self._flow_closed(s):
                if i >= len(self.lines):
                    raise MiniYamlError("unterminated flow collection")
                s += " " + self.lines[i][1]
                i += 1
            value = self._flow(s)
        elif s == "":
            nxt = self.lines[i] if i < len(self.lines) else None
            is_seq = nxt is not None and (nxt[1].startswith("- ") or nxt[1] == "-")
            if nxt is not None and nxt[0] > parent_indent and not is_seq \
                    and _find_key_colon(nxt[1]) < 0:
                # A plain scalar continued on more-indented lines (folded with spaces).
                words = []
                while i < len(self.lines) and self.lines[i][0] > parent_indent:
                    words.append(self.lines[i][1])
                    i += 1
                value = " ".join(words)
            elif nxt is not None and (nxt[0] > parent_indent
                                      or (not seq_item and nxt[0] == parent_indent and is_seq)):
                value, i = self._block(i, nxt[0])
            else:
                value = ""
        else:
            value = _unquote(s)
        if name:
            self.anchors[name] = value
        return value, i

    @staticmethod
    def _flow_closed(s):
        depth, quote = 0, None
        for c in s:
            if quote:
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
        return depth == 0

    def _flow(self, s):
        s = s.strip()
        if s.startswith("["):
            return [self._flow(p) for p in _split_flow(s[1:-1])]
        if s.startswith("{"):
            out = {}
            for p in _split_flow(s[1:-1]):
                k, _, v = p.partition(":")
                out[_unquote(k)] = self._flow(v)
            return out
        if s.startswith("*"):
            return self.anchors[s[1:]]
        return _unquote(s)

    def _block_scalar(self, header, i, parent_indent):
        keep = header.endswith("+")
        strip = header.endswith("-")
        start_raw = self.lines[i - 1][2] + 1
        # The block's indentation is that of its first non-blank line; the block ends at the
        # first non-blank raw line (comments included) indented less than that.
        end_raw, ind = start_raw, None
        while end_raw < len(self.raw):
            ln = self.raw[end_raw]
            if ln.strip():
                n = len(ln) - len(ln.lstrip())
                if ind is None:
                    if n <= parent_indent:
                        break
                    ind = n
                elif n < ind:
                    break
            end_raw += 1
        body = [ln[ind or 0:] for ln in self.raw[start_raw:end_raw]]
        trailing = 0
        while body and not body[-1].strip():
            body.pop()
            trailing += 1
        if header.startswith(">"):
            text = " ".join(body)
        else:
            text = "\n".join(body)
        if not strip and body:
            text += "\n"
        if keep:
            text += "\n" * trailing
        j = i
        while j < len(self.lines) and self.lines[j][2] < end_raw:
            j += 1
        return text, j

    def _map(self, i, indent):
        out = {}
        while i < len(self.lines) and self.lines[i][0] == indent:
            s = self.lines[i][1]
            if s.startswith("- ") or s == "-":
                break
            c = _find_key_colon(s)
            if c < 0:
                raise MiniYamlError(f"expected 'key: value' at line {self.lines[i][2] + 1}")
            key = _unquote(s[:c])
            value, i = self._value(s[c + 1:].strip(), i + 1, indent)
            if key == "<<":
                for src in (value if isinstance(value, list) else [value]):
                    for k, v in src.items():
                        out.setdefault(k, v)
            else:
                out[key] = value
        if i < len(self.lines) and self.lines[i][0] > indent:
            raise MiniYamlError(f"bad indentation at line {self.lines[i][2] + 1}")
        return out, i

    def _seq(self, i, indent):
        out = []
        while (i < len(self.lines) and self.lines[i][0] == indent
               and (self.lines[i][1].startswith("- ") or self.lines[i][1] == "-")):
            rest = self.lines[i][1][1:].lstrip()
            if _find_key_colon(rest) > 0 and not rest.startswith(("[", "{")):
                # "- key: value" starts a mapping whose keys sit at the column of "key".
                col = indent + (len(self.lines[i][1]) - len(rest))
                self.lines[i] = [col, rest, self.lines[i][2]]
                value, i = self._map(i, col)
            else:
                value, i = self._value(rest, i + 1, indent, seq_item=True)
            out.append(value)
        return out, i


try:
    import yaml as _pyyaml  # noqa: E402  (optional)
except ImportError:  # pragma: no cover
    _pyyaml = None


def _resolve_merges(node):
    """BaseLoader leaves '<<' merge keys as ordinary keys; apply them (explicit keys win)."""
    if isinstance(node, list):
        return [_resolve_merges(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _resolve_merges(v) for k, v in node.items() if k != "<<"}
    if "<<" in node:
        for src in _as_list(node["<<"]):
            for k, v in _resolve_merges(src).items():
                out.setdefault(k, v)
    return out


def load_yaml(text):
    """Parses YAML keeping every scalar as the string written (PyYAML BaseLoader semantics),
    with '<<' merge keys applied."""
    if _pyyaml is not None:
        return _resolve_merges(_pyyaml.load(text, Loader=_pyyaml.BaseLoader))
    return MiniYaml(text).parse()


# --------------------------------------------------------------------------------------------
# recipes: nodes and gpus per (model, test_case, environment, platform)
# --------------------------------------------------------------------------------------------

def _as_list(v):
    return v if isinstance(v, list) else [v]


def normalize_platform(p):
    """Golden-value files once carried cluster names (dgxa100_dracooci, dgxh100_dgxc ...)."""
    if not p:
        return ""
    m = re.match(r"^dgx_?(a100|h100|gb200|b200|h200)", p)
    return f"dgx_{m.group(1)}" if m else p


def flatten_recipe(doc):
    """Yields (test_case, effective_spec) for every product row, like recipe_parser.py:
    inner product lists are expanded as cartesian products and override the spec."""
    spec = doc.get("spec") or {}
    for product in doc.get("products") or []:
        if not isinstance(product, dict):
            continue
        if "products" in product:
            cases = _as_list(product.get("test_case", []))
            inner = product["products"] or []
        else:  # older flat format: test_case is one more cartesian dimension
            cases = _as_list(product.get("test_case", []))
            inner = [{k: v for k, v in product.items() if k != "test_case"}]
        for params in inner:
            keys = [k for k in params if k != "cadence"]
            for combo in itertools.product(*[_as_list(params[k]) for k in keys]):
                row = dict(spec)
                row.update(zip(keys, combo))
                for tc in cases:
                    yield tc, row


TRAINING_LAUNCHER = "tests/functional_tests/shell_test_utils/_run_training.sh"


class Recipes:
    """Every (recipe, test_case, environment, platform) product row of the CI recipes.

    nodes is the recipe's value (the SLURM allocation, which _run_training.sh passes to torchrun
    as --nnodes).  gpus is the number of processes torchrun starts per node: the recipe's gpus
    where the recipe's script exports GPUS_PER_NODE={gpus}, otherwise _run_training.sh's default
    GPUS_PER_NODE (8 at HEAD), since that is what the launcher then uses."""

    def __init__(self, repo, commit, blobs):
        self.rows = []
        self.paths = []
        launcher = blobs.read(TRAINING_LAUNCHER) or ""
        m = re.search(r"GPUS_PER_NODE=\$\{GPUS_PER_NODE:-(\d+)\}", launcher)
        default_gpus = m.group(1) if m else None
        for path in ls_tree(repo, commit, list(RECIPE_ROOTS)):
            if not path.endswith((".yaml", ".yml")):
                continue
            text = blobs.read(path)
            try:
                doc = load_yaml(text)
            except Exception as exc:  # a recipe we cannot read gives no nodes/gpus
                print(f"warning: cannot parse {path}: {exc}", file=sys.stderr)
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
                continue
            self.paths.append(path)
            spec = doc["spec"]
            exports = "GPUS_PER_NODE={gpus}" in text.replace(" ", "")

            def launched(gpus):
                if exports or default_gpus is None:
                    return gpus
                return default_gpus

            spec_plat = spec.get("platforms", spec.get("platform", ""))
            for tc, row in flatten_recipe(doc):
                plat = row.get("platforms", row.get("platform", ""))
                for pl in _as_list(plat) or [""]:
                    self.rows.append(dict(
                        path=path, model=str(spec.get("model", "")), test_case=tc,
                        environment=str(row.get("environment", "")), platform=str(pl),
                        nodes=str(row.get("nodes", "")), gpus=str(row.get("gpus", "")),
                        gpus_launched=launched(str(row.get("gpus", ""))),
                        spec_nodes=str(spec.get("nodes", "")),
                        spec_gpus=str(spec.get("gpus", "")),
                        spec_gpus_launched=launched(str(spec.get("gpus", ""))),
                        spec_platforms=[str(p) for p in _as_list(spec_plat)]))
        # Platforms each recipe runs on: its spec default and every product's platform.
        self.recipe_platforms = {}
        for r in self.rows:
            ps = self.recipe_platforms.setdefault(r["path"], set())
            ps.add(normalize_platform(r["platform"]))
            ps.update(normalize_platform(p) for p in r["spec_platforms"])

    def lookup(self, model, test_case, environment, platform):
        """Returns (nodes, gpus, how): how is exact (a product row for this environment and
        platform), spec-default (the test case is listed in a recipe that runs on this
        platform, but not for this environment/platform: that recipe's spec defaults), or
        none.  "-ambiguous" is appended when the candidates disagree (the first is taken),
        "+launcher-gpus" when gpus is the launcher's default rather than the recipe's gpus."""
        plat = normalize_platform(platform)
        # A file without a platform in its name was written when download_golden_values.py
        # stripped "_dgx_h100" and "_dgx_a100" from the names: it came from A100 or H100.
        plats = {plat} if plat else {"dgx_a100", "dgx_h100"}
        cands = [r for r in self.rows if r["model"] == model and r["test_case"] == test_case]
        exact = [r for r in cands
                 if (not environment or r["environment"] == environment)
                 and normalize_platform(r["platform"]) in plats]
        if exact:
            triples = sorted({(r["nodes"], r["gpus_launched"], r["gpus"]) for r in exact})
            how = "exact"
        else:
            pool = [r for r in cands if self.recipe_platforms[r["path"]] & plats]
            if not pool:
                return "", "", "none"
            triples = sorted({(r["spec_nodes"], r["spec_gpus_launched"], r["spec_gpus"])
                              for r in pool})
            how = "spec-default"
        pairs = sorted({t[:2] for t in triples})
        if len(pairs) > 1:
            how += "-ambiguous"
            print(f"warning: {model}/{test_case} {environment} {platform}: recipes disagree "
                  f"on nodes/gpus {pairs}; taking {pairs[0]}", file=sys.stderr)
        if triples[0][1] != triples[0][2]:
            how += "+launcher-gpus"
        return pairs[0][0], pairs[0][1], how


# --------------------------------------------------------------------------------------------
# golden values
# --------------------------------------------------------------------------------------------

def finite_series(metric):
    """{step: value} of the finite numeric values of one golden-values metric."""
    out = {}
    if not isinstance(metric, dict):
        return out
    for step, value in (metric.get("values") or {}).items():
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            out[int(step)] = value
    return out


def fmt_num(v):
    if v is None:
        return ""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def compact_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def extract(repo, commit):
    blobs = BlobReader(repo, commit)
    try:
        recipes = Recipes(repo, commit, blobs)
        files = ls_tree(repo, commit, [f"{TEST_CASES_ROOT}/{m}" for m in MODEL_DIRS])
        rows, stats = [], {"golden_files": 0, "with_mem": 0, "recipes": len(recipes.paths)}
        how_counts = {}
        configs = {}
        for path in files:
            parts = path.split("/")
            if len(parts) != 6:
                continue
            _, _, _, model_dir, test_case, name = parts
            parsed = parse_golden_name(name)
            if parsed is None:
                continue
            environment, platform = parsed
            stats["golden_files"] += 1
            try:
                golden = json.loads(blobs.read(path))
            except ValueError as exc:
                print(f"warning: {path}: {exc}", file=sys.stderr)
                continue
            if not isinstance(golden, dict) or MEM_MAX not in golden:
                continue
            peak = finite_series(golden[MEM_MAX])
            if not peak:
                continue
            stats["with_mem"] += 1
            cur = finite_series(golden.get(MEM_CUR))
            config_path = f"{TEST_CASES_ROOT}/{model_dir}/{test_case}/model_config.yaml"
            if config_path not in configs:
                text = blobs.read(config_path)
                try:
                    configs[config_path] = load_yaml(text) if text is not None else None
                except Exception as exc:
                    print(f"warning: cannot parse {config_path}: {exc}", file=sys.stderr)
                    configs[config_path] = {}
            cfg = configs[config_path]
            if not isinstance(cfg, dict):
                config_path = ""
                cfg = {}
            nodes, gpus, how = recipes.lookup(model_dir, test_case, environment, platform)
            if how == "none":
                # Older test names carry the allocation, e.g. gpt3_mr_tp2_pp2_dgx_a100_1N8G.
                m = NODES_GPUS_IN_NAME.search(test_case)
                if m:
                    nodes, gpus, how = m.group(1), m.group(2), "test-case-name"
            how_counts[how] = how_counts.get(how, 0) + 1
            first, last = min(peak), max(peak)
            rows.append({
                "model_dir": model_dir, "test_case": test_case,
                "environment": environment, "platform": platform,
                "nodes": nodes, "gpus": gpus,
                "first_step": first, "last_step": last,
                "mem_allocated_bytes_last": fmt_num(cur[max(cur)]) if cur else "",
                "mem_max_allocated_bytes_last": fmt_num(peak[last]),
                "mem_max_allocated_bytes_first": fmt_num(peak[first]),
                "model_args_json": compact_json(cfg.get("MODEL_ARGS") or {}),
                "env_vars_json": compact_json(cfg.get("ENV_VARS") or {}),
                "golden_path": path, "config_path": config_path, "commit": commit,
            })
        rows.sort(key=lambda r: (r["model_dir"], r["test_case"], r["environment"],
                                 r["platform"], r["golden_path"]))
        stats["nodes_gpus"] = how_counts
        return rows, stats
    finally:
        blobs.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=DEFAULT_REPO, help="Megatron-LM git directory")
    ap.add_argument("--commit", default="HEAD", help="revision to read (default HEAD)")
    ap.add_argument("--out", default=None,
                    help=f"CSV to write, '-' for stdout (default: {DEFAULT_OUT} under the "
                    "fasop-cpp checkout that holds this script)")
    ap.add_argument("--mini-yaml", action="store_true",
                    help="use the built-in YAML reader even if PyYAML is installed")
    args = ap.parse_args()
    if args.mini_yaml:
        global _pyyaml
        _pyyaml = None

    if args.out is None:
        args.out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                DEFAULT_OUT)
    commit = git(args.repo, "rev-parse", "--verify", args.commit + "^{commit}").decode().strip()
    rows, stats = extract(args.repo, commit)

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    if args.out == "-":
        sys.stdout.write(buf.getvalue())
    else:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8", newline="") as fh:
            fh.write(buf.getvalue())
    print(f"commit {commit}: {stats['golden_files']} golden-values files, {len(rows)} rows with "
          f"{MEM_MAX}; recipes read: {stats['recipes']}; nodes/gpus: "
          + ", ".join(f"{k} {v}" for k, v in sorted(stats["nodes_gpus"].items())),
          file=sys.stderr)


if __name__ == "__main__":
    main()
