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
