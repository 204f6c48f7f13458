/* A raw libfabric program that forces an error completion: it posts a receive on a
 * tcp;ofi_rxm RDM endpoint, cancels it (fi_cancel) and reads the FI_ECANCELED error entry
 * with fi_cq_readerr. Exit 0 when that entry was read. Run under `writ capture`. */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                               \
  do {                                                            \
    int rc_ = (int)(call);                                        \
    if (rc_) {                                                    \
      fprintf(stderr, "%s: %s\n", #call, fi_strerror(-rc_));      \
      return 1;                                                   \
    }                                                             \
  } while (0)

int main(void) {
  struct fi_info *hints = fi_allocinfo(), *info = NULL;
  hints->caps = FI_MSG;
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
  hints->mode = FI_CONTEXT;
  CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, hints, &info));
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  struct fid_ep *ep;
  CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
  CHECK(fi_domain(fabric, info, &domain, NULL));
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE};
  CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
  struct fi_av_attr av_attr = {.type = FI_AV_MAP};
  CHECK(fi_av_open(domain, &av_attr, &av, NULL));
  CHECK(fi_endpoint(domain, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_ep_bind(ep, &av->fid, 0));
  CHECK(fi_enable(ep));
  static char buf[64];
  static struct fi_context ctx;
  CHECK(fi_recv(ep, buf, sizeof buf, NULL, FI_ADDR_UNSPEC, &ctx));
  CHECK(fi_cancel(&ep->fid, &ctx));
  for (int spins = 0; spins < 1000000; ++spins) {
    struct fi_cq_msg_entry entry;
    ssize_t n = fi_cq_read(cq, &entry, 1);
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      if (fi_cq_readerr(cq, &err, 0) == 1) {
        printf("error completion: %s\n", fi_strerror(err.err));
        return err.err == FI_ECANCELED ? 0 : 2;
      }
    }
  }
  fprintf(stderr, "no error completion\n");
  return 3;
}
