/*
 * cm-loop: the native rdma_cm baseline of the cross-host connection
 * benchmarks (bench/cm/README.md). Plain C on librdmacm, built on the host
 * with the system compiler (bench/cm/build.sh); the pair guests run the
 * host's binary.
 *
 *   cm-loop server ADDR PORT COUNT        accept COUNT connections (0: until killed)
 *   cm-loop client ADDR PORT COUNT INFLIGHT [WARMUP]
 *
 * Each connection makes what a connection of rx-verbs makes (a PD, a
 * completion channel, a CQ on it, an RC QP), so both sides of a comparison
 * pay for the same objects. The client times each connection from the
 * creation of its id to ESTABLISHED (address and route resolution, the
 * resources, the connect), then disconnects and releases everything;
 * INFLIGHT connections run at once (1: one after another). It prints one
 * human line and one `BENCH {json}` line; exit 0 only when every connection
 * was established and closed. WARMUP connections (default 0) go first, one
 * at a time, and are not counted: the first connection of a process also
 * pays for opening the device.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#define RESOLVE_MS 2000
#define CQE 32
#define MAX_WR 16

struct conn {
  struct ibv_pd *pd;
  struct ibv_comp_channel *channel;
  struct ibv_cq *cq;
  double t0;
  int index;
};

/* CPU time (user + system) of this process: where a set-up's time goes. */
static double cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, int err) {
  fprintf(stderr, "cm-loop: %s: %s\n", what, strerror(err));
  exit(1);
}

/* The per-connection objects, on the id's own device, and its QP. */
static void make_resources(struct rdma_cm_id *id, struct conn *c) {
  struct ibv_qp_init_attr attr;
  c->pd = ibv_alloc_pd(id->verbs);
  if (!c->pd) die("ibv_alloc_pd", errno);
  c->channel = ibv_create_comp_channel(id->verbs);
  if (!c->channel) die("ibv_create_comp_channel", errno);
  c->cq = ibv_create_cq(id->verbs, CQE, NULL, c->channel, 0);
  if (!c->cq) die("ibv_create_cq", errno);
  memset(&attr, 0, sizeof attr);
  attr.send_cq = c->cq;
  attr.recv_cq = c->cq;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = MAX_WR;
  attr.cap.max_recv_wr = MAX_WR;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, c->pd, &attr)) die("rdma_create_qp", errno);
}

/* Releases a connection after its DISCONNECTED event was acked. */
static void release(struct rdma_cm_id *id) {
  struct conn *c = id->context;
  rdma_destroy_qp(id);
  if (c) {
    ibv_destroy_cq(c->cq);
    ibv_destroy_comp_channel(c->channel);
    ibv_dealloc_pd(c->pd);
    free(c);
  }
  rdma_destroy_id(id);
}

static struct sockaddr_in address(const char *host, const char *port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(port));
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    fprintf(stderr, "cm-loop: %s is not an IPv4 address\n", host);
    exit(2);
  }
  return a;
}

static int run_server(const char *host, const char *port, long count) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *listener;
  struct rdma_cm_event *ev;
  struct sockaddr_in a = address(host, port);
  long accepted = 0, closed = 0;
  if (!ch) die("rdma_create_event_channel", errno);
  if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP)) die("rdma_create_id", errno);
  if (rdma_bind_addr(listener, (struct sockaddr *)&a)) die("rdma_bind_addr", errno);
  if (rdma_listen(listener, 128)) die("rdma_listen", errno);
  printf("cm-loop server: listening on %s:%s\n", host, port);
  fflush(stdout);
  while (count == 0 || closed < count) {
    struct rdma_cm_id *id;
    enum rdma_cm_event_type type;
    if (rdma_get_cm_event(ch, &ev)) die("rdma_get_cm_event", errno);
    id = ev->id;
    type = ev->event;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      struct rdma_conn_param param;
      struct conn *c = calloc(1, sizeof *c);
      id->context = c;
      make_resources(id, c);
      memset(&param, 0, sizeof param);
      param.responder_resources = 1;
      param.initiator_depth = 1;
      param.rnr_retry_count = 7;
      rdma_ack_cm_event(ev);
      if (rdma_accept(id, &param)) die("rdma_accept", errno);
      continue;
    }
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_ESTABLISHED) {
      accepted++;
    } else if (type == RDMA_CM_EVENT_DISCONNECTED) {
      release(id);
      closed++;
    } else {
      /* A client that gave up (connect error, timeout): not this server's failure. */
      fprintf(stderr, "cm-loop server: %s on a connection\n", rdma_event_str(type));
      if (id != listener) {
        release(id);
        closed++;
      }
    }
  }
  printf("cm-loop server: %ld accepted, %ld closed\n", accepted, closed);
  rdma_destroy_id(listener);
  rdma_destroy_event_channel(ch);
  return 0;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static int run_client(const char *host, const char *port, long count, long inflight);

/* One connection, not timed: the first of a process opens the device. */
static int warm_up(const char *host, const char *port, long n) {
  for (long i = 0; i < n; i++) {
    int rc = run_client(host, port, -1, 1);
    if (rc) return rc;
  }
  return 0;
}

/* COUNT < 0: one quiet connection (warm_up). */
static int run_client(const char *host, const char *port, long count, long inflight) {
  const int quiet = count < 0;
  if (quiet) count = 1;
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct sockaddr_in a = address(host, port);
  double *us = calloc((size_t)count, sizeof *us);
  long started = 0, established = 0, done = 0;
  double t_start, cpu_start;
  if (!ch || !us) die("set-up", errno ? errno : ENOMEM);
  t_start = now_us();
  cpu_start = cpu_us();
  while (done < count) {
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    struct conn *c;
    enum rdma_cm_event_type type;
    int status;
    while (started < count && started - done < inflight) {
      struct rdma_cm_id *nid;
      c = calloc(1, sizeof *c);
      c->index = (int)started++;
      c->t0 = now_us();
      if (rdma_create_id(ch, &nid, c, RDMA_PS_TCP)) die("rdma_create_id", errno);
      if (rdma_resolve_addr(nid, NULL, (struct sockaddr *)&a, RESOLVE_MS)) die("rdma_resolve_addr", errno);
    }
    if (rdma_get_cm_event(ch, &ev)) die("rdma_get_cm_event", errno);
    id = ev->id;
    c = id->context;
    type = ev->event;
    status = ev->status;
    rdma_ack_cm_event(ev);
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(id, RESOLVE_MS)) die("rdma_resolve_route", errno);
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        struct rdma_conn_param param;
        make_resources(id, c);
        memset(&param, 0, sizeof param);
        param.responder_resources = 1;
        param.initiator_depth = 1;
        param.retry_count = 7;
        param.rnr_retry_count = 7;
        if (rdma_connect(id, &param)) die("rdma_connect", errno);
        break;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        us[c->index] = now_us() - c->t0;
        established++;
        if (rdma_disconnect(id)) die("rdma_disconnect", errno);
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        release(id);
        done++;
        break;
      default:
        fprintf(stderr, "cm-loop client: connection %d: %s (status %d)\n", c ? c->index : -1, rdma_event_str(type), status);
        return 1;
    }
  }
  if (!quiet) {
    double seconds = (now_us() - t_start) / 1e6;
    double cpu_per = (cpu_us() - cpu_start) / count;
    double p50, p99;
    qsort(us, (size_t)count, sizeof *us, cmp);
    p50 = us[(size_t)(0.5 * count)];
    p99 = us[(size_t)(0.99 * count) < (size_t)count ? (size_t)(0.99 * count) : (size_t)count - 1];
    printf("cm-loop client: %ld connections (%ld in flight) in %.3f s = %.1f conn/s; connect->established p50 %.1f us, p99 %.1f us; CPU %.1f us a connection\n",
           established, inflight, seconds, count / seconds, p50, p99, cpu_per);
    /* Every sample too: a report merges the rounds' samples before taking percentiles. */
    printf("BENCH {\"impl\":\"native\",\"connections\":%ld,\"inflight\":%ld,\"seconds\":%.6f,\"perSecond\":%.3f,\"p50Us\":%.3f,\"p99Us\":%.3f,\"cpuUsPerConnection\":%.3f,\"us\":[",
           established, inflight, seconds, count / seconds, p50, p99, cpu_per);
    for (long i = 0; i < count; i++) printf("%s%.3f", i ? "," : "", us[i]);
    printf("]}\n");
  }
  free(us);
  rdma_destroy_event_channel(ch);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 5 && strcmp(argv[1], "server") == 0) return run_server(argv[2], argv[3], atol(argv[4]));
  if ((argc == 6 || argc == 7) && strcmp(argv[1], "client") == 0 && atol(argv[4]) > 0 && atol(argv[5]) > 0) {
    int rc = warm_up(argv[2], argv[3], argc == 7 ? atol(argv[6]) : 0);
    return rc ? rc : run_client(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
  }
  fprintf(stderr, "usage: cm-loop server ADDR PORT COUNT | cm-loop client ADDR PORT COUNT INFLIGHT [WARMUP]\n");
  return 2;
}
