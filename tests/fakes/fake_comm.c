/* Communicator life cycle: unique ids, init, split, shrink, destroy/abort, reduction operators.
 *
 * Creating a communicator is an operation like any other (see fake_engine.c): it joins the
 * segment named by the unique id in one step and waits for the other ranks in a second, so that
 * several ranks can be created by one thread inside ncclGroupStart/End or by ncclCommInitAll.
 * Split first exchanges (color, key) over the parent's rings; each color then joins a segment
 * whose name every member derives from the parent's name and the split's sequence number. */
#include "fake_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAGIC 0xcafebeefu

ncclResult_t npkit_fake_comm_new(const char *name, int nranks, int rank, int device,
                                 ncclComm_t *out) {
  ncclResult_t r = npkit_fake_comm_alloc(name, nranks, rank, device, out);
  if (r == ncclSuccess) npkit_fake_prof_comm_init(*out);
  return r;
}

ncclResult_t npkit_fake_comm_alloc(const char *name, int nranks, int rank, int device,
                                   ncclComm_t *out) {
  *out = NULL;
  ncclComm_t c = calloc(1, sizeof *c);
  size_t nq = (size_t)NPKIT_FAKE_NCHAN * 2 * (size_t)nranks;
  if (c != NULL) {
    c->qhead = calloc(nq, sizeof *c->qhead);
    c->qtail = calloc(nq, sizeof *c->qtail);
    c->p2p_send_seq = calloc((size_t)nranks, sizeof *c->p2p_send_seq);
    c->p2p_recv_seq = calloc((size_t)nranks, sizeof *c->p2p_recv_seq);
  }
  if (c == NULL || !c->qhead || !c->qtail || !c->p2p_send_seq || !c->p2p_recv_seq) {
    npkit_fake_comm_free(c);
    return npkit_fake_fail(ncclSystemError, "out of memory creating a communicator of %d ranks",
                           nranks);
  }
  c->magic = NPKIT_FAKE_COMM_MAGIC;
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  snprintf(c->name, sizeof c->name, "%s", name);
  *out = c;
  return ncclSuccess;
}

void npkit_fake_comm_free(ncclComm_t c) {
  if (c == NULL) return;
  npkit_fake_prof_comm_fini(c);
  npkit_fake_npkit_free(c);
  npkit_fake_seg_release(c->seg);
  free(c->qhead);
  free(c->qtail);
  free(c->p2p_send_seq);
  free(c->p2p_recv_seq);
  free(c->redops);
  c->magic = 0;
  free(c);
}

static ncclResult_t check_magic(ncclComm_t c, const char *fn) {
  if (c->magic != NPKIT_FAKE_COMM_MAGIC)
    return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is not a valid communicator",
                           fn);
  return ncclSuccess;
}

ncclResult_t npkit_fake_comm_usable(ncclComm_t c, const char *fn) {
  ncclResult_t r = check_magic(c, fn);
  if (r != ncclSuccess) return r;
  if (atomic_load_explicit(&c->aborted, memory_order_relaxed))
    return npkit_fake_fail(ncclInvalidUsage, "%s : the communicator was aborted", fn);
  if (atomic_load_explicit(&c->revoked, memory_order_relaxed))
    return npkit_fake_fail(ncclInvalidUsage, "%s : the communicator was revoked", fn);
  if (c->finalized)
    return npkit_fake_fail(ncclInvalidUsage, "%s : the communicator was finalized", fn);
  if (atomic_load_explicit(&c->suspended, memory_order_relaxed))
    return npkit_fake_fail(ncclInvalidUsage, "%s : the communicator is suspended", fn);
  int err = atomic_load_explicit(&c->async_error, memory_order_relaxed);
  if (err == ncclInProgress)
    return npkit_fake_fail(ncclInvalidArgument, "%s : Attempt to use communicator before the "
                           "previous operation returned ncclSuccess", fn);
  if (err != ncclSuccess)
    return npkit_fake_fail((ncclResult_t)err,
                           "%s : the communicator failed earlier (error %d) and can only be "
                           "destroyed",
                           fn, err);
  return ncclSuccess;
}

/* Step 0 joins the segment, step 1 waits until every rank has. */
static ncclResult_t join_step(ncclComm_t j, int step, bool *again) {
  if (step == 0) return npkit_fake_seg_attach(j->name, j->nranks, j->rank, &j->seg, again);
  if (!npkit_fake_seg_complete(j->seg)) {
    *again = true;
    return ncclSuccess;
  }
  j->ready = true;
  npkit_fake_npkit_init(j); /* NCCL's devCommSetup, where NPKit's patch calls NpKit::Init */
  return ncclSuccess;
}

static ncclResult_t check_config(const ncclConfig_t *config, const char *fn) {
  if (config != NULL && config->magic != CONFIG_MAGIC)
    return npkit_fake_fail(ncclInvalidArgument,
                           "%s : config is not initialized with NCCL_CONFIG_INITIALIZER", fn);
  return ncclSuccess;
}

/* ------------------------------------------------------------------ ids and init */

ncclResult_t npkit_fake_get_unique_id(ncclUniqueId *id) {
  npkit_fake_init_env();
  if (id == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "GetUniqueId : out argument is NULL");
  memset(id, 0, sizeof *id);
  memcpy(id->internal, NPKIT_FAKE_ID_MAGIC, 8);
  npkit_fake_new_name(id->internal + 8);
  return ncclSuccess;
}

static ncclResult_t name_from_id(const ncclUniqueId *id, const char *fn, const char **name) {
  if (memcmp(id->internal, NPKIT_FAKE_ID_MAGIC, 8) != 0 ||
      memchr(id->internal + 8, '\0', NPKIT_FAKE_NAME_MAX) == NULL || id->internal[8] != '/')
    return npkit_fake_fail(ncclInvalidArgument,
                           "%s : the unique id was not made by ncclGetUniqueId of this library",
                           fn);
  *name = id->internal + 8;
  return ncclSuccess;
}

static ncclResult_t finish_init(npkit_fake_op *op, int phase, bool *again) {
  return join_step(op->comm, phase, again);
}

static ncclResult_t new_init_op(ncclComm_t c, const char *fn, npkit_fake_op **out) {
  npkit_fake_op *op = npkit_fake_op_new(c, NPKIT_FAKE_K_INIT, fn);
  if (op == NULL) return npkit_fake_fail(ncclSystemError, "%s : out of memory", fn);
  op->finish = finish_init;
  op->nphases = 2;
  *out = op;
  return ncclSuccess;
}

ncclResult_t npkit_fake_init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
                                  const ncclConfig_t *config, const char *fn) {
  npkit_fake_init_env();
  if (out == NULL)
    return npkit_fake_group_error(
        npkit_fake_fail(ncclInvalidArgument, "%s : newcomm argument is NULL", fn));
  *out = NULL;
  const char *name = NULL;
  ncclResult_t r = ncclSuccess;
  if (nranks < 1 || nranks > NPKIT_FAKE_MAX_RANKS || rank < 0 || rank >= nranks)
    r = npkit_fake_fail(ncclInvalidArgument, "%s : invalid rank requested : %d/%d", fn, rank,
                        nranks);
  if (r == ncclSuccess) r = check_config(config, fn);
  if (r == ncclSuccess) r = name_from_id(id, fn, &name);
  const npkit_fake_settings *cfg = npkit_fake_cfg();
  int device = cfg->device >= 0 ? cfg->device : rank % cfg->ndev;
  /* NCCL_CONFIG_UNDEF_INT and 1 are blocking */
  bool nonblocking = config != NULL && config->blocking == 0 && !npkit_fake_in_group();
  ncclComm_t c = NULL;
  if (r == ncclSuccess)
    r = nonblocking ? npkit_fake_comm_alloc(name, nranks, rank, device, &c)
                    : npkit_fake_comm_new(name, nranks, rank, device, &c);
  npkit_fake_op *op = NULL;
  if (r == ncclSuccess) r = new_init_op(c, fn, &op);
  if (r != ncclSuccess) {
    npkit_fake_comm_free(c);
    return npkit_fake_group_error(r);
  }
  if (nonblocking) {
    c->nonblocking = true;
    *out = c;
    return npkit_fake_async_launch(op, NULL, c, 0);
  }
  npkit_fake_init_version(); /* fillInfo, on the creating thread */
  if (npkit_fake_in_group()) {
    *out = c; /* usable once the group ends, like NCCL */
    return npkit_fake_submit(op, 0);
  }
  r = npkit_fake_submit(op, 0);
  if (r != ncclSuccess) {
    npkit_fake_comm_free(c);
    return r;
  }
  *out = c;
  npkit_fake_debug_log("rank %d of %d joined %s (device %d)", rank, nranks, name, device);
  return ncclSuccess;
}

ncclResult_t npkit_fake_init_all(ncclComm_t *comms, int ndev, const int *devlist) {
  if (comms == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "CommInitAll : comms argument is NULL");
  if (ndev < 1 || ndev > NPKIT_FAKE_MAX_RANKS)
    return npkit_fake_fail(ncclInvalidArgument, "CommInitAll : invalid device count requested : %d",
                           ndev);
  for (int i = 0; devlist != NULL && i < ndev; i++) {
    if (devlist[i] < 0)
      return npkit_fake_fail(ncclInvalidArgument, "CommInitAll : invalid device %d", devlist[i]);
    for (int j = 0; j < i; j++)
      if (devlist[j] == devlist[i])
        return npkit_fake_fail(ncclInvalidUsage, "CommInitAll : duplicate device %d in devlist",
                               devlist[i]);
  }
  npkit_fake_init_env(); /* NCCL's ncclCommInitAll calls ncclGetUniqueId after these checks */
  char name[NPKIT_FAKE_NAME_MAX];
  npkit_fake_new_name(name);
  ncclResult_t r = ncclSuccess;
  npkit_fake_op *list = NULL, **tail = &list;
  for (int i = 0; i < ndev; i++) comms[i] = NULL;
  for (int i = 0; i < ndev && r == ncclSuccess; i++) {
    r = npkit_fake_comm_new(name, ndev, i, devlist != NULL ? devlist[i] : i, &comms[i]);
    if (r == ncclSuccess) r = new_init_op(comms[i], "CommInitAll", tail);
    if (r == ncclSuccess) tail = &(*tail)->next;
  }
  /* All ranks live in this thread: they join together, outside any group of the caller. */
  if (r == ncclSuccess) r = npkit_fake_run(list);
  while (list != NULL) {
    npkit_fake_op *next = list->next;
    npkit_fake_op_free(list);
    list = next;
  }
  if (r != ncclSuccess)
    for (int i = 0; i < ndev; i++) {
      npkit_fake_comm_free(comms[i]);
      comms[i] = NULL;
    }
  return r;
}

/* ------------------------------------------------------------------ split and shrink */

static ncclResult_t finish_split(npkit_fake_op *op, int phase, bool *again) {
  if (phase > 0) return join_step(op->child, phase - 1, again);
  ncclComm_t p = op->comm;
  int32_t *pairs = op->tmp; /* (color, key) of every parent rank */
  memcpy(&pairs[2 * p->rank], op->mine, sizeof op->mine);
  int color = op->mine[0], key = op->mine[1];
  if (color == NCCL_SPLIT_NOCOLOR) {
    op->nphases = 1; /* no communicator for this rank: *newcomm stays NULL */
    return ncclSuccess;
  }
  int n = 0, rank = 0;
  for (int q = 0; q < p->nranks; q++) {
    if (pairs[2 * q] != color) continue;
    n++;
    int k = pairs[2 * q + 1];
    if (k < key || (k == key && q < p->rank)) rank++; /* ordered by key, then parent rank */
  }
  int64_t v[2] = {op->serial, color};
  char name[NPKIT_FAKE_NAME_MAX];
  npkit_fake_derived_name(name, p->name, v, 2);
  return npkit_fake_comm_new(name, n, rank, p->device, &op->child);
}

ncclResult_t npkit_fake_split(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                              const ncclConfig_t *config) {
  const char *fn = "CommSplit";
  if (newcomm == NULL)
    return npkit_fake_group_error(
        npkit_fake_fail(ncclInvalidArgument, "%s : newcomm argument is NULL", fn));
  *newcomm = NULL;
  if (comm == NULL)
    return npkit_fake_group_error(
        npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is NULL", fn));
  ncclResult_t r = npkit_fake_comm_usable(comm, fn);
  if (r == ncclSuccess && color < 0 && color != NCCL_SPLIT_NOCOLOR)
    r = npkit_fake_fail(ncclInvalidArgument, "%s : invalid color %d", fn, color);
  if (r == ncclSuccess) r = check_config(config, fn);
  if (r != ncclSuccess) return npkit_fake_group_error(r);

  npkit_fake_op *op = npkit_fake_op_new(comm, NPKIT_FAKE_K_SPLIT, fn);
  if (op == NULL || (op->tmp = calloc((size_t)comm->nranks, 2 * sizeof(int32_t))) == NULL) {
    npkit_fake_op_free(op);
    return npkit_fake_group_error(npkit_fake_fail(ncclSystemError, "%s : out of memory", fn));
  }
  op->mine[0] = color;
  op->mine[1] = key;
  op->serial = comm->split_seq++;
  op->needs_ready = true;
  op->finish = finish_split;
  op->out = newcomm;
  for (int q = 0; q < comm->nranks && r == ncclSuccess; q++) {
    if (q == comm->rank) continue;
    r = npkit_fake_op_xfer(op, 0, NPKIT_FAKE_CHAN_COLL, true, q, op->mine, sizeof op->mine);
    if (r == ncclSuccess)
      r = npkit_fake_op_xfer(op, 0, NPKIT_FAKE_CHAN_COLL, false, q,
                             (int32_t *)op->tmp + 2 * q, sizeof op->mine);
  }
  op->nphases = 3;
  if (r != ncclSuccess) {
    npkit_fake_op_free(op);
    return npkit_fake_group_error(r);
  }
  return npkit_fake_submit(op, 0);
}

static ncclResult_t finish_shrink(npkit_fake_op *op, int phase, bool *again) {
  return join_step(op->child, phase, again);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

ncclResult_t npkit_fake_shrink(ncclComm_t comm, const int *exclude, int nexclude,
                               ncclComm_t *newcomm, const ncclConfig_t *config, int flags) {
  const char *fn = "CommShrink";
  if (newcomm == NULL || comm == NULL)
    return npkit_fake_group_error(npkit_fake_fail(
        ncclInvalidArgument, "%s : %s argument is NULL", fn, comm ? "newcomm" : "comm"));
  *newcomm = NULL;
  /* Shrinking is how a job recovers from a failure: a revoked or failed parent is fine, and the
   * parent's rings are not used (the excluded ranks may be gone). */
  ncclResult_t r = check_magic(comm, fn);
  if (r == ncclSuccess && atomic_load(&comm->aborted))
    r = npkit_fake_fail(ncclInvalidUsage, "%s : the communicator was aborted", fn);
  if (r == ncclSuccess && (nexclude < 0 || nexclude >= comm->nranks || (nexclude > 0 && !exclude)))
    r = npkit_fake_fail(ncclInvalidArgument, "%s : invalid list of %d excluded ranks", fn,
                        nexclude);
  if (r == ncclSuccess && flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    r = npkit_fake_fail(ncclInvalidArgument, "%s : invalid flags %d", fn, flags);
  if (r == ncclSuccess) r = check_config(config, fn);
  if (r != ncclSuccess) return npkit_fake_group_error(r);

  int64_t *v = malloc(((size_t)nexclude + 2) * sizeof *v);
  int *sorted = malloc(((size_t)nexclude + 1) * sizeof *sorted);
  npkit_fake_op *op = NULL;
  if (v == NULL || sorted == NULL) {
    r = npkit_fake_fail(ncclSystemError, "%s : out of memory", fn);
    goto out;
  }
  if (nexclude > 0) memcpy(sorted, exclude, (size_t)nexclude * sizeof *sorted);
  qsort(sorted, (size_t)nexclude, sizeof *sorted, cmp_int);
  int below = 0, nv = 0;
  v[nv++] = -1; /* keeps shrink names apart from split names */
  v[nv++] = comm->shrink_seq++;
  for (int i = 0; i < nexclude; i++) {
    if (sorted[i] < 0 || sorted[i] >= comm->nranks || (i > 0 && sorted[i] == sorted[i - 1])) {
      r = npkit_fake_fail(ncclInvalidArgument, "%s : invalid or repeated excluded rank %d", fn,
                          sorted[i]);
      goto out;
    }
    if (sorted[i] == comm->rank) goto out; /* excluded: no communicator */
    below += sorted[i] < comm->rank;
    v[nv++] = sorted[i];
  }
  char name[NPKIT_FAKE_NAME_MAX];
  npkit_fake_derived_name(name, comm->name, v, nv);
  op = npkit_fake_op_new(NULL, NPKIT_FAKE_K_SHRINK, fn);
  if (op == NULL) {
    r = npkit_fake_fail(ncclSystemError, "%s : out of memory", fn);
    goto out;
  }
  r = npkit_fake_comm_new(name, comm->nranks - nexclude, comm->rank - below, comm->device,
                          &op->child);
  if (r != ncclSuccess) goto out;
  op->finish = finish_shrink;
  op->nphases = 2;
  op->out = newcomm;
  r = npkit_fake_submit(op, 0);
  op = NULL; /* owned by the engine now */
out:
  npkit_fake_op_free(op);
  free(v);
  free(sorted);
  return r == ncclSuccess ? r : npkit_fake_group_error(r);
}

/* ------------------------------------------------------------------ end of life */

ncclResult_t npkit_fake_finalize(ncclComm_t comm) {
  if (comm == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "CommFinalize : comm argument is NULL");
  ncclResult_t r = check_magic(comm, "CommFinalize");
  if (r != ncclSuccess) return r;
  comm->finalized = true; /* every call completes before returning: nothing left to flush */
  npkit_fake_npkit_finalized(comm);
  return ncclSuccess;
}

ncclResult_t npkit_fake_destroy(ncclComm_t comm, bool abort) {
  const char *fn = abort ? "CommAbort" : "CommDestroy";
  if (comm == NULL) return ncclSuccess; /* as NCCL */
  ncclResult_t r = check_magic(comm, fn);
  if (r != ncclSuccess) return r;
  npkit_fake_async_wait(comm);
  if (abort) {
    /* Another thread may be blocked in a call on this communicator: make it give up, then wait
     * until it has left before freeing what it uses. */
    atomic_store(&comm->aborted, true);
    /* A call stopped half-way leaves its peers waiting: tell them. */
    if (atomic_load(&comm->busy) > 0 && comm->seg != NULL)
      npkit_fake_seg_set_failed(comm->seg, comm->rank, ncclInvalidUsage);
    npkit_fake_backoff b = {0};
    double t0 = npkit_fake_now();
    while (atomic_load(&comm->busy) > 0) {
      if (npkit_fake_now() - t0 > npkit_fake_cfg()->timeout_s)
        return npkit_fake_fail(ncclInternalError, "%s : a call on the communicator did not stop",
                               fn);
      npkit_fake_backoff_wait(&b);
    }
  } else if (atomic_load(&comm->busy) > 0) {
    return npkit_fake_fail(ncclInvalidUsage, "%s : a call on the communicator is in progress", fn);
  }
  /* commReclaim reads the communicator's state first (ncclCommGetAsyncError) */
  npkit_fake_npkit_reclaimed(comm, abort || atomic_load(&comm->async_error) != ncclSuccess);
  npkit_fake_group_forget(comm);
  npkit_fake_comm_free(comm);
  npkit_fake_gpu_streams_destroyed(); /* commFree destroys its streams (v2.28.9-1 src/init.cc) */
  return ncclSuccess;
}

ncclResult_t npkit_fake_revoke(ncclComm_t comm, int flags) {
  if (comm == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "CommRevoke : comm argument is NULL");
  ncclResult_t r = check_magic(comm, "CommRevoke");
  if (r != ncclSuccess) return r;
  if (flags != NCCL_REVOKE_DEFAULT)
    return npkit_fake_fail(ncclInvalidArgument, "CommRevoke : invalid flags %d", flags);
  atomic_store(&comm->revoked, true);
  if (atomic_load(&comm->busy) > 0 && comm->seg != NULL)
    npkit_fake_seg_set_failed(comm->seg, comm->rank, ncclInvalidUsage);
  return ncclSuccess;
}

/* ------------------------------------------------------------------ reduction operators */

ncclResult_t npkit_fake_redop_create(ncclRedOp_t *op, void *scalar, ncclDataType_t dt,
                                     ncclScalarResidence_t residence, ncclComm_t comm) {
  const char *fn = "RedOpCreatePreMulSum";
  if (comm == NULL) return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is NULL", fn);
  ncclResult_t r = check_magic(comm, fn);
  if (r != ncclSuccess) return r;
  if (op == NULL || scalar == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "%s : %s argument is NULL", fn,
                           op == NULL ? "op" : "scalar");
  if (!npkit_fake_type_reducible(dt))
    return npkit_fake_fail(ncclInvalidArgument, "%s : invalid or unsupported datatype %d", fn,
                           (int)dt);
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return npkit_fake_fail(ncclInvalidArgument, "%s : invalid residence %d", fn, (int)residence);
  int idx = 0;
  while (idx < comm->nredops && comm->redops[idx].used) idx++;
  if (idx == comm->nredops) {
    int cap = comm->nredops ? 2 * comm->nredops : 4;
    npkit_fake_redop *t = realloc(comm->redops, (size_t)cap * sizeof *t);
    if (t == NULL) return npkit_fake_fail(ncclSystemError, "%s : out of memory", fn);
    memset(t + comm->nredops, 0, (size_t)(cap - comm->nredops) * sizeof *t);
    comm->redops = t;
    comm->nredops = cap;
  }
  npkit_fake_redop *r_ = &comm->redops[idx];
  memset(r_, 0, sizeof *r_);
  r_->used = true;
  r_->dt = dt;
  r_->residence = residence;
  if (residence == ncclScalarHostImmediate)
    memcpy(r_->value, scalar, npkit_fake_type_size(dt));
  else
    r_->ptr = scalar; /* a "device" pointer: host memory here, read when a call starts */
  *op = (ncclRedOp_t)(ncclNumOps + idx);
  return ncclSuccess;
}

ncclResult_t npkit_fake_redop_destroy(ncclRedOp_t op, ncclComm_t comm) {
  const char *fn = "ncclRedOpDestroy";
  if (comm == NULL) return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is NULL", fn);
  ncclResult_t r = check_magic(comm, fn);
  if (r != ncclSuccess) return r;
  if (op < ncclNumOps)
    return npkit_fake_fail(ncclInvalidArgument, "%s : operator is a NCCL builtin.", fn);
  long idx = (long)op - (long)ncclNumOps;
  if (idx >= comm->nredops || !comm->redops[idx].used)
    return npkit_fake_fail(ncclInvalidArgument, "%s : operator %d is not alive.", fn, (int)op);
  comm->redops[idx].used = false;
  return ncclSuccess;
}
