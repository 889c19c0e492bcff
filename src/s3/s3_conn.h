/*
 * One HTTP connection to the S3 store, independent of any transport: bytes
 * in, bytes out. It runs the HTTP parser over the input, feeds requests and
 * bodies to the store, answers Expect: 100-continue, keeps pipelined
 * responses in order, and queues response bodies without copying object
 * data (the queue holds references). The transport (the in-band TCP stack,
 * or a test) moves the bytes.
 *
 * Flow control: s3_conn_input() consumes less than it is given while too
 * many responses wait to be sent; the transport keeps the rest (its window
 * closes) and offers it again after output drained.
 */
#ifndef ERNIC_S3_S3_CONN_H
#define ERNIC_S3_S3_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3_store;
struct s3_conn;

struct s3_conn *s3_conn_new(struct s3_store *st);
/* Drops an unfinished request without touching the store. */
void s3_conn_free(struct s3_conn *c);

/* Received bytes; returns how many were consumed. */
size_t s3_conn_input(struct s3_conn *c, const uint8_t *data, size_t len);

/* The peer will send nothing more. */
void s3_conn_input_eof(struct s3_conn *c);

/* The next contiguous bytes to send (0 when nothing is queued). */
size_t s3_conn_output(struct s3_conn *c, const uint8_t **data);
/*
 * The contiguous bytes that start off bytes after the front of the queue
 * (a transport that keeps bytes in flight until they are acknowledged reads
 * ahead with this, and releases with s3_conn_output_done()). 0 past the end.
 */
size_t s3_conn_output_peek(struct s3_conn *c, uint64_t off, const uint8_t **data);
/* n bytes of that were sent. */
void s3_conn_output_done(struct s3_conn *c, size_t n);

/* Once the output is drained, the connection should be closed (error, Connection: close, EOF). */
bool s3_conn_wants_close(const struct s3_conn *c);

/*
 * Bounded work (off unless asked for): the RDMA transfer of a complete
 * x-amz-rdma-token request is left for s3_conn_work instead of being made
 * within s3_conn_input. Until it is done the connection takes no input (the
 * transport keeps a pipelined request) and queues no response; its end
 * queues the response, after which the transport should offer its held
 * input again and send (for the in-band stack: inet_poll).
 */
void s3_conn_defer_transfers(struct s3_conn *c);
/*
 * A transfer waits for s3_conn_work. So does a body hashed on the store's
 * MD5 thread, from its last byte to its digest (without deferring,
 * s3_conn_input waits for the digest instead): then
 * s3_conn_hashing too, and s3_conn_work has nothing to do before the
 * store's MD5 eventfd fires.
 */
bool s3_conn_busy(const struct s3_conn *c);
bool s3_conn_hashing(const struct s3_conn *c);
/* Up to budget bytes of it; true while some are left (false: done, the response is queued). */
bool s3_conn_work(struct s3_conn *c, uint64_t budget);

#endif
