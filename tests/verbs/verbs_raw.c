/* Raw libibverbs programs for `writ capture`'s tests, on device DEVICE:
 *
 * verbs_raw flushed-receive DEVICE: an RC QP whose CQ is an extended one
 *   (ibv_create_cq_ex, read with ibv_start_poll) gets one receive (wr_id 7) in INIT, a
 *   send there (refused: a QP sends from RTS only), is moved to ERR, and the receive's
 *   IBV_WC_WR_FLUSH_ERR completion is read. Prints "qp N".
 * verbs_raw wr-writes DEVICE N: two RC QPs connected to each other through the device
 *   (RoCE v2, GID 1); the first writes N times 4 KiB into the second's memory through
 *   ibv_wr_start / ibv_wr_rdma_write / ibv_wr_set_sge / ibv_wr_complete, every write
 *   signaled, the completions read with ibv_poll_cq; the bytes are then compared.
 *
 * Exit 0 when everything described happened. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond, what)                   \
  do {                                      \
    if (!(cond)) {                          \
      fprintf(stderr, "%s failed\n", what); \
      return 1;                             \
    }                                       \
  } while (0)

/* Polls are bounded by time, not by count: under an emulated CPU a count runs out first. */
static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct ibv_context *open_named(const char *name) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  struct ibv_context *context = NULL;
  for (int i = 0; list && i < n && !context; ++i)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) context = ibv_open_device(list[i]);
  if (list) ibv_free_device_list(list);
  return context;
}

static int flushed_receive(const char *device) {
  struct ibv_context *context = open_named(device);
  CHECK(context, "ibv_open_device");
  struct ibv_pd *pd = ibv_alloc_pd(context);
  CHECK(pd, "ibv_alloc_pd");
  struct ibv_cq_init_attr_ex cq_attr = {
      .cqe = 16, .wc_flags = IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_BYTE_LEN};
  struct ibv_cq_ex *cq = ibv_create_cq_ex(context, &cq_attr);
  CHECK(cq, "ibv_create_cq_ex");
  struct ibv_qp_init_attr qp_attr = {.send_cq = ibv_cq_ex_to_cq(cq),
                                     .recv_cq = ibv_cq_ex_to_cq(cq),
                                     .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                             .max_send_sge = 1, .max_recv_sge = 1},
                                     .qp_type = IBV_QPT_RC};
  struct ibv_qp *qp = ibv_create_qp(pd, &qp_attr);
  CHECK(qp, "ibv_create_qp");
  static char buf[4096];
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr, "ibv_reg_mr");
  struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                             .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
  CHECK(ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                     IBV_QP_ACCESS_FLAGS) == 0, "ibv_modify_qp INIT");
  struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof buf, .lkey = mr->lkey};
  struct ibv_recv_wr receive = {.wr_id = 7, .sg_list = &sge, .num_sge = 1}, *bad_receive;
  CHECK(ibv_post_recv(qp, &receive, &bad_receive) == 0, "ibv_post_recv");
  struct ibv_send_wr send = {.wr_id = 8, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED}, *bad_send;
  CHECK(ibv_post_send(qp, &send, &bad_send) != 0, "ibv_post_send refused in INIT");
  struct ibv_qp_attr error = {.qp_state = IBV_QPS_ERR};
  CHECK(ibv_modify_qp(qp, &error, IBV_QP_STATE) == 0, "ibv_modify_qp ERR");
  struct ibv_poll_cq_attr poll = {0};
  int found = 0;
  for (const double until = seconds_now() + 30; !found && seconds_now() < until;) {
    if (ibv_start_poll(cq, &poll) != 0) continue;
    found = cq->wr_id == 7 && cq->status == IBV_WC_WR_FLUSH_ERR;
    ibv_end_poll(cq);
  }
  CHECK(found, "the flushed receive's completion");
  printf("qp %u\n", qp->qp_num);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  return 0;
}

struct rc_end {
  struct ibv_qp *qp;
  struct ibv_qp_ex *qpx;
};

static int to_rts(struct ibv_qp *qp, unsigned remote_qpn, const union ibv_gid *gid) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                          .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote_qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = *gid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int wr_writes(const char *device, int writes) {
  enum { kChunk = 4096 };
  struct ibv_context *context = open_named(device);
  CHECK(context, "ibv_open_device");
  struct ibv_pd *pd = ibv_alloc_pd(context);
  struct ibv_cq *cq = ibv_create_cq(context, 2 * writes + 4, NULL, NULL, 0);
  CHECK(pd && cq, "ibv_alloc_pd, ibv_create_cq");
  struct rc_end ends[2];
  for (int i = 0; i < 2; ++i) {
    struct ibv_qp_init_attr_ex attr = {
        .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
        .cap = {.max_send_wr = writes + 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE};
    ends[i].qp = ibv_create_qp_ex(context, &attr);
    CHECK(ends[i].qp, "ibv_create_qp_ex with send ops");
    ends[i].qpx = ibv_qp_to_qp_ex(ends[i].qp);
  }
  union ibv_gid gid;
  CHECK(ibv_query_gid(context, 1, 1, &gid) == 0, "ibv_query_gid 1");
  CHECK(to_rts(ends[0].qp, ends[1].qp->qp_num, &gid) == 0 &&
            to_rts(ends[1].qp, ends[0].qp->qp_num, &gid) == 0, "connecting the QPs");
  char *source = malloc((size_t)writes * kChunk), *target = calloc((size_t)writes, kChunk);
  CHECK(source && target, "malloc");
  for (int i = 0; i < writes * kChunk; ++i) source[i] = (char)(i * 7 + i / kChunk);
  struct ibv_mr *from = ibv_reg_mr(pd, source, (size_t)writes * kChunk, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_mr *to = ibv_reg_mr(pd, target, (size_t)writes * kChunk,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CHECK(from && to, "ibv_reg_mr");
  struct ibv_qp_ex *qpx = ends[0].qpx;
  ibv_wr_start(qpx);
  for (int i = 0; i < writes; ++i) {
    qpx->wr_id = 100 + (uint64_t)i;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(qpx, to->rkey, (uintptr_t)target + (uint64_t)i * kChunk);
    ibv_wr_set_sge(qpx, from->lkey, (uintptr_t)source + (uint64_t)i * kChunk, kChunk);
  }
  CHECK(ibv_wr_complete(qpx) == 0, "ibv_wr_complete");
  int done = 0;
  for (const double until = seconds_now() + 30; done < writes && seconds_now() < until;) {
    struct ibv_wc wc[8];
    const int n = ibv_poll_cq(cq, 8, wc);
    CHECK(n >= 0, "ibv_poll_cq");
    for (int k = 0; k < n; ++k) {
      CHECK(wc[k].status == IBV_WC_SUCCESS, ibv_wc_status_str(wc[k].status));
      ++done;
    }
  }
  CHECK(done == writes, "every write's completion");
  CHECK(memcmp(source, target, (size_t)writes * kChunk) == 0, "the target holding the bytes");
  printf("wrote %d x %d bytes through qp %u\n", writes, kChunk, ends[0].qp->qp_num);
  for (int i = 0; i < 2; ++i) ibv_destroy_qp(ends[i].qp);
  ibv_dereg_mr(from);
  ibv_dereg_mr(to);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "flushed-receive") == 0) return flushed_receive(argv[2]);
  if (argc == 4 && strcmp(argv[1], "wr-writes") == 0) return wr_writes(argv[2], atoi(argv[3]));
  fprintf(stderr, "usage: verbs_raw flushed-receive DEVICE | wr-writes DEVICE N\n");
  return 2;
}
