/* Observing a program's libfabric calls without changing them. fi_getinfo and fi_fabric
 * are exported and interposed (LD_PRELOAD); everything after them is static inline
 * through the fid ops tables, so, as libfabric's hook providers do, each new fabric,
 * domain, endpoint and completion queue gets a copy of its provider's table whose entries
 * journal the call and then call the provider's own. Nothing is changed: the program's
 * arguments and the provider's results pass through untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "journal.h"

#define WRIT_EXPORT __attribute__((visibility("default")))

static atomic_uint next_endpoint = 1, next_cq = 1;
static atomic_ullong refused_again;

/* At a normal exit: how many posts the provider answered -FI_EAGAIN (not journaled one by
 * one). A program killed by a signal leaves this line out, nothing else. */
__attribute__((destructor)) static void journal_refused(void) {
  const unsigned long long n = atomic_load(&refused_again);
  if (n) writ_journal_printf("{\"t\":\"refused\",\"again\":%llu}", n);
}

/* A provider may call its own ops through the fid (a CQ's read calling its readfrom): only
 * the program's outermost call is journaled. */
static __thread int writ_depth;
#define WRIT_INNER(statement) \
  do {                        \
    ++writ_depth;             \
    statement;                \
    --writ_depth;             \
  } while (0)

/* ---- copies of ops tables: the copy first, then what the wrappers need ---- */

struct msg_wrap {
  struct fi_ops_msg ops;
  struct fi_ops_msg *orig;
  unsigned endpoint;
};
struct rma_wrap {
  struct fi_ops_rma ops;
  struct fi_ops_rma *orig;
  unsigned endpoint;
};
struct tagged_wrap {
  struct fi_ops_tagged ops;
  struct fi_ops_tagged *orig;
  unsigned endpoint;
};
struct cq_wrap {
  struct fi_ops_cq ops;
  struct fi_ops_cq *orig;
  unsigned cq;
  enum fi_cq_format format;
};
struct fid_wrap {
  struct fi_ops ops;
  struct fi_ops *orig;
  unsigned endpoint;
};
struct domain_wrap {
  struct fi_ops_domain ops;
  struct fi_ops_domain *orig;
};
struct mr_wrap {
  struct fi_ops_mr ops;
  struct fi_ops_mr *orig;
};
struct fabric_wrap {
  struct fi_ops_fabric ops;
  struct fi_ops_fabric *orig;
};

/* A table of the provider's may be shorter than this header's: copy what it has. */
static void copy_table(void *copy, const void *orig, size_t ours) {
  const size_t theirs = *(const size_t *)orig;
  memcpy(copy, orig, theirs < ours ? theirs : ours);
}

static size_t iov_bytes(const struct iovec *iov, size_t count) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += iov[i].iov_len;
  return total;
}

/* One posted work request: what the journal says of it. Only a call the provider accepted
 * (0) is a posted request; -FI_EAGAIN and errors are journaled as refused posts. */
static void journal_wr(unsigned endpoint, const char *op, size_t bytes, uint64_t flags,
                       const void *context, int has_data, uint64_t data, ssize_t ret) {
  if (writ_depth) return;
  if (ret == -FI_EAGAIN) {  /* nothing posted; a busy program retries at once, so only counted */
    atomic_fetch_add_explicit(&refused_again, 1, memory_order_relaxed);
    return;
  }
  struct writ_line l;
  l.n = 0; /* the text is written before it is read: not cleared */
  writ_line_str(&l, "{\"t\":\"wr\",\"ep\":");
  writ_line_u64(&l, endpoint);
  writ_line_str(&l, ",\"op\":\"");
  writ_line_str(&l, op);
  writ_line_str(&l, "\",\"bytes\":");
  writ_line_u64(&l, bytes);
  writ_line_str(&l, ",\"flags\":");
  writ_line_u64(&l, (unsigned long long)flags);
  writ_line_str(&l, ",\"ctx\":\"");
  writ_line_ptr(&l, context);
  writ_line_str(&l, "\",\"data\":");
  if (has_data)
    writ_line_u64(&l, (unsigned long long)data);
  else
    writ_line_str(&l, "null");
  writ_line_str(&l, ",\"ret\":");
  writ_line_i64(&l, (long long)ret);
  writ_line_str(&l, ",\"ns\":");
  writ_line_u64(&l, (unsigned long long)writ_journal_now_ns());
  writ_line_str(&l, "}");
  writ_journal_line(&l);
}

#define MSG(ep) ((struct msg_wrap *)(ep)->msg)
#define RMA(ep) ((struct rma_wrap *)(ep)->rma)
#define TAG(ep) ((struct tagged_wrap *)(ep)->tagged)

/* ---- messages ---- */

static ssize_t w_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                      void *ctx) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->recv(ep, buf, len, desc, src, ctx));
  journal_wr(MSG(ep)->endpoint, "recv", len, 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t src, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->recvv(ep, iov, desc, count, src, ctx));
  journal_wr(MSG(ep)->endpoint, "recv", iov_bytes(iov, count), 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->recvmsg(ep, msg, flags));
  journal_wr(MSG(ep)->endpoint, "recv", iov_bytes(msg->msg_iov, msg->iov_count), flags,
             msg->context, 0, 0, r);
  return r;
}
static ssize_t w_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                      void *ctx) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->send(ep, buf, len, desc, dest, ctx));
  journal_wr(MSG(ep)->endpoint, "send", len, 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t dest, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->sendv(ep, iov, desc, count, dest, ctx));
  journal_wr(MSG(ep)->endpoint, "send", iov_bytes(iov, count), 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->sendmsg(ep, msg, flags));
  journal_wr(MSG(ep)->endpoint, (flags & FI_REMOTE_CQ_DATA) ? "senddata" : "send",
             iov_bytes(msg->msg_iov, msg->iov_count), flags, msg->context,
             (flags & FI_REMOTE_CQ_DATA) != 0, msg->data, r);
  return r;
}
static ssize_t w_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->inject(ep, buf, len, dest));
  journal_wr(MSG(ep)->endpoint, "inject", len, FI_INJECT, NULL, 0, 0, r);
  return r;
}
static ssize_t w_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                          uint64_t data, fi_addr_t dest, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->senddata(ep, buf, len, desc, data, dest, ctx));
  journal_wr(MSG(ep)->endpoint, "senddata", len, FI_REMOTE_CQ_DATA, ctx, 1, data, r);
  return r;
}
static ssize_t w_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                            fi_addr_t dest) {
  ssize_t r;
  WRIT_INNER(r = MSG(ep)->orig->injectdata(ep, buf, len, data, dest));
  journal_wr(MSG(ep)->endpoint, "injectdata", len, FI_INJECT | FI_REMOTE_CQ_DATA, NULL, 1, data, r);
  return r;
}

/* ---- RMA ---- */

static ssize_t w_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                      uint64_t addr, uint64_t key, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->read(ep, buf, len, desc, src, addr, key, ctx));
  journal_wr(RMA(ep)->endpoint, "read", len, 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                       fi_addr_t src, uint64_t addr, uint64_t key, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->readv(ep, iov, desc, count, src, addr, key, ctx));
  journal_wr(RMA(ep)->endpoint, "read", iov_bytes(iov, count), 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->readmsg(ep, msg, flags));
  journal_wr(RMA(ep)->endpoint, "read", iov_bytes(msg->msg_iov, msg->iov_count), flags,
             msg->context, 0, 0, r);
  return r;
}
static ssize_t w_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                       uint64_t addr, uint64_t key, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->write(ep, buf, len, desc, dest, addr, key, ctx));
  journal_wr(RMA(ep)->endpoint, "write", len, 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                        fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->writev(ep, iov, desc, count, dest, addr, key, ctx));
  journal_wr(RMA(ep)->endpoint, "write", iov_bytes(iov, count), 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->writemsg(ep, msg, flags));
  journal_wr(RMA(ep)->endpoint, (flags & FI_REMOTE_CQ_DATA) ? "writedata" : "write",
             iov_bytes(msg->msg_iov, msg->iov_count), flags, msg->context,
             (flags & FI_REMOTE_CQ_DATA) != 0, msg->data, r);
  return r;
}
static ssize_t w_rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
                            uint64_t addr, uint64_t key) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->inject(ep, buf, len, dest, addr, key));
  journal_wr(RMA(ep)->endpoint, "inject_write", len, FI_INJECT, NULL, 0, 0, r);
  return r;
}
static ssize_t w_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                           uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->writedata(ep, buf, len, desc, data, dest, addr, key, ctx));
  journal_wr(RMA(ep)->endpoint, "writedata", len, FI_REMOTE_CQ_DATA, ctx, 1, data, r);
  return r;
}
static ssize_t w_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                                fi_addr_t dest, uint64_t addr, uint64_t key) {
  ssize_t r;
  WRIT_INNER(r = RMA(ep)->orig->injectdata(ep, buf, len, data, dest, addr, key));
  journal_wr(RMA(ep)->endpoint, "inject_writedata", len, FI_INJECT | FI_REMOTE_CQ_DATA, NULL, 1,
             data, r);
  return r;
}

/* ---- tagged ---- */

static ssize_t w_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                       uint64_t tag, uint64_t ignore, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = TAG(ep)->orig->recv(ep, buf, len, desc, src, tag, ignore, ctx));
  journal_wr(TAG(ep)->endpoint, "tagged_recv", len, 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_tsend(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest,
                       uint64_t tag, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = TAG(ep)->orig->send(ep, buf, len, desc, dest, tag, ctx));
  journal_wr(TAG(ep)->endpoint, "tagged_send", len, 0, ctx, 0, 0, r);
  return r;
}
static ssize_t w_tinject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest,
                         uint64_t tag) {
  ssize_t r;
  WRIT_INNER(r = TAG(ep)->orig->inject(ep, buf, len, dest, tag));
  journal_wr(TAG(ep)->endpoint, "tagged_inject", len, FI_INJECT, NULL, 0, 0, r);
  return r;
}
static ssize_t w_tsenddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                           uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx) {
  ssize_t r;
  WRIT_INNER(r = TAG(ep)->orig->senddata(ep, buf, len, desc, data, dest, tag, ctx));
  journal_wr(TAG(ep)->endpoint, "tagged_senddata", len, FI_REMOTE_CQ_DATA, ctx, 1, data, r);
  return r;
}

/* ---- completion queues ---- */

static size_t cq_entry_size(enum fi_cq_format format) {
  switch (format) {
    case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
    default: return sizeof(struct fi_cq_entry);
  }
}

/* Success entries: only what the format carries (fi_cq(3)). */
static void journal_completions(struct cq_wrap *w, const void *buf, ssize_t n) {
  if (writ_depth) return;
  const size_t stride = cq_entry_size(w->format);
  const uint64_t now = writ_journal_now_ns();
  for (ssize_t i = 0; i < n; ++i) {
    const char *entry = (const char *)buf + (size_t)i * stride;
    const struct fi_cq_entry *e = (const void *)entry;
    struct writ_line l;
    l.n = 0;
    writ_line_str(&l, "{\"t\":\"cq\",\"cq\":");
    writ_line_u64(&l, w->cq);
    writ_line_str(&l, ",\"ctx\":\"");
    writ_line_ptr(&l, e->op_context);
    writ_line_str(&l, "\",\"status\":\"success\"");
    /* The formats past FI_CQ_FORMAT_CONTEXT carry flags and a length; DATA and TAGGED the
     * remote CQ data too. */
    if (w->format == FI_CQ_FORMAT_MSG || w->format == FI_CQ_FORMAT_DATA ||
        w->format == FI_CQ_FORMAT_TAGGED) {
      const struct fi_cq_msg_entry *m = (const void *)entry;
      const int has_data = w->format != FI_CQ_FORMAT_MSG && (m->flags & FI_REMOTE_CQ_DATA);
      writ_line_str(&l, ",\"flags\":");
      writ_line_u64(&l, (unsigned long long)m->flags);
      writ_line_str(&l, ",\"len\":");
      writ_line_u64(&l, m->len);
      writ_line_str(&l, ",\"data\":");
      if (has_data)
        writ_line_u64(&l,
                      (unsigned long long)((const struct fi_cq_data_entry *)(const void *)entry)->data);
      else
        writ_line_str(&l, "null");
    }
    writ_line_str(&l, ",\"ns\":");
    writ_line_u64(&l, (unsigned long long)now);
    writ_line_str(&l, "}");
    writ_journal_line(&l);
  }
}

#define CQW(cq) ((struct cq_wrap *)(cq)->ops)

static ssize_t w_cq_read(struct fid_cq *cq, void *buf, size_t count) {
  ssize_t n;
  WRIT_INNER(n = CQW(cq)->orig->read(cq, buf, count));
  if (n > 0) journal_completions(CQW(cq), buf, n);
  return n;
}
static ssize_t w_cq_readfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src) {
  ssize_t n;
  WRIT_INNER(n = CQW(cq)->orig->readfrom(cq, buf, count, src));
  if (n > 0) journal_completions(CQW(cq), buf, n);
  return n;
}
static ssize_t w_cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond,
                          int timeout) {
  ssize_t n;
  WRIT_INNER(n = CQW(cq)->orig->sread(cq, buf, count, cond, timeout));
  if (n > 0) journal_completions(CQW(cq), buf, n);
  return n;
}
static ssize_t w_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src,
                              const void *cond, int timeout) {
  ssize_t n;
  WRIT_INNER(n = CQW(cq)->orig->sreadfrom(cq, buf, count, src, cond, timeout));
  if (n > 0) journal_completions(CQW(cq), buf, n);
  return n;
}
/* An error entry: op_context, err and prov_errno (and the provider's text for it). */
static ssize_t w_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, uint64_t flags) {
  struct cq_wrap *w = CQW(cq);
  ssize_t n;
  WRIT_INNER(n = w->orig->readerr(cq, buf, flags));
  if (n > 0 && !writ_depth) {
    char text[256] = "";
    const char *said = w->orig->strerror ? w->orig->strerror(cq, buf->prov_errno, buf->err_data,
                                                             NULL, 0)
                                         : NULL;
    writ_journal_escape(said, text, sizeof text);
    writ_journal_printf(
        "{\"t\":\"cq\",\"cq\":%u,\"ctx\":\"%p\",\"status\":\"error\",\"err\":%d,"
        "\"prov_errno\":%d,\"prov_error\":\"%s\",\"ns\":%llu}",
        w->cq, buf->op_context, buf->err, buf->prov_errno, text,
        (unsigned long long)writ_journal_now_ns());
  }
  return n;
}

static void wrap_cq(struct fid_cq *cq, const struct fi_cq_attr *attr) {
  struct cq_wrap *w = calloc(1, sizeof *w);
  if (!w) return;
  copy_table(&w->ops, cq->ops, sizeof w->ops);
  w->orig = cq->ops;
  w->cq = atomic_fetch_add(&next_cq, 1);
  w->format = attr && attr->format != FI_CQ_FORMAT_UNSPEC ? attr->format : FI_CQ_FORMAT_CONTEXT;
  if (w->orig->read) w->ops.read = w_cq_read;
  if (w->orig->readfrom) w->ops.readfrom = w_cq_readfrom;
  if (w->orig->readerr) w->ops.readerr = w_cq_readerr;
  if (w->orig->sread) w->ops.sread = w_cq_sread;
  if (w->orig->sreadfrom) w->ops.sreadfrom = w_cq_sreadfrom;
  cq->ops = &w->ops;
  writ_journal_printf("{\"t\":\"cq_open\",\"cq\":%u,\"format\":%d}", w->cq, (int)w->format);
}

/* Which completion queue an endpoint's sends and receives report to: how a completion with
 * no flags (FI_CQ_FORMAT_CONTEXT) is matched to its work request. */
static int w_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags) {
  struct fid_wrap *w = (struct fid_wrap *)fid->ops;
  int r;
  WRIT_INNER(r = w->orig->bind(fid, bfid, flags));
  if (r == 0 && bfid && bfid->fclass == FI_CLASS_CQ) {
    const struct fid_cq *cq = (const struct fid_cq *)bfid;
    if (cq->ops->read == w_cq_read)
      writ_journal_printf("{\"t\":\"bind\",\"ep\":%u,\"cq\":%u,\"flags\":%llu}", w->endpoint,
                          ((const struct cq_wrap *)cq->ops)->cq, (unsigned long long)flags);
  }
  return r;
}

static void wrap_endpoint(struct fid_ep *ep, const struct fi_info *info) {
  const unsigned id = atomic_fetch_add(&next_endpoint, 1);
  if (ep->fid.ops && ep->fid.ops->bind) {
    struct fid_wrap *w = calloc(1, sizeof *w);
    if (w) {
      copy_table(&w->ops, ep->fid.ops, sizeof w->ops);
      w->orig = ep->fid.ops;
      w->endpoint = id;
      w->ops.bind = w_ep_bind;
      ep->fid.ops = &w->ops;
    }
  }
  if (ep->msg && ep->msg->size >= sizeof(size_t)) {
    struct msg_wrap *w = calloc(1, sizeof *w);
    if (w) {
      copy_table(&w->ops, ep->msg, sizeof w->ops);
      w->orig = ep->msg;
      w->endpoint = id;
      w->ops.recv = w_recv, w->ops.recvv = w_recvv, w->ops.recvmsg = w_recvmsg;
      w->ops.send = w_send, w->ops.sendv = w_sendv, w->ops.sendmsg = w_sendmsg;
      w->ops.inject = w_inject, w->ops.senddata = w_senddata, w->ops.injectdata = w_injectdata;
      ep->msg = &w->ops;
    }
  }
  if (ep->rma) {
    struct rma_wrap *w = calloc(1, sizeof *w);
    if (w) {
      copy_table(&w->ops, ep->rma, sizeof w->ops);
      w->orig = ep->rma;
      w->endpoint = id;
      w->ops.read = w_read, w->ops.readv = w_readv, w->ops.readmsg = w_readmsg;
      w->ops.write = w_write, w->ops.writev = w_writev, w->ops.writemsg = w_writemsg;
      w->ops.inject = w_rma_inject, w->ops.writedata = w_writedata;
      w->ops.injectdata = w_rma_injectdata;
      ep->rma = &w->ops;
    }
  }
  if (ep->tagged) {
    struct tagged_wrap *w = calloc(1, sizeof *w);
    if (w) {
      copy_table(&w->ops, ep->tagged, sizeof w->ops);
      w->orig = ep->tagged;
      w->endpoint = id;
      w->ops.recv = w_trecv, w->ops.send = w_tsend, w->ops.inject = w_tinject;
      w->ops.senddata = w_tsenddata;
      ep->tagged = &w->ops;
    }
  }
  const uint64_t op_flags = info && info->tx_attr ? info->tx_attr->op_flags : 0;
  writ_journal_printf("{\"t\":\"endpoint\",\"ep\":%u,\"type\":%d,\"tx_op_flags\":%llu}", id,
                      info && info->ep_attr ? (int)info->ep_attr->type : -1,
                      (unsigned long long)op_flags);
}

/* ---- domain, memory registration, fabric ---- */

#define DOMW(d) ((struct domain_wrap *)(d)->ops)
#define MRW(fid) ((struct mr_wrap *)((struct fid_domain *)(fid))->mr)

static int w_cq_open(struct fid_domain *d, struct fi_cq_attr *attr, struct fid_cq **cq,
                     void *ctx) {
  int r;
  WRIT_INNER(r = DOMW(d)->orig->cq_open(d, attr, cq, ctx));
  if (r == 0) wrap_cq(*cq, attr);
  return r;
}
static int w_endpoint(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep, void *ctx) {
  int r;
  WRIT_INNER(r = DOMW(d)->orig->endpoint(d, info, ep, ctx));
  if (r == 0) wrap_endpoint(*ep, info);
  return r;
}
static int w_endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep,
                       uint64_t flags, void *ctx) {
  int r;
  WRIT_INNER(r = DOMW(d)->orig->endpoint2(d, info, ep, flags, ctx));
  if (r == 0) wrap_endpoint(*ep, info);
  return r;
}
static int w_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
                    uint64_t offset, uint64_t key, uint64_t flags, struct fid_mr **mr,
                    void *ctx) {
  int r;
  WRIT_INNER(r = MRW(fid)->orig->reg(fid, buf, len, access, offset, key, flags, mr, ctx));
  writ_journal_printf("{\"t\":\"mr\",\"iface\":0,\"bytes\":%zu,\"ret\":%d}", len, r);
  return r;
}
static int w_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                     uint64_t offset, uint64_t key, uint64_t flags, struct fid_mr **mr,
                     void *ctx) {
  int r;
  WRIT_INNER(r = MRW(fid)->orig->regv(fid, iov, count, access, offset, key, flags, mr, ctx));
  writ_journal_printf("{\"t\":\"mr\",\"iface\":0,\"bytes\":%zu,\"ret\":%d}",
                      iov_bytes(iov, count), r);
  return r;
}
static int w_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                        struct fid_mr **mr) {
  int r;
  WRIT_INNER(r = MRW(fid)->orig->regattr(fid, attr, flags, mr));
  writ_journal_printf("{\"t\":\"mr\",\"iface\":%d,\"bytes\":%zu,\"ret\":%d}", (int)attr->iface,
                      iov_bytes(attr->mr_iov, attr->iov_count), r);
  return r;
}

static void journal_info(const struct fi_info *info) {
  if (!info) return;
  char prov[128] = "", fabric[128] = "", domain[128] = "";
  writ_journal_escape(info->fabric_attr ? info->fabric_attr->prov_name : "", prov, sizeof prov);
  writ_journal_escape(info->fabric_attr ? info->fabric_attr->name : "", fabric, sizeof fabric);
  writ_journal_escape(info->domain_attr ? info->domain_attr->name : "", domain, sizeof domain);
  uint32_t (*version)(void) = (uint32_t(*)(void))dlsym(RTLD_DEFAULT, "fi_version");
  const uint32_t v = version ? version() : 0;
  writ_journal_printf(
      "{\"t\":\"domain\",\"provider\":\"%s\",\"fabric\":\"%s\",\"domain\":\"%s\","
      "\"protocol\":%u,\"ep_type\":%d,\"prov_version\":%u,\"libfabric\":\"%u.%u\","
      "\"tx_op_flags\":%llu,\"mr_mode\":%d}",
      prov, fabric, domain, info->ep_attr ? info->ep_attr->protocol : 0,
      info->ep_attr ? (int)info->ep_attr->type : -1,
      info->fabric_attr ? info->fabric_attr->prov_version : 0, FI_MAJOR(v), FI_MINOR(v),
      info->tx_attr ? (unsigned long long)info->tx_attr->op_flags : 0ull,
      info->domain_attr ? info->domain_attr->mr_mode : 0);
}

static void wrap_domain(struct fid_domain *d, const struct fi_info *info) {
  journal_info(info);
  struct domain_wrap *w = calloc(1, sizeof *w);
  if (w) {
    copy_table(&w->ops, d->ops, sizeof w->ops);
    w->orig = d->ops;
    if (w->orig->cq_open) w->ops.cq_open = w_cq_open;
    if (w->orig->endpoint) w->ops.endpoint = w_endpoint;
    if (w->orig->size > offsetof(struct fi_ops_domain, endpoint2) && w->orig->endpoint2)
      w->ops.endpoint2 = w_endpoint2;
    d->ops = &w->ops;
  }
  if (d->mr) {
    struct mr_wrap *m = calloc(1, sizeof *m);
    if (m) {
      copy_table(&m->ops, d->mr, sizeof m->ops);
      m->orig = d->mr;
      if (m->orig->reg) m->ops.reg = w_mr_reg;
      if (m->orig->regv) m->ops.regv = w_mr_regv;
      if (m->orig->regattr) m->ops.regattr = w_mr_regattr;
      d->mr = &m->ops;
    }
  }
}

#define FABW(f) ((struct fabric_wrap *)(f)->ops)

static int w_domain(struct fid_fabric *f, struct fi_info *info, struct fid_domain **d, void *ctx) {
  int r;
  WRIT_INNER(r = FABW(f)->orig->domain(f, info, d, ctx));
  if (r == 0) wrap_domain(*d, info);
  return r;
}
static int w_domain2(struct fid_fabric *f, struct fi_info *info, struct fid_domain **d,
                     uint64_t flags, void *ctx) {
  int r;
  WRIT_INNER(r = FABW(f)->orig->domain2(f, info, d, flags, ctx));
  if (r == 0) wrap_domain(*d, info);
  return r;
}

WRIT_EXPORT int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *ctx) {
  static int (*real)(struct fi_fabric_attr *, struct fid_fabric **, void *);
  if (!real) real = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))dlsym(
                 RTLD_NEXT, "fi_fabric");
  if (!real) return -FI_ENOSYS;
  /* A layered provider (ofi_rxm over tcp) opens its core fabric through this same symbol:
   * that is the provider's business, not the program's, and stays unobserved. */
  Dl_info caller;
  if (dladdr(__builtin_return_address(0), &caller) && caller.dli_fname &&
      strstr(caller.dli_fname, "libfabric"))
    return real(attr, fabric, ctx);
  writ_journal_open();
  int r = real(attr, fabric, ctx);
  if (r != 0) return r;
  struct fabric_wrap *w = calloc(1, sizeof *w);
  if (!w) return r;
  copy_table(&w->ops, (*fabric)->ops, sizeof w->ops);
  w->orig = (*fabric)->ops;
  if (w->orig->domain) w->ops.domain = w_domain;
  if (w->orig->size > offsetof(struct fi_ops_fabric, domain2) && w->orig->domain2)
    w->ops.domain2 = w_domain2;
  (*fabric)->ops = &w->ops;
  return r;
}
