// Stands in for libpsm_infinipath.so.1 (its SONAME) when writ loads libfabric: Debian's
// libfabric names it (and, through it, libinfinipath.so.4, whose constructor pins the
// thread and sleeps ~0.1 s calibrating a clock) as a dependency. Every call fails, so
// libfabric's psm provider finds no device and stays out; tcp, shm and verbs never call
// it. Built without the C library (nothing here needs one). See docs/architecture.md.
typedef unsigned int uint32_t;

enum { kNoDevice = 21 };  // any value but PSM_OK (0) and PSM_OK_NO_PROGRESS (1)

int psm_ep_num_devunits(uint32_t* units) {
  if (units) *units = 0;
  return kNoDevice;
}
const char* psm_error_get_string(int error) {
  (void)error;
  return "PSM is not loaded by writ";
}
void* psm_epaddr_getctxt(void* epaddr) {
  (void)epaddr;
  return 0;
}

#define WRIT_PSM_FAILS(name) \
  int name(void) { return kNoDevice; }
WRIT_PSM_FAILS(psm_am_get_parameters)
WRIT_PSM_FAILS(psm_am_register_handlers)
WRIT_PSM_FAILS(psm_am_reply_short)
WRIT_PSM_FAILS(psm_am_request_short)
WRIT_PSM_FAILS(psm_ep_close)
WRIT_PSM_FAILS(psm_ep_connect)
WRIT_PSM_FAILS(psm_ep_epid_lookup)
WRIT_PSM_FAILS(psm_ep_open)
WRIT_PSM_FAILS(psm_ep_open_opts_get_defaults)
WRIT_PSM_FAILS(psm_epaddr_setctxt)
WRIT_PSM_FAILS(psm_error_register_handler)
WRIT_PSM_FAILS(psm_finalize)
WRIT_PSM_FAILS(psm_init)
WRIT_PSM_FAILS(psm_mq_cancel)
WRIT_PSM_FAILS(psm_mq_finalize)
WRIT_PSM_FAILS(psm_mq_init)
WRIT_PSM_FAILS(psm_mq_ipeek)
WRIT_PSM_FAILS(psm_mq_iprobe)
WRIT_PSM_FAILS(psm_mq_irecv)
WRIT_PSM_FAILS(psm_mq_isend)
WRIT_PSM_FAILS(psm_mq_send)
WRIT_PSM_FAILS(psm_mq_test)
