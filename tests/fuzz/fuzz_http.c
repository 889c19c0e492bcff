/*
 * fuzz-http: an HTTP request stream into one S3 connection (s3_conn.c: the
 * HTTP parser of s3_http.c with chunked and aws-chunked bodies, keep-alive,
 * pipelining and 100-continue, then the store of s3_target.c), with the
 * connection's output taken as a transport would.
 *
 * input: piece:u8, then the bytes of the stream, fed in pieces of piece + 1
 * bytes (piece 255: all at once), so every split point of a request line,
 * header, chunk-size line or trailer is reachable. A fresh store and
 * connection per input; the end of the input is the peer's FIN.
 */
#include "fuzz.h"
#include "fuzz_s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct s3_store *st = fs_store_new();
	struct s3_conn *c = s3_conn_new(st);
	uint8_t piece = fz_u8(&f);
	size_t got;
	const uint8_t *p = fz_ptr(&f, fz_left(&f), &got);
	char out[1];

	fs_feed(c, p, got, piece == 255 ? 0 : (size_t)piece + 1, out, 0);
	s3_conn_input_eof(c);
	s3_conn_free(c);
	s3_store_free(st);
	return 0;
}
