/* An HTTP connection to the S3 store; see s3_conn.h. */
#include "s3/s3_conn.h"

#include <stdlib.h>
#include <string.h>

#include "s3/s3_http.h"
#include "s3/s3_err.h"
#include "s3/s3_target.h"

#define MAX_PENDING_RESPONSES 16
#define MAX_PENDING_OWNED     (1u << 20)

/* A piece of output: bytes we own, or a window into an object's data. */
#define SEG_INLINE 512      /* a response head up to this size is kept in its segment */
/*
 * Segments kept for reuse per connection: as many as the most responses let wait (a head, a body
 * and a marker each), so that answering pipelined requests while the client's ACKs lag allocates
 * nothing (at 8, a qd16 client had the ninth and later segments malloc'd and freed per answer).
 */
#define SEG_SPARES (3 * MAX_PENDING_RESPONSES)

struct seg {
	struct seg *next;
	uint8_t *own;            /* owned bytes (malloc'd, or inl), or NULL */
	struct s3_blob *blob;    /* referenced bytes, or NULL */
	const uint8_t *p;
	size_t len;
	uint8_t inl[SEG_INLINE];
};

struct s3_conn {
	struct s3_store *st;
	struct http_parser *hp;
	struct s3_op *op;        /* the request whose body is arriving */
	bool in_body;
	bool closing;            /* no more input is taken; close when output drains */
	bool eof;
	bool defer;              /* RDMA transfers are made by s3_conn_work */
	bool waiting;            /* c->op's request is complete, its transfer is not: input and its response wait */
	bool wait_keep;          /* that request's keep-alive */
	struct seg *head, *tail;
	/*
	 * Where the last peek ended: segment cur begins cur_off bytes after the first unsent-or-
	 * unacknowledged byte (head's p). The stack peeks at growing offsets while the client's
	 * ACKs lag, and a walk from the head each time grew with every response in flight.
	 */
	const struct seg *cur;
	uint64_t cur_off;
	struct seg *spare;       /* released segments, SEG_SPARES at most: a response costs no allocation */
	unsigned nspare;
	unsigned responses;      /* responses queued, not fully sent */
	uint64_t pending;        /* bytes queued */
	uint64_t owned;          /* of which we own */
};

struct s3_conn *s3_conn_new(struct s3_store *st)
{
	struct s3_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->st = st;
	c->hp = http_parser_new();
	if (c->hp == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

/* A segment done with: what it owns freed, what it references let go, the segment kept or freed. */
static void seg_release(struct s3_conn *c, struct seg *s)
{
	if (s->own != s->inl)
		free(s->own);
	s3_blob_put(s->blob);
	if (c->nspare < SEG_SPARES) {
		s->next = c->spare;
		c->spare = s;
		c->nspare++;
	} else {
		free(s);
	}
}

static struct seg *seg_get(struct s3_conn *c)
{
	struct seg *s = c->spare;

	if (s == NULL)
		return malloc(sizeof(*s));
	c->spare = s->next;
	c->nspare--;
	return s;
}

void s3_conn_free(struct s3_conn *c)
{
	if (c == NULL)
		return;
	s3_op_abort(c->op);
	while (c->head) {
		struct seg *s = c->head;

		c->head = s->next;
		seg_release(c, s);
	}
	while (c->spare) {
		struct seg *s = c->spare;

		c->spare = s->next;
		free(s);
	}
	http_parser_free(c->hp);
	free(c);
}

/* Queues [p, p+len); own (freed when sent; may be the segment's inl, see queue_copy) or blob keep it alive. */
static bool queue_seg(struct s3_conn *c, struct seg *s, uint8_t *own, struct s3_blob *blob, const uint8_t *p,
		      size_t len)
{
	if (s == NULL) {
		free(own);
		s3_blob_put(blob);
		c->closing = true;
		return false;
	}
	s->next = NULL;
	s->own = own;
	s->blob = blob;
	s->p = p;
	s->len = len;
	if (c->tail)
		c->tail->next = s;
	else
		c->head = s;
	c->tail = s;
	c->pending += len;
	if (own)
		c->owned += len;
	return true;
}

static bool queue(struct s3_conn *c, uint8_t *own, struct s3_blob *blob, const uint8_t *p, size_t len)
{
	return queue_seg(c, seg_get(c), own, blob, p, len);
}

static void queue_copy(struct s3_conn *c, const void *p, size_t len)
{
	struct seg *s = seg_get(c);
	uint8_t *own;

	if (s == NULL) {
		c->closing = true;
		return;
	}
	own = len <= sizeof(s->inl) ? s->inl : malloc(len ? len : 1);
	if (own == NULL) {
		free(s);
		c->closing = true;
		return;
	}
	memcpy(own, p, len);
	queue_seg(c, s, own, NULL, own, len);
}

/* Serialise a response: the head, then its body (by reference for object data). */
static void queue_response(struct s3_conn *c, struct s3_response *r, bool keep_alive)
{
	struct http_response_head h = {
		.status = r->status,
		.content_length = r->content_length,
		.keep_alive = keep_alive && !r->close,
		.headers = r->headers,
		.nheaders = r->nheaders,
	};
	char head[12288];
	int n = http_format_response_head(&h, head, sizeof(head));

	if (n < 0) {
		c->closing = true;
		s3_response_release(r);
		return;
	}
	queue_copy(c, head, (size_t)n);
	if (r->send_body && r->xml) {
		queue(c, (uint8_t *)r->xml, NULL, (const uint8_t *)r->xml, r->content_length);
		r->xml = NULL;
	} else if (r->send_body && r->blob) {
		queue(c, NULL, r->blob, r->blob->data + r->off, (size_t)r->len);
		r->blob = NULL;
	}
	c->responses++;
	/* The marker that one response has been fully handed over. */
	queue(c, NULL, NULL, NULL, 0);
	if (!h.keep_alive)
		c->closing = true;
	s3_response_release(r);
}

static void finish_op(struct s3_conn *c, bool keep_alive)
{
	struct s3_response r; /* every field set by s3_op_finish() (response_move), the arrays as far as used */

	s3_op_finish(c->op, &r);
	c->op = NULL;
	c->in_body = false;
	queue_response(c, &r, keep_alive);
}

/* The request is complete: its response now, or once its RDMA transfer is made (deferred). */
static void finish_or_wait(struct s3_conn *c, bool keep_alive)
{
	if (c->defer && s3_op_busy(c->op)) {
		c->waiting = true;
		c->wait_keep = keep_alive;
		c->in_body = false;
		return;
	}
	finish_op(c, keep_alive);
}

void s3_conn_defer_transfers(struct s3_conn *c)
{
	c->defer = true;
}

bool s3_conn_busy(const struct s3_conn *c)
{
	return c->waiting;
}

bool s3_conn_hashing(const struct s3_conn *c)
{
	return c->waiting && s3_op_hashing(c->op);
}

bool s3_conn_work(struct s3_conn *c, uint64_t budget)
{
	if (!c->waiting)
		return false;
	if (s3_op_work(c->op, budget) || s3_op_hashing(c->op))
		return true;
	c->waiting = false;
	finish_op(c, c->wait_keep);
	return false;
}

size_t s3_conn_input(struct s3_conn *c, const uint8_t *data, size_t len)
{
	size_t used = 0;

	/* Until the parser has nothing more to say about this input (it may have events left at its end). */
	while (!c->closing && !c->waiting) {
		enum http_event ev;
		const uint8_t *body;
		size_t body_len, n;

		/* Between requests, wait while too much is queued: the transport keeps the bytes. */
		if (!c->in_body && (c->responses >= MAX_PENDING_RESPONSES || c->owned >= MAX_PENDING_OWNED))
			break;
		n = http_parse(c->hp, data + used, len - used, &ev, &body, &body_len);
		used += n;
		switch (ev) {
		case HTTP_EV_NEED_MORE:
			break;
		case HTTP_EV_HEADERS: {
			const struct http_request *req = http_parser_request(c->hp);

			c->op = s3_op_begin(c->st, req);
			if (c->op == NULL) {
				struct s3_response r;

				s3_store_error_response(c->st, 500, req->path, &r); /* out of memory */
				queue_response(c, &r, false);
				return used;
			}
			c->in_body = true;
			if (req->expect_continue) {
				if (s3_op_wants_body(c->op)) {
					static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

					queue_copy(c, cont, sizeof(cont) - 1);
				} else {
					/* The answer is known and the client waits for our word: give it, then close. */
					finish_or_wait(c, false);
					return used;
				}
			}
			break;
		}
		case HTTP_EV_BODY:
			if (c->op)
				s3_op_body(c->op, body, body_len);
			break;
		case HTTP_EV_DONE: {
			bool keep = http_parser_request(c->hp)->keep_alive;
			const char *tn = c->op ? s3_op_wants_trailer(c->op) : NULL;

			if (tn)
				s3_op_trailer(c->op, http_parser_trailer(c->hp, tn));
			if (c->op)
				finish_or_wait(c, keep);
			http_parser_reset(c->hp);
			break;
		}
		case HTTP_EV_ERROR: {
			struct s3_response r;
			const struct http_request *req = http_parser_request(c->hp);

			s3_op_abort(c->op);
			c->op = NULL;
			s3_store_error_response(c->st, (int)s3_err_from_http(http_parser_error_status(c->hp)),
						req && req->path ? req->path : "", &r);
			queue_response(c, &r, false);
			return used;
		}
		}
		if (ev == HTTP_EV_NEED_MORE)
			break;
	}
	return used;
}

void s3_conn_input_eof(struct s3_conn *c)
{
	c->eof = true;
	if (c->op && !c->waiting) { /* a request cut off: nothing of it is stored (a complete one is answered) */
		s3_op_abort(c->op);
		c->op = NULL;
		c->in_body = false;
	}
	c->closing = true;
}

size_t s3_conn_output(struct s3_conn *c, const uint8_t **data)
{
	/* Skip response markers at the head. */
	while (c->head && c->head->len == 0) {
		struct seg *s = c->head;

		c->head = s->next;
		if (c->head == NULL)
			c->tail = NULL;
		if (c->cur == s)
			c->cur = NULL;
		if (!s->own && !s->blob && c->responses)
			c->responses--;
		seg_release(c, s);
	}
	if (c->head == NULL) {
		*data = NULL;
		return 0;
	}
	*data = c->head->p;
	return c->head->len;
}

size_t s3_conn_output_peek(struct s3_conn *c, uint64_t off, const uint8_t **data)
{
	const uint8_t *dummy;
	const struct seg *s;
	uint64_t base = 0;

	s3_conn_output(c, &dummy); /* drop finished markers at the front */
	s = c->head;
	if (c->cur && off >= c->cur_off) {
		s = c->cur;
		base = c->cur_off;
	}
	for (; s; s = s->next) {
		if (off - base < s->len) {
			c->cur = s;
			c->cur_off = base;
			*data = s->p + (off - base);
			return s->len - (size_t)(off - base);
		}
		base += s->len;
	}
	*data = NULL;
	return 0;
}

void s3_conn_output_done(struct s3_conn *c, size_t n)
{
	while (n > 0 && c->head) {
		struct seg *s = c->head;
		size_t k = n < s->len ? n : s->len;

		s->p += k;
		s->len -= k;
		if (c->cur && c->cur != s)
			c->cur_off -= k; /* the bytes before it, fewer by what was taken from the head */
		c->pending -= k;
		if (s->own)
			c->owned -= k;
		n -= k;
		if (s->len == 0) {
			const uint8_t *dummy;

			s3_conn_output(c, &dummy); /* frees it (and a following marker) */
		}
	}
}

bool s3_conn_wants_close(const struct s3_conn *c)
{
	return c->closing && !c->waiting; /* not before the waiting request's response is out */
}
