#!/usr/bin/env python3
"""A stand-in for neuron-monitor on a trn1n.32xlarge (16 devices, 32
NeuronCores, 128 vCPUs) with 32 runtimes, laid out as its user guide's
schema and as real documents are: every runtime lists every core, with its
own core busy and the others at 0, and its loaded models.

- 16 inference workers started with one NEURON_PROCESS_TAG, "serve" (pids
  2000-2015, cores 0-15);
- two training jobs of 8 and 6 ranks, "train-a" (cores 16-23) and
  "train-b" (cores 24-29);
- two untagged processes (known by their pid): 2030 on core 30, with no
  executions in the period (latency null), and 2031, with a runtime error
  and no report.

Groups in error: rank 1 of train-a (pid 2017) cannot read its NeuronCore
counters, rank 1 of train-b (pid 2025) its memory. Each period counts 10
completed executions a runtime. A document is over 400 KB.

Usage: fake-neuron-monitor-host.py PERIOD COUNT STARTS
         prints a document every PERIOD seconds, each on one line, and
         after each one writes how many it printed to COUNT (by rename);
         appends a line to STARTS when it starts.
       fake-neuron-monitor-host.py --once
         prints one document.
"""
import json
import os
import sys
import time

CORES = 32
PERIOD = 5.0


def runtime(r):
    pid = 2000 + r
    tag = "serve" if r < 16 else "train-a" if r < 24 else "train-b" if r < 30 else ""
    if r == 31:
        return {"pid": pid, "neuron_runtime_tag": tag, "error": "failed to connect to the runtime", "report": {}}
    own = r
    counters = {"period": PERIOD, "error": "", "neuroncores_in_use": {
        str(c): {"neuroncore_utilization": 85.5 if c == own else 0.0, "flops": 1.5e12 if c == own else 0}
        for c in range(CORES)}}
    if pid == 2017:
        counters = {"period": PERIOD, "error": "failed to read the NeuronCore counters", "neuroncores_in_use": {}}
    latency = None if r == 30 else {p: 0.002 + 0.0001 * i for i, p in enumerate(
        ("p0", "p1", "p25", "p50", "p75", "p99", "p100"))}
    executions = {"period": PERIOD, "error": "",
                  "error_summary": {k: 0 for k in ("generic", "numerical", "transient", "model", "runtime",
                                                   "hardware")},
                  "execution_summary": {"completed": 10, "completed_with_err": 0, "completed_with_num_err": 0,
                                        "timed_out": 0, "incorrect_input": 0, "failed_to_queue": 0},
                  "latency_stats": {"total_latency": latency, "device_latency": latency}}
    kinds = ("constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors")
    models = [{"name": f"/models/model-{m}.neff", "uuid": f"{pid:08x}{m:024x}", "model_id": 10000 + m,
               "is_running": True, "subgraphs": {
                   f"sg_{s:02d}": {"memory_used_bytes": {
                       "host": 20480 + s, "neuron_device": 21001024 + s, "usage_breakdown": {
                           "host": {"application_memory": 20480, "constants": 0, "dma_buffers": s, "tensors": 0},
                           "neuron_device": {"constants": 1048576, "model_code": 19922944, "runtime_memory": s,
                                             "tensors": 29504}}},
                       "neuroncore_index": own, "neuron_device_index": own // 2}
                   for s in range(12)}} for m in range(2)]
    memory = {"period": PERIOD, "error": "", "neuron_runtime_used_bytes": {
        "host": 1074790400, "neuron_device": 4294967296, "usage_breakdown": {
            "host": {"application_memory": 1073741824, "constants": 0, "dma_buffers": 1048576, "tensors": 0},
            "neuroncore_memory_usage": {
                str(c): {k: (858993459 if c == own else 0) for k in kinds} for c in range(CORES)}}},
        "loaded_models": models}
    if pid == 2025:
        memory = {"period": PERIOD, "error": "failed to read the memory usage"}
    vcpu = {"period": PERIOD, "error": "", "vcpu_usage": {"user": 2.5, "system": 0.4}}
    return {"pid": pid, "neuron_runtime_tag": tag, "error": "", "report": {
        "neuroncore_counters": counters, "execution_stats": executions, "memory_used": memory,
        "neuron_runtime_vcpu_usage": vcpu}}


def document():
    usage = {"user": 40.1, "nice": 0, "system": 6.2, "idle": 53.7, "io_wait": 0, "irq": 0, "soft_irq": 0}
    return {
        "neuron_runtime_data": [runtime(r) for r in range(32)],
        "system_data": {
            "neuron_hw_counters": {"period": PERIOD, "error": "", "neuron_devices": [
                {"neuron_device_index": d, "mem_ecc_corrected": 0, "mem_ecc_uncorrected": 0,
                 "sram_ecc_uncorrected": 0, "sram_ecc_corrected": 0} for d in range(16)]},
            "vcpu_usage": {"period": PERIOD, "error": "", "average_usage": usage,
                           "usage_data": {str(v): usage for v in range(128)}, "context_switch_count": 123456},
            "memory_info": {"period": PERIOD, "error": "", "memory_total_bytes": 549755813888,
                            "memory_used_bytes": 137438953472, "swap_total_bytes": 0, "swap_used_bytes": 0}},
        "instance_info": {"instance_name": "", "instance_id": "i-0123456789abcdef0", "instance_type": "trn1n.32xlarge",
                          "instance_availability_zone": "us-east-1a", "instance_availability_zone_id": "use1-az1",
                          "instance_region": "us-east-1", "ami_id": "ami-0123456789abcdef0",
                          "subnet_id": "subnet-0123abcd", "error": ""},
        "neuron_hardware_info": {"neuron_device_type": "trainium", "neuron_device_version": "v2",
                                 "neuroncore_version": "v2", "neuron_device_count": 16,
                                 "neuron_device_memory_size": 34359738368, "neuroncore_per_device_count": 2,
                                 "logical_neuroncore_config": 1, "error": ""}}


def main():
    line = json.dumps(document(), separators=(",", ":")) + "\n"
    if sys.argv[1:] == ["--once"]:
        sys.stdout.write(line)
        return
    period, count, starts = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(starts, "a") as f:
        f.write(f"{os.getpid()}\n")
    n = 0
    while True:
        sys.stdout.write(line)
        sys.stdout.flush()
        n += 1
        with open(count + ".new", "w") as f:
            f.write(f"{n}\n")
        os.rename(count + ".new", count)
        time.sleep(period)


if __name__ == "__main__":
    main()
