// bench/mr_reg_cost.c: what registering and revoking one window costs a provider
// (fi_mr_reg + fi_close of SIZE MiB of mapped, touched memory, N times), the cost writ pays
// per granted window instead of registering its volatile memory once (docs/security.md).
//   cc -O2 -o /tmp/mr_reg_cost bench/mr_reg_cost.c -lfabric
//   /tmp/mr_reg_cost PROVIDER SIZE_MIB N      e.g. /tmp/mr_reg_cost 'tcp;ofi_rxm' 32 2000
// On verbs (Soft-RoCE, where a registration pins its pages), inside the guest:
//   scripts/guest/run-in-guest.sh -- /var/tmp/mr_reg_cost verbs 32 200
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char** argv) {
  const char* prov = argv[1];
  size_t win = (size_t)atol(argv[2]) << 20;
  int n = atoi(argv[3]);
  struct fi_info *h = fi_allocinfo(), *info;
  h->fabric_attr->prov_name = strdup(prov);
  h->caps = FI_RMA;
  h->ep_attr->type = FI_EP_RDM;
  if (!strcmp(prov, "tcp") || !strcmp(prov, "verbs")) h->ep_attr->type = FI_EP_MSG;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL;
  h->caps = FI_RMA | FI_MSG;
  if (fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &info)) {
    printf("no %s\n", prov);
    return 1;
  }
  struct fid_fabric* f;
  struct fid_domain* d;
  fi_fabric(info->fabric_attr, &f, NULL);
  fi_domain(f, info, &d, NULL);
  uint8_t* buf =
      mmap(NULL, win * 4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  double t0 = now();
  for (int i = 0; i < n; i++) {
    struct fid_mr* mr;
    if (fi_mr_reg(d, buf + (i % 4) * win, win, FI_REMOTE_WRITE, 0, i + 1, 0, &mr, NULL)) {
      printf("reg fail\n");
      return 1;
    }
    fi_close(&mr->fid);
  }
  double t = now() - t0;
  printf("%s: %d x (fi_mr_reg + fi_close) of %zu MiB: %.1f us each, %.3f ms per GiB of windows\n",
         prov, n, win >> 20, t / n * 1e6, t / n * (1024.0 / (win >> 20)) * 1e3);
  return 0;
}
