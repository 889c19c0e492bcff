/*
 * fuzz-s3-xml: the XML request bodies of the S3 store: the
 * CompleteMultipartUpload document (read with expat in s3_multipart.c), and
 * the DeleteObjects document of POST ?delete (s3_delete.c; sent with the
 * checksum-algorithm header that stands for S3's required integrity header,
 * so that the body is read).
 *
 * Each input gets a fresh store holding an upload of "mp" with parts 1
 * ("part-one", ETag "0b9f2ed3d02a8a21e04c0b6a9a14b5d9"-style MD5 of its bytes)
 * and 2 ("part-two"), made with raw HTTP through a connection. Then
 *   kind:u8, xml...
 * is sent as the body of POST /ernic/mp?uploadId=<the upload> (kind even)
 * or POST /ernic/?delete (kind odd), with its Content-Length, and the
 * upload is listed afterwards (it is gone after a completion).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_s3.h"

static void request(struct s3_conn *c, const char *head, const void *body, size_t len, char *out, size_t cap)
{
	char h[512];
	int n = snprintf(h, sizeof(h), "%sHost: x\r\nContent-Length: %zu\r\n\r\n", head, len);

	fs_feed(c, (const uint8_t *)h, (size_t)n, 0, out, cap);
	if (len)
		fs_feed(c, body, len, 0, out, cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size, 0 };
	struct s3_store *st = fs_store_new();
	struct s3_conn *c = s3_conn_new(st);
	char out[4096], head[256], id[64];
	const char *p, *e;
	uint8_t kind = fz_u8(&f);
	size_t got;
	const uint8_t *xml;

	request(c, "POST /ernic/mp?uploads HTTP/1.1\r\n", NULL, 0, out, sizeof(out));
	p = strstr(out, "<UploadId>");
	e = p ? strstr(p, "</UploadId>") : NULL;
	if (e == NULL || (size_t)(e - p - 10) >= sizeof(id))
		abort(); /* the store refused to start an upload */
	memcpy(id, p + 10, (size_t)(e - p - 10));
	id[e - p - 10] = '\0';
	snprintf(head, sizeof(head), "PUT /ernic/mp?partNumber=1&uploadId=%s HTTP/1.1\r\n", id);
	request(c, head, "part-one", 8, out, sizeof(out));
	snprintf(head, sizeof(head), "PUT /ernic/mp?partNumber=2&uploadId=%s HTTP/1.1\r\n", id);
	request(c, head, "part-two", 8, out, sizeof(out));

	xml = fz_ptr(&f, fz_left(&f), &got);
	if (kind & 1)
		snprintf(head, sizeof(head), "POST /ernic/?delete HTTP/1.1\r\nx-amz-sdk-checksum-algorithm: CRC32\r\n");
	else
		snprintf(head, sizeof(head), "POST /ernic/mp?uploadId=%s HTTP/1.1\r\n", id);
	request(c, head, xml, got, out, sizeof(out));
	snprintf(head, sizeof(head), "GET /ernic/mp?uploadId=%s HTTP/1.1\r\n", id);
	request(c, head, NULL, 0, out, sizeof(out));
	s3_conn_free(c);
	s3_store_free(st);
	return 0;
}
