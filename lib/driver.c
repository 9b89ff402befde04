#include "config.h"

#include "lib/driver.h"

const char *const driver_memory_categories[DRIVER_MEMORY_CATEGORIES] = {
        "model_code",     "tensors",       "constants",     "model_shared_scratchpad",
        "runtime_memory", "driver_memory", "collectives",   "nonshared_scratchpad",
        "notifications",  "dma_rings",     "uncategorized",
};

const char *const driver_status_names[DRIVER_STATUS_NAMES] = {
        "success",
        "failure",
        "timeout",
        "exec_bad_input",
        "hw_error",
        "execute_completed_with_error",
        "execute_completed_with_num_error",
        "generic_error",
        "resource_error",
        "resource_nc_error",
        "execute_failed_to_queue",
        "invalid_error",
        "unsupported_neff_version",
        "oob_error",
        "hw_collectives_error",
        "hw_hbm_ue_error",
        "hw_nc_ue_error",
        "hw_dma_abort_error",
        "execute_sw_nq_overflow",
        "execute_sw_semaphore_error",
        "execute_sw_event_error",
        "execute_sw_psum_collision",
        "execute_sw_sequencer_fatal",
        "hw_repairable_hbm_ue_error",
};

const char *const driver_ecc_names[DRIVER_ECC__COUNT] = {
        [DRIVER_ECC_MEM_UNCORRECTED] = "mem_ecc_uncorrected",
        [DRIVER_ECC_MEM_REPAIRABLE_UNCORRECTED] = "mem_ecc_repairable_uncorrected",
        [DRIVER_ECC_SRAM_UNCORRECTED] = "sram_ecc_uncorrected",
};
