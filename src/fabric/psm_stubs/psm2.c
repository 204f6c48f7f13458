// Stands in for libpsm2.so.2 (its SONAME) when writ loads libfabric: Debian's libfabric
// names it as a dependency and its constructor, like libinfinipath's, pins the thread and
// sleeps ~0.1 s calibrating a clock. Every call fails, so libfabric's psm2 provider finds
// no device and stays out. The symbols carry libpsm2's version (psm2.map), as libfabric
// asks for them by it. See psm_infinipath.c.
typedef unsigned int uint32_t;

enum { kNoDevice = 21 };  // any value but PSM2_OK (0) and PSM2_OK_NO_PROGRESS (1)

int psm2_ep_num_devunits(uint32_t* units) {
  if (units) *units = 0;
  return kNoDevice;
}
const char* psm2_error_get_string(int error) {
  (void)error;
  return "PSM2 is not loaded by writ";
}
void* psm2_epaddr_getctxt(void* epaddr) {
  (void)epaddr;
  return 0;
}
int psm2_info_query(int request, void* out, int argc, void* args) {
  (void)request, (void)out, (void)argc, (void)args;
  return kNoDevice;
}
unsigned long long psm2_get_capability_mask(unsigned long long mask) {
  (void)mask;
  return 0;
}

#define WRIT_PSM2_FAILS(name) \
  int name(void) { return kNoDevice; }
WRIT_PSM2_FAILS(psm2_am_get_parameters)
WRIT_PSM2_FAILS(psm2_am_get_source)
WRIT_PSM2_FAILS(psm2_am_register_handlers_2)
WRIT_PSM2_FAILS(psm2_am_reply_short)
WRIT_PSM2_FAILS(psm2_am_request_short)
WRIT_PSM2_FAILS(psm2_ep_close)
WRIT_PSM2_FAILS(psm2_ep_connect)
WRIT_PSM2_FAILS(psm2_ep_disconnect2)
WRIT_PSM2_FAILS(psm2_ep_epid_lookup2)
WRIT_PSM2_FAILS(psm2_ep_open)
WRIT_PSM2_FAILS(psm2_ep_open_opts_get_defaults)
WRIT_PSM2_FAILS(psm2_epaddr_setctxt)
WRIT_PSM2_FAILS(psm2_epaddr_to_epid)
WRIT_PSM2_FAILS(psm2_error_register_handler)
WRIT_PSM2_FAILS(psm2_finalize)
WRIT_PSM2_FAILS(psm2_init)
WRIT_PSM2_FAILS(psm2_mq_cancel)
WRIT_PSM2_FAILS(psm2_mq_improbe2)
WRIT_PSM2_FAILS(psm2_mq_imrecv)
WRIT_PSM2_FAILS(psm2_mq_init)
WRIT_PSM2_FAILS(psm2_mq_ipeek)
WRIT_PSM2_FAILS(psm2_mq_iprobe2)
WRIT_PSM2_FAILS(psm2_mq_irecv2)
WRIT_PSM2_FAILS(psm2_mq_isend2)
WRIT_PSM2_FAILS(psm2_mq_send2)
WRIT_PSM2_FAILS(psm2_mq_test2)
WRIT_PSM2_FAILS(psm2_mq_wait2)
WRIT_PSM2_FAILS(psm2_poll)
