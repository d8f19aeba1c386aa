#!/usr/bin/env python3
"""Runs Sailor's own planner and simulator (eth-easl/sailor at cf2c8e3) on one of its planner
problems and prints the plan simulator.py would record, as one JSON line, the last line of stdout
(Sailor's code prints its progress before it). This is how
reference/sailor/budget-plans.yaml was made (see budget-problems.md).

It does what sailor/Planner/simulations/simulator.py's evaluate_trace_with_mem does for
`--planner SAILOR`, with planner.py's SailorPlanner wrapper inlined minus its `make` calls, and
without pandas (the one-row trace is given on the command line).

Setup (Debian 12): apt-get install pybind11-dev libjsoncpp-dev; python3-numpy and python3-torch
(runtime_simulator imports profiling/profile_utils.py, which imports torch); a `pandas` that
simulations/utils.py can import (an empty stub package on PYTHONPATH will do: only parse_trace
needs it). Build the module in SAILOR/sailor/Planner/sailor_planner/cpp_src:
  for f in planner.cpp training.cpp utils/read_json.cpp utils/network_utils.cpp planner_utils.cpp; do
    g++ -O3 -fPIC -I/usr/include/python3.11 -c $f -o $(basename $f .cpp).o; done
  g++ -O3 -shared *.o -ljsoncpp -o libplanner$(python3-config --extension-suffix)

Usage: run-sailor-planner.py SAILOR OBJECTIVE MAX_COST MIN_THROUGHPUT [TRACE_JSON]
  SAILOR: a checkout of eth-easl/sailor (the directory holding sailor/Planner/...)
  Fig. 11: iteration_cost 0 0.2      Fig. 12: throughput 1.2 0
  TRACE_JSON default: gpu_trace_2zones_2gpus.csv's row, 128 GPUs of each type in each zone.
"""
import json
import os
import sys
import tempfile
import time

SRC = os.path.abspath(sys.argv[1])
objective, max_cost, min_thr = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
trace = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {
    "A100-40_us-central1-a": 128, "A100-40_us-central1-b": 128,
    "V100-16_us-central1-a": 128, "V100-16_us-central1-b": 128}

# Sailor's code opens {sailor_path}/sailor/sailor/providers/...: a directory whose `sailor` is SRC.
ROOT = tempfile.mkdtemp()
os.symlink(SRC, os.path.join(ROOT, "sailor"))
os.environ["SAILOR_PATH"] = ROOT
sys.path[:0] = [SRC, f"{SRC}/sailor/Planner/sailor_planner/cpp_src"]
import libplanner  # noqa: E402
from sailor.Planner.simulations.constants import GPU_PRICES  # noqa: E402
from sailor.Planner.simulations.runtime_simulator import Simulator  # noqa: E402

SIM = f"{SRC}/sailor/Planner/simulations"
training_config_path = f"{SIM}/configs/training_config_opt_350.json"
quotas_path = f"{SRC}/sailor/Planner/sailor_planner/dummy_quotas_dict.json"

start = time.time()
planner = libplanner.SailorPlanner(  # as planner.py: heterogeneous=True, fp16=False (no --fp16)
    f"{SRC}/sailor/Planner/sailor_planner/profiles/OPT-350/",
    f"{SRC}/sailor/providers/multizone_bandwidths_het.json",
    training_config_path, f"{SRC}/sailor/Planner/llm_info.json",
    f"{SRC}/sailor/providers/gcp/communication_cost.json",
    True, False, quotas_path, objective)
init_s = time.time() - start
available_gpus = sorted(json.load(open(quotas_path)).keys())
max_gpus_per_zone = {}
for key, count in trace.items():
    gpu_type, zone = key.split("_", 1)
    max_gpus_per_zone.setdefault(zone, {})[gpu_type] = count
search_start = time.time()
configs = planner.get_sorted_plans(max_gpus_per_zone, max_cost, min_thr)
search_s = time.time() - search_start

plans = []  # planner.py's conversion
for config in configs:
    Tpp, zones = config.get_Tpp(), config.get_zones()
    per_stage, used = [], {}
    for stage_config in config.get_config_per_stage():
        stage = []
        for gpu_idx, tp, zone_idx in stage_config:
            gpu = available_gpus[gpu_idx]
            stage.append(([(gpu, tp, zones[zone_idx])], tp))
            used[gpu] = used.get(gpu, 0) + tp
        per_stage.append(stage)
    plans.append({
        "pipeline_list": [{"num_stages": len(list(config.get_stages())),
                           "layers_per_stage": [list(s) for s in config.get_stages()],
                           "tmp_per_stage": per_stage,
                           "dp": [len(s) for s in config.get_config_per_stage()]}],
        "mbs": config.get_mbs(), "estimated_throughput": 1 / Tpp if Tpp else 0.0, "iter_time": Tpp,
        "estimated_cost": [config.get_cost(), config.get_comm_cost(), config.get_comp_cost()],
        "used_gpus": used})

training_config = json.load(open(training_config_path))
llm_info = json.load(open(f"{SRC}/sailor/Planner/llm_info.json"))
profiles = json.load(open(f"{SIM}/profiles_tmp.json"))
basic = json.load(open(f"{SIM}/configs/basic_cluster_config.json"))
sim = Simulator(ROOT, training_config, llm_info, False, profiles, zone=basic["zone"])
price_zone = "europe-west4-a"  # evaluate_trace_with_mem's default zone, which it prices SAILOR's plans in
result, oom = None, 0
for plan in plans:  # the first plan that fits and meets the constraint, as simulator.py
    if not sim.check_config_fits(plan):
        oom += 1
        continue
    iteration_s, egress_usd, _ = sim.simulate_iteration_time(plan)
    usd_per_s = sum(n * GPU_PRICES[g][price_zone] / 3600 for g, n in plan["used_gpus"].items())
    usd_per_iter = usd_per_s * iteration_s + egress_usd
    if (objective == "throughput" and (max_cost == 0.0 or usd_per_iter <= max_cost)) or \
       (objective == "iteration_cost" and (min_thr == 0.0 or 1 / iteration_s >= min_thr)):
        result = {"plan": plan, "iteration_s": iteration_s, "throughput": 1 / iteration_s,
                  "usd_per_iter": usd_per_iter, "compute_usd_per_s": usd_per_s, "egress_usd_per_iter": egress_usd,
                  "oom_plans_skipped": oom}
        break
print(json.dumps({"objective": objective, "max_cost": max_cost, "min_throughput": min_thr, "trace": trace,
                  "planner_init_s": init_s, "search_s": search_s, "total_s": time.time() - start,
                  "sorted_plans": len(plans), "result": result}))
