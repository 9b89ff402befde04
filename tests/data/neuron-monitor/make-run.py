#!/usr/bin/env python3
# Writes run.jsonl: four lines of neuron-monitor output as its user guide
# gives the layout (aws-neuron-sdk, tools/neuron-sys-tools/
# neuron-monitor-user-guide.rst): a training runtime with every group, an
# untagged runtime joining with no execution yet (latency null), a line cut
# short, and the second runtime gone with a group reporting an error.
# Run from the top of the source tree.
import json, copy
def group(period, **kw):
    d = {"period": period}; d.update(kw); d["error"] = ""; return d
def core(util, flops, phys=None):
    c = {"neuroncore_utilization": util, "flops": flops}
    if phys: c["v3d"] = {"nc_v3.%d" % i: {"neuroncore_utilization": u} for i, u in enumerate(phys)}
    return c
def kinds(c, m, s, r, t):
    return {"constants": c, "model_code": m, "model_shared_scratchpad": s, "runtime_memory": r, "tensors": t}
def runtime(pid, tag, cores, completed, lat=True, util=50.0):
    rep = {
        "neuroncore_counters": group(1.0, neuroncores_in_use={str(c): core(util + c, 2000000000) for c in cores}),
        "execution_stats": group(1.0,
            error_summary={"generic": 1, "numerical": 0, "transient": 0, "model": 0, "runtime": 0, "hardware": 0},
            execution_summary={"completed": completed, "completed_with_err": 1, "completed_with_num_err": 0,
                               "timed_out": 0, "incorrect_input": 0, "failed_to_queue": 2},
            latency_stats={"total_latency": {p: round(0.011 + i * 0.001, 6) for i, p in enumerate(["p0","p1","p25","p50","p75","p99","p100"])} if lat else None,
                           "device_latency": {p: round(0.010 + i * 0.001, 6) for i, p in enumerate(["p0","p1","p25","p50","p75","p99","p100"])} if lat else None}),
        "memory_used": group(1.0, neuron_runtime_used_bytes={
            "host": 6997643264, "neuron_device": 12519788544,
            "usage_breakdown": {"host": {"application_memory": 6996594688, "constants": 0, "dma_buffers": 1048576, "tensors": 0},
                                "neuroncore_memory_usage": {str(c): kinds(193986816, 176285056, 0, 1024, 20971520) for c in cores}}},
            loaded_models=[{"name": "neff", "uuid": "91f2f66e83ea419dace1da07617ad39f", "model_id": 10005, "is_running": True,
                            "subgraphs": {"sg_00": {"memory_used_bytes": {"host": 20480, "neuron_device": 21001024},
                                                    "neuroncore_index": cores[0], "neuron_device_index": 0}}}]),
        "neuron_runtime_vcpu_usage": group(1.0, vcpu_usage={"user": 42.5, "system": 12.5}),
    }
    return {"pid": pid, "neuron_runtime_tag": tag, "error": "", "report": rep}
system = {
    "neuron_hw_counters": group(1.0, neuron_devices=[{"neuron_device_index": 0, "mem_ecc_corrected": 0, "mem_ecc_uncorrected": 0, "sram_ecc_uncorrected": 0, "sram_ecc_corrected": 0}]),
    "vcpu_usage": group(1.0, average_usage={"user": 32.77, "nice": 0, "system": 22.87, "idle": 39.36, "io_wait": 0, "irq": 0, "soft_irq": 0},
                        usage_data={"0": {"user": 34.41, "nice": 0, "system": 27.96, "idle": 37.63, "io_wait": 0, "irq": 0, "soft_irq": 0}},
                        context_switch_count=123456),
    "memory_info": group(5.0, memory_total_bytes=49345835008, memory_used_bytes=16042344448, swap_total_bytes=0, swap_used_bytes=0),
}
def doc(rts):
    return {"neuron_runtime_data": rts, "system_data": system,
            "instance_info": {"instance_name": "", "instance_id": "i-0011223344556677a", "instance_type": "trn1.32xlarge",
                              "instance_availability_zone": "us-west-2b", "instance_availability_zone_id": "usw2-az2",
                              "instance_region": "us-west-2", "ami_id": "ami-0011223344556677b", "subnet_id": "subnet-112233ee", "error": ""},
            "neuron_hardware_info": {"neuron_device_type": "trainium", "neuron_device_version": "v2", "neuroncore_version": "v2",
                                     "neuron_device_count": 2, "neuron_device_memory_size": 34359738368,
                                     "neuroncore_per_device_count": 2, "logical_neuroncore_config": 1, "error": ""}}
lines = []
# 1: one training runtime on cores 0 and 1
lines.append(doc([runtime(4242, "train", [0, 1], 100)]))
# 2: an untagged inference runtime joins on core 2, no model ran yet: latency null
lines.append(doc([runtime(4242, "train", [0, 1], 100), runtime(5151, "", [2], 0, lat=False)]))
# 3: a line cut short
lines.append(None)
# 4: the inference runtime exits; a group of train reports an error
d = doc([runtime(4242, "train", [0, 1], 100)])
d["neuron_runtime_data"][0]["report"]["neuroncore_counters"]["error"] = "failed to read the NeuronCore counters"
lines.append(d)
with open("tests/data/neuron-monitor/run.jsonl", "w") as f:
    for l in lines:
        f.write('{"neuron_runtime_data": [{"pid": 4242, "report": {\n' if l is None else json.dumps(l, separators=(",", ":")) + "\n")
