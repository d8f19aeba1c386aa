"""What the emit check scripts share (check-torchtitan-emit.py, check-megatron-bridge-emit.py):
fasop-cpp run from the repository's root, and a plan saved and written for a stack."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_fasop(bin_path, args, error):
    """fasop-cpp's standard output; raises `error` (an exception class) naming the command if it fails."""
    done = subprocess.run([bin_path] + args, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise error(f"fasop-cpp {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def save_and_emit(bin_path, search_args, work, fmt, out_name, error):
    """`search SEARCH_ARGS --save-plan`, then `schedule --format FMT -o WORK/OUT_NAME`: the saved
    plan and its model file as YAML, and the written file's path."""
    import yaml
    plan_path, out = os.path.join(work, "plan.yaml"), os.path.join(work, out_name)
    run_fasop(bin_path, ["search"] + search_args + ["--out-dir", os.path.join(work, "logs"), "--quiet",
                                                    "--save-plan", plan_path], error)
    run_fasop(bin_path, ["schedule", "--plan", plan_path, "--format", fmt, "-o", out], error)
    with open(plan_path) as f:
        plan = yaml.safe_load(f)
    with open(os.path.join(ROOT, "configs", "models", plan["model"] + ".yaml")) as f:
        model = yaml.safe_load(f)
    return plan, model, out


def add_common_options(parser, written):
    """--bin, --only and --keep, which both checks take; `written` names the emitted file."""
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "fasop-cpp"), help="the fasop-cpp binary")
    parser.add_argument("--only", help="comma-separated plan names")
    parser.add_argument("--keep", help=f"copy each plan's plan.yaml and {written} into DIR/NAME/")


def selected_plans(parser, plans, only):
    """The plans --only names (all without it); a parser error where it names none."""
    chosen = [p for p in plans if not only or p[0] in only.split(",")]
    if not chosen:
        parser.error(f"--only names no plan of {', '.join(p[0] for p in plans)}")
    return chosen


def check_each(plans, check, error, reader):
    """Runs check(name, search_args, kind) on each plan, one line each ("ok    NAME: ..." or
    "FAIL  NAME: why" where it raises `error`), then "N of M plans as READER reads them"; 1 if
    any failed, else 0."""
    failed = 0
    for name, search_args, kind in plans:
        try:
            print(f"ok    {name}: " + check(name, search_args, kind))
        except error as problem:
            failed += 1
            print(f"FAIL  {name}: {problem}")
    print(f"{len(plans) - failed} of {len(plans)} plans as {reader} reads them")
    return 1 if failed else 0
