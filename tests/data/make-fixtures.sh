#!/bin/sh
# Regenerates the fixture trees in tests/data/<name>/ in the driver's sysfs
# layout (aws-neuron-driver, neuron_sysfs_metrics.c). Each tree is a sysfs root: pass it as
# "--backend sysfs:tests/data/<name>". The values are made up but
# consistent (device_mem/total is the sum of its categories); run this only
# when the layout changes, then UPDATE_GOLDEN=1 the golden tests.
set -eu
cd "$(dirname "$0")"

categories="model_code tensors constants model_shared_scratchpad runtime_memory driver_memory
  collectives nonshared_scratchpad notifications dma_rings uncategorized"
statuses="success failure timeout exec_bad_input hw_error execute_completed_with_error
  execute_completed_with_num_error generic_error resource_error resource_nc_error
  execute_failed_to_queue invalid_error unsupported_neff_version oob_error hw_collectives_error
  hw_hbm_ue_error hw_nc_ue_error hw_dma_abort_error execute_sw_nq_overflow
  execute_sw_semaphore_error execute_sw_event_error execute_sw_psum_collision
  execute_sw_sequencer_fatal hw_repairable_hbm_ue_error"

put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }

# core DIR SEED V2: one NeuronCore directory
core() {
  dir=$1 seed=$2
  put "$dir/info/architecture/arch_type" "$core_arch"
  sum=0 i=0
  for c in $categories; do
    i=$((i + 1))
    v=$(( (seed * 7919 + i * 104729) % 50 * 4096 * 1024 ))
    sum=$((sum + v))
    m=$dir/stats/memory_usage/device_mem/$c
    put "$m/total" "$v"; put "$m/present" 4096; put "$m/peak" "$((v + 4096))"
  done
  put "$dir/stats/memory_usage/device_mem/total" "$sum"
  put "$dir/stats/memory_usage/device_mem/present" 4096
  put "$dir/stats/memory_usage/device_mem/peak" "$((sum + 1048576))"
  for s in $statuses; do
    v=0
    case $s in success) v=$((seed * 1000 + 17)) ;; timeout) v=$seed ;; esac
    put "$dir/stats/status/$s/total" "$v"; put "$dir/stats/status/$s/present" 0
  done
  for o in model_load_count inference_count flop_count nc_time_in_use; do
    put "$dir/stats/other_info/$o/total" "$((seed * 3))"; put "$dir/stats/other_info/$o/present" 0
  done
  if [ "$v2" = 1 ]; then
    mkdir -p "$dir/stats/tensor_engine"
    printf 'xrow_grp,mm_active,wl_active,idle\n0,%d,%d,%d\n1,%d,%d,%d\n' \
      $((seed * 1000000)) $((seed * 10000)) 5000000 $((seed * 900000)) $((seed * 9000)) 5100000 \
      > "$dir/stats/tensor_engine/pe_cntrs"
  fi
}

# device ROOT INDEX CORES POWER
device() {
  d=$1/devices/virtual/neuron_device/neuron$2
  put "$d/info/architecture/device_name" "$device_name"
  put "$d/info/architecture/arch_type" "$arch"
  put "$d/info/architecture/instance_type" "$instance"
  # Root-only attributes are present but unreadable on a real host; core_count
  # has no trailing newline. The collector reads neither.
  printf '%s' "$3" > "$d/core_count"
  if [ "$v2" = 1 ]; then
    put "$d/info/serial_number" "$(printf '%016x' $((0x1234abcd00 + $2)))"
    put "$d/stats/hardware/mem_ecc_uncorrected" "$2"
    put "$d/stats/hardware/mem_ecc_repairable_uncorrected" 0
    put "$d/stats/hardware/sram_ecc_uncorrected" 1
    put "$d/stats/power/utilization" "$4"
  fi
  for h in dma_buffers tensors constants application_memory driver_memory notifications dma_rings uncategorized; do
    put "$d/stats/memory_usage/host_mem/$h/total" 1048576
    put "$d/stats/memory_usage/host_mem/$h/present" 0
    put "$d/stats/memory_usage/host_mem/$h/peak" 1048576
  done
  k=0
  while [ $k -lt "$3" ]; do
    core "$d/neuron_core$k" $(( $2 * 10 + k + 1 ))
    k=$((k + 1))
  done
}

tree() { rm -rf "$1"; put "$1/module/neuron/version" "$2"; }

device_name=Inferentia arch=NDv1 core_arch=NCv1 instance=inf1.2xlarge v2=0
tree inf1 2.19.64.0
device inf1 0 4 ""

device_name=Inferentia2 arch=NDv3 core_arch=NCv2 instance=inf2.xlarge v2=1
tree inf2 2.19.64.0
device inf2 0 2 "POWER_STATUS_VALID,1763700000,21.50,48.25,35.75"

# A container that sees two of the sixteen devices of a trn1.32xlarge.
device_name=Trainium1 arch=NDv2 core_arch=NCv2 instance=trn1.32xlarge v2=1
tree trn1 2.19.64.0
device trn1 0 2 "POWER_STATUS_VALID,1763700000,40.00,60.00,50.00"
device trn1 3 2 "POWER_STATUS_INVALID,1763700000,0.00,0.00,0.00"

device_name=Trainium2 arch=NDv3 core_arch=NCv3 instance=trn2.48xlarge v2=1
tree trn2 2.21.37.0
device trn2 0 8 "POWER_STATUS_NO_DATA,1763700000,0.00,0.00,0.00"

# One host of a Trn2 UltraServer: node 2 of 4, with the driver's class-level
# UltraServer files (aws-neuron-driver neuron_cdev.c, v3/neuron_pelect.c).
device_name=Trainium2 arch=NDv3 core_arch=NCv3 instance=trn2u.48xlarge v2=1
tree trn2u 2.24.7.0
device trn2u 0 8 "POWER_STATUS_VALID,1763700000,30.00,70.00,55.00"
class=trn2u/class/neuron_device
put "$class/ultraserver_mode" "1,2,3,4"
put "$class/node_id_4" 2
put "$class/server_id_4" 5a0c3e91d2b84f07
put "$class/node_id_2" 0
put "$class/server_id_2" 5a0c3e91d2b84f08
