/* Observing a program's libibverbs calls without changing them. ibv_open_device,
 * ibv_create_qp, ibv_qp_to_qp_ex and the memory registrations are exported and
 * interposed (LD_PRELOAD); posting and polling are static inline (ibv_post_send,
 * ibv_post_recv, ibv_poll_cq call through the context's ops; ibv_wr_* through the
 * ibv_qp_ex; ibv_start_poll through the ibv_cq_ex; ibv_create_qp_ex and ibv_create_cq_ex
 * through the verbs_context), so each observed context gets those function pointers
 * replaced by ones that journal the call and then call the provider's own. Arguments and
 * results pass through untouched.
 *
 * Only programs that use libibverbs themselves are observed: in a process that has
 * libfabric loaded, the verbs calls are its verbs provider's (libfabric_hooks.c observes
 * the program's libfabric calls) and stay unobserved. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"

#define WRIT_EXPORT __attribute__((visibility("default")))

/* The exported functions this file defines are the program's way in; libibverbs' own
 * are found behind them (the versions the program was linked against). */
static void *real_symbol(const char *name, const char *version) {
  void *f = dlvsym(RTLD_NEXT, name, version);
  return f ? f : dlsym(RTLD_NEXT, name);
}

/* libibverbs may call its own exported functions (ibv_reg_mr through ibv_reg_mr_iova2):
 * only the program's outermost call is journaled. */
static __thread int verbs_depth;
#define VERBS_INNER(statement) \
  do {                         \
    ++verbs_depth;             \
    statement;                 \
    --verbs_depth;             \
  } while (0)

/* ---- observed contexts: the provider's own function pointers, saved ---- */

#define WRIT_MAX_CONTEXTS 64

struct observed_context {
  _Atomic(struct ibv_context *) context;
  struct ibv_context_ops orig;
  struct ibv_qp *(*create_qp_ex)(struct ibv_context *, struct ibv_qp_init_attr_ex *);
  struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *, struct ibv_cq_init_attr_ex *);
};

static struct observed_context contexts[WRIT_MAX_CONTEXTS];
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;

static struct observed_context *observed(const struct ibv_context *context) {
  for (unsigned i = 0; i < WRIT_MAX_CONTEXTS; ++i)
    if (atomic_load_explicit(&contexts[i].context, memory_order_acquire) == context)
      return &contexts[i];
  return NULL;
}

static unsigned context_index(const struct observed_context *c) {
  return (unsigned)(c - contexts);
}

/* ---- observed QPs (ibv_qp_ex) and extended CQs, keyed by address ---- */

/* A work request built through ibv_wr_*: journaled when the next one starts or the batch
 * ends, once its scatter list (its length) is known. */
struct building_wr {
  int open;
  const char *op;
  uint64_t wr_id;
  unsigned flags;
  int has_imm;
  uint32_t imm;
  uint64_t bytes;
};

struct observed_qp {
  _Atomic(void *) key;
  unsigned dev, qp_num, batch;
  struct building_wr wr;
  struct ibv_qp_ex orig; /* the provider's function pointers */
};

struct observed_cq {
  _Atomic(void *) key;
  unsigned dev;
  int (*start_poll)(struct ibv_cq_ex *, struct ibv_poll_cq_attr *);
  int (*next_poll)(struct ibv_cq_ex *);
};

#define WRIT_MAX_QPS 4096
#define WRIT_MAX_CQS 1024
static struct observed_qp qps[WRIT_MAX_QPS];
static struct observed_cq cqs[WRIT_MAX_CQS];
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(const void *key, size_t size) {
  return (size_t)(((uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull >> 20) % size;
}

/* Open addressing, nothing ever removed: a freed object's address taken by a new one
 * finds its old slot and is set up again. Lookups take no lock (the slot is written
 * before the wrapped pointers that lead to it are installed). */
#define FIND_SLOT(table, size, k)                                                    \
  ({                                                                                 \
    __typeof__(&(table)[0]) found_ = NULL;                                           \
    for (size_t i_ = 0, s_ = slot_of((k), (size)); i_ < (size); ++i_) {              \
      void *at_ = atomic_load_explicit(&(table)[(s_ + i_) % (size)].key,             \
                                       memory_order_acquire);                        \
      if (at_ == (k) || at_ == NULL) {                                               \
        found_ = at_ == (k) ? &(table)[(s_ + i_) % (size)] : NULL;                   \
        break;                                                                       \
      }                                                                              \
    }                                                                                \
    found_;                                                                          \
  })

/* A slot for `key` (its own, or a free one), or NULL when the table is full. */
#define CLAIM_SLOT(table, size, k)                                                   \
  ({                                                                                 \
    __typeof__(&(table)[0]) claimed_ = NULL;                                         \
    for (size_t i_ = 0, s_ = slot_of((k), (size)); i_ < (size); ++i_) {              \
      void *at_ = atomic_load_explicit(&(table)[(s_ + i_) % (size)].key,             \
                                       memory_order_relaxed);                        \
      if (at_ == (k) || at_ == NULL) {                                               \
        claimed_ = &(table)[(s_ + i_) % (size)];                                     \
        break;                                                                       \
      }                                                                              \
    }                                                                                \
    claimed_;                                                                        \
  })

/* ---- journal records ---- */

static const char *wr_op_name(enum ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE: return "write";
    case IBV_WR_RDMA_WRITE_WITH_IMM: return "writedata";
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_TSO: return "send";
    case IBV_WR_SEND_WITH_IMM: return "senddata";
    case IBV_WR_RDMA_READ: return "read";
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_WRITE: return "atomic";
    case IBV_WR_LOCAL_INV:
    case IBV_WR_BIND_MW: return "local";
    default: return "other";
  }
}

static void line_queue(struct writ_line *l, const char *type, unsigned dev, const char *queue,
                       unsigned number) {
  l->n = 0;
  writ_line_str(l, "{\"t\":\"");
  writ_line_str(l, type);
  writ_line_str(l, "\",\"dev\":");
  writ_line_u64(l, dev);
  writ_line_str(l, queue);
  writ_line_u64(l, number);
}

/* One work request on a send or receive queue (queue ",\"qp\":" or ",\"srq\":"). `ret`
 * is the post's result; a request built through ibv_wr_* has none yet (its batch says). */
static void journal_wr(unsigned dev, const char *queue, unsigned number, const char *op,
                       uint64_t bytes, unsigned flags, uint64_t wr_id, int has_imm,
                       uint32_t imm, const int *ret) {
  struct writ_line l;
  line_queue(&l, "vwr", dev, queue, number);
  writ_line_str(&l, ",\"op\":\"");
  writ_line_str(&l, op);
  writ_line_str(&l, "\",\"bytes\":");
  writ_line_u64(&l, bytes);
  writ_line_str(&l, ",\"flags\":");
  writ_line_u64(&l, flags);
  writ_line_str(&l, ",\"wr_id\":");
  writ_line_u64(&l, wr_id);
  writ_line_str(&l, ",\"data\":");
  if (has_imm)
    writ_line_u64(&l, imm);
  else
    writ_line_str(&l, "null");
  if (ret) {
    writ_line_str(&l, ",\"ret\":");
    writ_line_i64(&l, *ret);
  } else {
    writ_line_str(&l, ",\"batch\":1");
  }
  writ_line_str(&l, ",\"ns\":");
  writ_line_u64(&l, writ_journal_now_ns());
  writ_line_str(&l, "}");
  writ_journal_line(&l);
}

static uint64_t sge_bytes(const struct ibv_sge *sge, int count) {
  uint64_t total = 0;
  for (int i = 0; i < count; ++i) total += sge[i].length;
  return total;
}

/* A completion: on success what ibv_poll_cq(3) says the entry carries; on error only
 * wr_id, status, qp_num and vendor_err, the fields valid then. */
struct seen_completion {
  unsigned dev, cq, qp_num;
  int has_qp;
  uint64_t wr_id;
  enum ibv_wc_status status;
  enum ibv_wc_opcode opcode;
  unsigned wc_flags;
  uint32_t byte_len, vendor_err, imm;
};

static void journal_completion(const struct seen_completion *c, uint64_t now) {
  struct writ_line l;
  line_queue(&l, "vwc", c->dev, ",\"cq\":", c->cq);
  writ_line_str(&l, ",\"qp\":");
  if (c->has_qp)
    writ_line_u64(&l, c->qp_num);
  else
    writ_line_str(&l, "null");
  writ_line_str(&l, ",\"wr_id\":");
  writ_line_u64(&l, c->wr_id);
  writ_line_str(&l, ",\"status\":");
  writ_line_u64(&l, (unsigned)c->status);
  if (c->status == IBV_WC_SUCCESS) {
    writ_line_str(&l, ",\"opcode\":");
    writ_line_u64(&l, (unsigned)c->opcode);
    writ_line_str(&l, ",\"wc_flags\":");
    writ_line_u64(&l, c->wc_flags);
    writ_line_str(&l, ",\"byte_len\":");
    writ_line_u64(&l, c->byte_len);
    writ_line_str(&l, ",\"data\":");
    if (c->wc_flags & IBV_WC_WITH_IMM)
      writ_line_u64(&l, c->imm);
    else
      writ_line_str(&l, "null");
  } else {
    writ_line_str(&l, ",\"vendor_err\":");
    writ_line_u64(&l, c->vendor_err);
  }
  writ_line_str(&l, ",\"ns\":");
  writ_line_u64(&l, now);
  writ_line_str(&l, "}");
  writ_journal_line(&l);
}

/* ---- the context's ops: ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq ---- */

static int w_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  struct observed_context *c = observed(qp->context);
  struct ibv_send_wr *first_bad = NULL;
  if (!bad) bad = &first_bad;
  *bad = NULL;
  int r;
  VERBS_INNER(r = c->orig.post_send(qp, wr, bad));
  if (verbs_depth) return r;
  /* Everything before *bad was posted; *bad and the rest were not (all of them, when the
   * provider failed without naming one). */
  int posted = r == 0 || *bad != NULL;
  for (struct ibv_send_wr *w = wr; w; w = w->next) {
    if (r != 0 && w == *bad) posted = 0;
    const int ret = posted ? 0 : r;
    const int imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w->opcode == IBV_WR_SEND_WITH_IMM;
    journal_wr(context_index(c), ",\"qp\":", qp->qp_num, wr_op_name(w->opcode),
               sge_bytes(w->sg_list, w->num_sge), w->send_flags, w->wr_id, imm,
               imm ? ntohl(w->imm_data) : 0, &ret);
  }
  return r;
}

static void journal_receives(unsigned dev, const char *queue, unsigned number,
                             const struct ibv_recv_wr *wr, const struct ibv_recv_wr *bad, int r) {
  int posted = r == 0 || bad != NULL;
  for (const struct ibv_recv_wr *w = wr; w; w = w->next) {
    if (r != 0 && w == bad) posted = 0;
    const int ret = posted ? 0 : r;
    journal_wr(dev, queue, number, "recv", sge_bytes(w->sg_list, w->num_sge), 0, w->wr_id, 0, 0,
               &ret);
  }
}

static int w_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  struct observed_context *c = observed(qp->context);
  struct ibv_recv_wr *first_bad = NULL;
  if (!bad) bad = &first_bad;
  *bad = NULL;
  int r;
  VERBS_INNER(r = c->orig.post_recv(qp, wr, bad));
  if (!verbs_depth) journal_receives(context_index(c), ",\"qp\":", qp->qp_num, wr, *bad, r);
  return r;
}

static int w_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  struct observed_context *c = observed(srq->context);
  struct ibv_recv_wr *first_bad = NULL;
  if (!bad) bad = &first_bad;
  *bad = NULL;
  int r;
  VERBS_INNER(r = c->orig.post_srq_recv(srq, wr, bad));
  if (!verbs_depth) journal_receives(context_index(c), ",\"srq\":", srq->handle, wr, *bad, r);
  return r;
}

static int w_poll_cq(struct ibv_cq *cq, int count, struct ibv_wc *wc) {
  struct observed_context *c = observed(cq->context);
  int n;
  VERBS_INNER(n = c->orig.poll_cq(cq, count, wc));
  if (n <= 0 || verbs_depth) return n;
  const uint64_t now = writ_journal_now_ns();
  for (int i = 0; i < n; ++i) {
    const struct ibv_wc *e = &wc[i];
    const struct seen_completion seen = {
        context_index(c), cq->handle, e->qp_num, 1, e->wr_id, e->status, e->opcode, e->wc_flags,
        e->byte_len, e->vendor_err, (e->wc_flags & IBV_WC_WITH_IMM) ? ntohl(e->imm_data) : 0};
    journal_completion(&seen, now);
  }
  return n;
}

/* ---- ibv_qp_ex: ibv_wr_start, the builders, ibv_wr_complete / ibv_wr_abort ---- */

#define QPX(qp) (FIND_SLOT(qps, WRIT_MAX_QPS, (void *)(qp)))

static void finish_wr(struct observed_qp *q) {
  if (!q->wr.open || verbs_depth) return;
  journal_wr(q->dev, ",\"qp\":", q->qp_num, q->wr.op, q->wr.bytes, q->wr.flags, q->wr.wr_id,
             q->wr.has_imm, q->wr.imm, NULL);
  q->wr.open = 0;
  ++q->batch;
}

/* The application sets wr_id and wr_flags before calling a builder (ibv_wr_post(3)). */
static void begin_wr(struct ibv_qp_ex *qp, struct observed_qp *q, const char *op, int has_imm,
                     __be32 imm) {
  finish_wr(q);
  q->wr = (struct building_wr){1, op, qp->wr_id, qp->wr_flags, has_imm, has_imm ? ntohl(imm) : 0, 0};
}

static void w_wr_start(struct ibv_qp_ex *qp) {
  struct observed_qp *q = QPX(qp);
  q->batch = 0;
  q->wr.open = 0;
  q->orig.wr_start(qp);
}
static int w_wr_complete(struct ibv_qp_ex *qp) {
  struct observed_qp *q = QPX(qp);
  finish_wr(q);
  int r;
  VERBS_INNER(r = q->orig.wr_complete(qp));
  if (!verbs_depth) {
    writ_journal_printf("{\"t\":\"vbatch\",\"dev\":%u,\"qp\":%u,\"n\":%u,\"ret\":%d}", q->dev,
                        q->qp_num, q->batch, r);
  }
  q->batch = 0;
  return r;
}
static void w_wr_abort(struct ibv_qp_ex *qp) {
  struct observed_qp *q = QPX(qp);
  finish_wr(q);
  q->orig.wr_abort(qp);
  writ_journal_printf("{\"t\":\"vbatch\",\"dev\":%u,\"qp\":%u,\"n\":%u,\"aborted\":1}", q->dev,
                      q->qp_num, q->batch);
  q->batch = 0;
}

static void w_wr_rdma_write(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t addr) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "write", 0, 0);
  q->orig.wr_rdma_write(qp, rkey, addr);
}
static void w_wr_rdma_write_imm(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t addr, __be32 imm) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "writedata", 1, imm);
  q->orig.wr_rdma_write_imm(qp, rkey, addr, imm);
}
static void w_wr_rdma_read(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t addr) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "read", 0, 0);
  q->orig.wr_rdma_read(qp, rkey, addr);
}
static void w_wr_send(struct ibv_qp_ex *qp) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "send", 0, 0);
  q->orig.wr_send(qp);
}
static void w_wr_send_imm(struct ibv_qp_ex *qp, __be32 imm) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "senddata", 1, imm);
  q->orig.wr_send_imm(qp, imm);
}
static void w_wr_send_inv(struct ibv_qp_ex *qp, uint32_t rkey) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "send", 0, 0);
  q->orig.wr_send_inv(qp, rkey);
}
static void w_wr_atomic_cmp_swp(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t addr,
                                uint64_t compare, uint64_t swap) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "atomic", 0, 0);
  q->orig.wr_atomic_cmp_swp(qp, rkey, addr, compare, swap);
}
static void w_wr_atomic_fetch_add(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t addr,
                                  uint64_t add) {
  struct observed_qp *q = QPX(qp);
  begin_wr(qp, q, "atomic", 0, 0);
  q->orig.wr_atomic_fetch_add(qp, rkey, addr, add);
}
static void w_wr_set_sge(struct ibv_qp_ex *qp, uint32_t lkey, uint64_t addr, uint32_t length) {
  struct observed_qp *q = QPX(qp);
  q->wr.bytes += length;
  q->orig.wr_set_sge(qp, lkey, addr, length);
}
static void w_wr_set_sge_list(struct ibv_qp_ex *qp, size_t count, const struct ibv_sge *list) {
  struct observed_qp *q = QPX(qp);
  q->wr.bytes += sge_bytes(list, (int)count);
  q->orig.wr_set_sge_list(qp, count, list);
}
static void w_wr_set_inline_data(struct ibv_qp_ex *qp, void *addr, size_t length) {
  struct observed_qp *q = QPX(qp);
  q->wr.bytes += length;
  q->wr.flags |= IBV_SEND_INLINE;
  q->orig.wr_set_inline_data(qp, addr, length);
}
static void w_wr_set_inline_data_list(struct ibv_qp_ex *qp, size_t count,
                                      const struct ibv_data_buf *list) {
  struct observed_qp *q = QPX(qp);
  for (size_t i = 0; i < count; ++i) q->wr.bytes += list[i].length;
  q->wr.flags |= IBV_SEND_INLINE;
  q->orig.wr_set_inline_data_list(qp, count, list);
}

#define WRAP(ptr, ours) \
  if (qp->ptr) qp->ptr = ours
static void wrap_qp_ex(struct ibv_qp_ex *qp, unsigned dev) {
  pthread_mutex_lock(&tables_lock);
  struct observed_qp *q = CLAIM_SLOT(qps, WRIT_MAX_QPS, (void *)qp);
  if (q) {
    q->dev = dev;
    q->qp_num = qp->qp_base.qp_num;
    q->batch = 0;
    q->wr.open = 0;
    q->orig = *qp;
    atomic_store_explicit(&q->key, (void *)qp, memory_order_release);
  }
  pthread_mutex_unlock(&tables_lock);
  if (!q) {
    writ_journal_printf("{\"t\":\"unobserved\",\"what\":\"qp %u: more than %d QPs\"}",
                        qp->qp_base.qp_num, WRIT_MAX_QPS);
    return;
  }
  WRAP(wr_start, w_wr_start);
  WRAP(wr_complete, w_wr_complete);
  WRAP(wr_abort, w_wr_abort);
  WRAP(wr_rdma_write, w_wr_rdma_write);
  WRAP(wr_rdma_write_imm, w_wr_rdma_write_imm);
  WRAP(wr_rdma_read, w_wr_rdma_read);
  WRAP(wr_send, w_wr_send);
  WRAP(wr_send_imm, w_wr_send_imm);
  WRAP(wr_send_inv, w_wr_send_inv);
  WRAP(wr_atomic_cmp_swp, w_wr_atomic_cmp_swp);
  WRAP(wr_atomic_fetch_add, w_wr_atomic_fetch_add);
  WRAP(wr_set_sge, w_wr_set_sge);
  WRAP(wr_set_sge_list, w_wr_set_sge_list);
  WRAP(wr_set_inline_data, w_wr_set_inline_data);
  WRAP(wr_set_inline_data_list, w_wr_set_inline_data_list);
  /* Builders not wrapped (bind_mw, local_inv, send_tso, atomic_write) still reach the
   * provider; what they build is journaled under the previous builder's name. */
  if (qp->wr_bind_mw || qp->wr_local_inv || qp->wr_send_tso || qp->wr_atomic_write)
    writ_journal_printf(
        "{\"t\":\"unobserved\",\"what\":\"qp %u: ibv_wr_bind_mw, ibv_wr_local_inv, "
        "ibv_wr_send_tso and ibv_wr_atomic_write are not journaled\"}",
        qp->qp_base.qp_num);
}
#undef WRAP

/* ---- ibv_cq_ex: ibv_start_poll, ibv_next_poll ---- */

#define CQX(cq) (FIND_SLOT(cqs, WRIT_MAX_CQS, (void *)(cq)))

static void journal_current(struct ibv_cq_ex *cq, unsigned dev) {
  if (verbs_depth) return;
  struct seen_completion seen = {dev, cq->handle, 0, 0, cq->wr_id, cq->status, 0, 0, 0, 0, 0};
  if (cq->read_qp_num) seen.qp_num = cq->read_qp_num(cq), seen.has_qp = 1;
  if (cq->status == IBV_WC_SUCCESS) {
    seen.opcode = cq->read_opcode(cq);
    seen.wc_flags = cq->read_wc_flags ? cq->read_wc_flags(cq) : 0;
    seen.byte_len = cq->read_byte_len ? cq->read_byte_len(cq) : 0;
    if ((seen.wc_flags & IBV_WC_WITH_IMM) && cq->read_imm_data)
      seen.imm = ntohl(cq->read_imm_data(cq));
  } else {
    seen.vendor_err = cq->read_vendor_err ? cq->read_vendor_err(cq) : 0;
  }
  journal_completion(&seen, writ_journal_now_ns());
}

static int w_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr) {
  struct observed_cq *o = CQX(cq);
  int r;
  VERBS_INNER(r = o->start_poll(cq, attr));
  if (r == 0) journal_current(cq, o->dev);
  return r;
}
static int w_next_poll(struct ibv_cq_ex *cq) {
  struct observed_cq *o = CQX(cq);
  int r;
  VERBS_INNER(r = o->next_poll(cq));
  if (r == 0) journal_current(cq, o->dev);
  return r;
}

static void wrap_cq_ex(struct ibv_cq_ex *cq, unsigned dev) {
  if (!cq->start_poll || !cq->next_poll) return;
  pthread_mutex_lock(&tables_lock);
  struct observed_cq *o = CLAIM_SLOT(cqs, WRIT_MAX_CQS, (void *)cq);
  if (o) {
    o->dev = dev;
    o->start_poll = cq->start_poll;
    o->next_poll = cq->next_poll;
    atomic_store_explicit(&o->key, (void *)cq, memory_order_release);
  }
  pthread_mutex_unlock(&tables_lock);
  if (!o) {
    writ_journal_printf("{\"t\":\"unobserved\",\"what\":\"cq %u: more than %d extended CQs\"}",
                        cq->handle, WRIT_MAX_CQS);
    return;
  }
  cq->start_poll = w_start_poll;
  cq->next_poll = w_next_poll;
}

/* ---- creating QPs and CQs ---- */

static void journal_qp(const struct observed_context *c, const struct ibv_qp *qp, int sig_all) {
  writ_journal_printf(
      "{\"t\":\"vqp\",\"dev\":%u,\"qp\":%u,\"type\":%d,\"sq_sig_all\":%d,\"send_cq\":%u,"
      "\"recv_cq\":%u,\"srq\":%lld}",
      context_index(c), qp->qp_num, (int)qp->qp_type, sig_all ? 1 : 0,
      qp->send_cq ? qp->send_cq->handle : UINT_MAX, qp->recv_cq ? qp->recv_cq->handle : UINT_MAX,
      qp->srq ? (long long)qp->srq->handle : -1ll);
}

static struct ibv_qp_ex *qp_to_qp_ex(struct ibv_qp *qp) {
  static struct ibv_qp_ex *(*real)(struct ibv_qp *);
  if (!real)
    real = (struct ibv_qp_ex * (*)(struct ibv_qp *)) real_symbol("ibv_qp_to_qp_ex", "IBVERBS_1.6");
  return real ? real(qp) : NULL;
}

static struct ibv_qp *w_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr) {
  struct observed_context *c = observed(context);
  struct ibv_qp *qp;
  VERBS_INNER(qp = c->create_qp_ex(context, attr));
  if (!qp || verbs_depth) return qp;
  journal_qp(c, qp, attr->sq_sig_all);
  if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    struct ibv_qp_ex *qpx = qp_to_qp_ex(qp);
    if (qpx) wrap_qp_ex(qpx, context_index(c));
  }
  return qp;
}

static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *context,
                                        struct ibv_cq_init_attr_ex *attr) {
  struct observed_context *c = observed(context);
  struct ibv_cq_ex *cq;
  VERBS_INNER(cq = c->create_cq_ex(context, attr));
  if (cq) wrap_cq_ex(cq, context_index(c));
  return cq;
}

WRIT_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
  static struct ibv_qp *(*real)(struct ibv_pd *, struct ibv_qp_init_attr *);
  if (!real)
    real = (struct ibv_qp * (*)(struct ibv_pd *, struct ibv_qp_init_attr *))
        real_symbol("ibv_create_qp", "IBVERBS_1.1");
  if (!real) return errno = ENOSYS, NULL;
  struct ibv_qp *qp;
  VERBS_INNER(qp = real(pd, attr));
  const struct observed_context *c = qp && !verbs_depth ? observed(pd->context) : NULL;
  if (c) journal_qp(c, qp, attr->sq_sig_all);
  return qp;
}

/* ---- memory registrations: host memory, or a device's ---- */

/* Whether [addr] lies in a mapping the CPU can read or write that is not a device's
 * (/dev/… other than /dev/zero and /dev/shm): what ibv_reg_mr of host memory needs. A
 * GPU's memory registered through a peer-memory driver is not such a mapping. */
static int host_memory(const void *addr) {
  FILE *maps = fopen("/proc/self/maps", "re");
  if (!maps) return 1;
  char line[512];
  int host = 0;
  const uintptr_t a = (uintptr_t)addr;
  while (fgets(line, sizeof line, maps)) {
    unsigned long start, end;
    char perms[8] = "", path[384] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %383s", &start, &end, perms, path) < 3) continue;
    if (a < start || a >= end) continue;
    const int device = strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/zero", 9) != 0 &&
                       strncmp(path, "/dev/shm/", 9) != 0;
    host = (perms[0] == 'r' || perms[1] == 'w') && !device;
    break;
  }
  fclose(maps);
  return host;
}

static void journal_mr(const struct ibv_pd *pd, int host, size_t bytes, const struct ibv_mr *mr) {
  if (verbs_depth || !pd || !observed(pd->context)) return;
  writ_journal_printf("{\"t\":\"mr\",\"iface\":%d,\"bytes\":%zu,\"ret\":%d}", host ? 0 : 1, bytes,
                      mr ? 0 : -errno);
}

#undef ibv_reg_mr
WRIT_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
  static struct ibv_mr *(*real)(struct ibv_pd *, void *, size_t, int);
  if (!real)
    real = (struct ibv_mr * (*)(struct ibv_pd *, void *, size_t, int))
        real_symbol("ibv_reg_mr", "IBVERBS_1.1");
  if (!real) return errno = ENOSYS, NULL;
  struct ibv_mr *mr;
  VERBS_INNER(mr = real(pd, addr, length, access));
  journal_mr(pd, host_memory(addr), length, mr);
  return mr;
}

WRIT_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                            uint64_t iova, unsigned int access) {
  static struct ibv_mr *(*real)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int);
  if (!real)
    real = (struct ibv_mr * (*)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int))
        real_symbol("ibv_reg_mr_iova2", "IBVERBS_1.8");
  if (!real) return errno = ENOSYS, NULL;
  struct ibv_mr *mr;
  VERBS_INNER(mr = real(pd, addr, length, iova, access));
  journal_mr(pd, host_memory(addr), length, mr);
  return mr;
}

#undef ibv_reg_mr_iova
WRIT_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                                           uint64_t iova, int access) {
  static struct ibv_mr *(*real)(struct ibv_pd *, void *, size_t, uint64_t, int);
  if (!real)
    real = (struct ibv_mr * (*)(struct ibv_pd *, void *, size_t, uint64_t, int))
        real_symbol("ibv_reg_mr_iova", "IBVERBS_1.7");
  if (!real) return errno = ENOSYS, NULL;
  struct ibv_mr *mr;
  VERBS_INNER(mr = real(pd, addr, length, iova, access));
  journal_mr(pd, host_memory(addr), length, mr);
  return mr;
}

/* A dma-buf is a device's memory (a GPU's, through its exporter). */
WRIT_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                             uint64_t iova, int fd, int access) {
  static struct ibv_mr *(*real)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);
  if (!real)
    real = (struct ibv_mr * (*)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int))
        real_symbol("ibv_reg_dmabuf_mr", "IBVERBS_1.12");
  if (!real) return errno = ENOSYS, NULL;
  struct ibv_mr *mr;
  VERBS_INNER(mr = real(pd, offset, length, iova, fd, access));
  journal_mr(pd, 0, length, mr);
  return mr;
}

/* ---- opening and closing a device ---- */

/* The library's file name carries rdma-core's release (libibverbs.so.1.14.44.0). */
static void library_release(void *function, char *out, size_t size) {
  Dl_info where;
  char real[4096];
  out[0] = '\0';
  if (!dladdr(function, &where) || !where.dli_fname) return;
  const char *path = realpath(where.dli_fname, real) ? real : where.dli_fname;
  const char *base = strrchr(path, '/');
  writ_journal_escape(base ? base + 1 : path, out, size);
}

static int port_link_layer(struct ibv_context *context) {
  struct verbs_context *vctx = verbs_get_ctx_op(context, query_port);
  struct ibv_port_attr attr;
  memset(&attr, 0, sizeof attr);
  if (!vctx || vctx->query_port(context, 1, &attr, sizeof attr) != 0) return -1;
  return attr.link_layer;
}

static void journal_device(struct ibv_context *context, unsigned dev, void *real_open) {
  char name[128], release[256];
  writ_journal_escape(context->device ? context->device->name : "", name, sizeof name);
  library_release(real_open, release, sizeof release);
  writ_journal_printf(
      "{\"t\":\"verbs_device\",\"dev\":%u,\"device\":\"%s\",\"transport_type\":%d,"
      "\"link_layer\":%d,\"release\":\"%s\"}",
      dev, name, context->device ? (int)context->device->transport_type : -1,
      port_link_layer(context), release);
}

static void observe_context(struct ibv_context *context, void *real_open) {
  pthread_mutex_lock(&contexts_lock);
  struct observed_context *c = NULL;
  for (unsigned i = 0; i < WRIT_MAX_CONTEXTS && !c; ++i)
    if (atomic_load_explicit(&contexts[i].context, memory_order_relaxed) == NULL) c = &contexts[i];
  if (c) {
    c->orig = context->ops;
    struct verbs_context *vctx = verbs_get_ctx_op(context, create_qp_ex);
    c->create_qp_ex = vctx ? vctx->create_qp_ex : NULL;
    vctx = verbs_get_ctx_op(context, create_cq_ex);
    c->create_cq_ex = vctx ? vctx->create_cq_ex : NULL;
    atomic_store_explicit(&c->context, context, memory_order_release);
  }
  pthread_mutex_unlock(&contexts_lock);
  if (!c) {
    writ_journal_printf("{\"t\":\"unobserved\",\"what\":\"a device context: more than %d\"}",
                        WRIT_MAX_CONTEXTS);
    return;
  }
  journal_device(context, context_index(c), real_open);
  if (context->ops.post_send) context->ops.post_send = w_post_send;
  if (context->ops.post_recv) context->ops.post_recv = w_post_recv;
  if (context->ops.post_srq_recv) context->ops.post_srq_recv = w_post_srq_recv;
  if (context->ops.poll_cq) context->ops.poll_cq = w_poll_cq;
  if (c->create_qp_ex) verbs_get_ctx(context)->create_qp_ex = w_create_qp_ex;
  if (c->create_cq_ex) verbs_get_ctx(context)->create_cq_ex = w_create_cq_ex;
}

/* libfabric in the process: its verbs provider's calls are not the program's. */
static int libfabric_loaded(void) {
  void *handle = dlopen("libfabric.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return 0;
  dlclose(handle);
  return 1;
}

WRIT_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device) {
  static struct ibv_context *(*real)(struct ibv_device *);
  if (!real)
    real = (struct ibv_context * (*)(struct ibv_device *)) real_symbol("ibv_open_device", "IBVERBS_1.1");
  if (!real) return errno = ENOSYS, NULL;
  struct ibv_context *context = real(device);
  if (context && !libfabric_loaded()) {
    writ_journal_open();
    observe_context(context, (void *)real);
  }
  return context;
}

WRIT_EXPORT int ibv_close_device(struct ibv_context *context) {
  static int (*real)(struct ibv_context *);
  if (!real) real = (int (*)(struct ibv_context *))real_symbol("ibv_close_device", "IBVERBS_1.1");
  if (!real) return ENOSYS;
  struct observed_context *c = observed(context);
  const int r = real(context);
  if (c && r == 0) atomic_store_explicit(&c->context, NULL, memory_order_release);
  return r;
}
