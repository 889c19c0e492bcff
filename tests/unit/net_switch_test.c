/*
 * net-switch-unit: the segment's learning switch (src/net/net_switch.c) with
 * two recording wire ports and two recording endpoints whose filter takes
 * unicast frames to their MAC of one EtherType (so that some frames to
 * their MAC are unwanted). Checks where each frame goes: endpoint to
 * endpoint, wire to endpoint, flooding and learning between wire ports, and
 * that a frame to an endpoint's MAC that the endpoint does not want is
 * dropped rather than flooded to the wire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "net/net_switch.h"

#define ET_WANTED 0x88b5        /* IEEE local experimental: what the endpoints take */
#define ET_OTHER 0x88b6

struct rec {
	uint8_t mac[6];         /* endpoints: their address */
	unsigned frames;
	uint8_t last[64];
	size_t last_len;
};

static struct rec wire[2], ep[2];

static bool ep_wants(void *ctx, const uint8_t *f, size_t len)
{
	struct rec *r = ctx;

	return len >= 14 && memcmp(f, r->mac, 6) == 0 && f[12] == (ET_WANTED >> 8) && f[13] == (ET_WANTED & 0xff);
}

static void rec_deliver(void *ctx, const uint8_t *f, size_t len)
{
	struct rec *r = ctx;

	r->frames++;
	r->last_len = len < sizeof(r->last) ? len : sizeof(r->last);
	memcpy(r->last, f, r->last_len);
}

static size_t frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memset(f, 0, 60);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	return 60;
}

static const uint8_t BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t GUEST[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t HOST[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t NOBODY[6] = { 0x02, 0, 0, 0, 0, 0x99 };

static struct net_switch *setup(int *w0, int *w1, int *e0, int *e1)
{
	struct net_switch *sw = net_switch_new();
	struct net_port p = { .deliver = rec_deliver };

	memset(wire, 0, sizeof(wire));
	memset(ep, 0, sizeof(ep));
	memcpy(ep[0].mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x10 }, 6);
	memcpy(ep[1].mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x11 }, 6);
	assert_non_null(sw);
	p.name = "wire0", p.ctx = &wire[0];
	*w0 = net_switch_attach(sw, &p);
	p.name = "wire1", p.ctx = &wire[1];
	*w1 = net_switch_attach(sw, &p);
	p.wants = ep_wants;
	p.name = "ep0", p.ctx = &ep[0];
	*e0 = net_switch_attach(sw, &p);
	p.name = "ep1", p.ctx = &ep[1];
	*e1 = net_switch_attach(sw, &p);
	assert_true(*w0 >= 0 && *w1 >= 0 && *e0 >= 0 && *e1 >= 0);
	return sw;
}

/* An endpoint's unicast frame reaches the other endpoint only; its broadcast floods the wire. */
static void test_endpoint_to_endpoint(void **state)
{
	int w0, w1, e0, e1;
	struct net_switch *sw = setup(&w0, &w1, &e0, &e1);
	uint8_t f[60];

	(void)state;
	net_switch_input(sw, e0, f, frame(f, ep[1].mac, ep[0].mac, ET_WANTED));
	assert_int_equal(ep[1].frames, 1);
	assert_int_equal(ep[0].frames, 0);
	assert_int_equal(wire[0].frames + wire[1].frames, 0);
	assert_memory_equal(ep[1].last, f, 60);
	/* and back: the answer from ep1 reaches ep0 */
	net_switch_input(sw, e1, f, frame(f, ep[0].mac, ep[1].mac, ET_WANTED));
	assert_int_equal(ep[0].frames, 1);
	assert_int_equal(wire[0].frames + wire[1].frames, 0);
	/* a broadcast from an endpoint goes to both wire ports, never back to it */
	net_switch_input(sw, e0, f, frame(f, BCAST, ep[0].mac, ET_OTHER));
	assert_int_equal(wire[0].frames, 1);
	assert_int_equal(wire[1].frames, 1);
	assert_int_equal(ep[0].frames, 1);
	assert_int_equal(net_switch_stats(sw)->to_endpoints, 2);
	net_switch_free(sw);
}

/* Unicast to an endpoint's (learned) MAC that it does not want goes nowhere: no flood to the wire. */
static void test_unwanted_not_flooded(void **state)
{
	int w0, w1, e0, e1;
	struct net_switch *sw = setup(&w0, &w1, &e0, &e1);
	uint8_t f[60];

	(void)state;
	net_switch_input(sw, e1, f, frame(f, BCAST, ep[1].mac, ET_OTHER)); /* the switch learns ep1 */
	wire[0].frames = wire[1].frames = 0;
	net_switch_input(sw, w0, f, frame(f, ep[1].mac, GUEST, ET_OTHER));
	net_switch_input(sw, e0, f, frame(f, ep[1].mac, ep[0].mac, ET_OTHER));
	assert_int_equal(wire[0].frames + wire[1].frames, 0);
	assert_int_equal(ep[1].frames, 0);
	assert_int_equal(net_switch_stats(sw)->dropped_unwanted, 2);
	/* the wanted type from the wire is delivered */
	net_switch_input(sw, w0, f, frame(f, ep[1].mac, GUEST, ET_WANTED));
	assert_int_equal(ep[1].frames, 1);
	assert_int_equal(wire[1].frames, 0);
	net_switch_free(sw);
}

/* Between wire ports: unknown destinations flood, learned ones go to their port only. */
static void test_wire_learning(void **state)
{
	int w0, w1, e0, e1;
	struct net_switch *sw = setup(&w0, &w1, &e0, &e1);
	uint8_t f[60];

	(void)state;
	net_switch_input(sw, w0, f, frame(f, NOBODY, GUEST, ET_OTHER));
	assert_int_equal(wire[1].frames, 1);
	assert_int_equal(wire[0].frames, 0);
	net_switch_input(sw, w1, f, frame(f, GUEST, HOST, ET_OTHER));
	assert_int_equal(wire[0].frames, 1);
	assert_int_equal(net_switch_stats(sw)->unicast, 1);
	/* an endpoint's frame to the learned guest goes to wire0 only */
	net_switch_input(sw, e0, f, frame(f, GUEST, ep[0].mac, ET_OTHER));
	assert_int_equal(wire[0].frames, 2);
	assert_int_equal(wire[1].frames, 1);
	/* a runt is counted and goes nowhere */
	net_switch_input(sw, w0, f, 10);
	assert_int_equal(net_switch_stats(sw)->dropped_runt, 1);
	net_switch_free(sw);
}

/*
 * An endpoint with no_learn that speaks with the guest's MAC (a guest RoCE
 * node): its frames do not move the guest's MAC to its port, so frames to
 * the guest it does not want still reach the guest's wire port.
 */
static void test_no_learn(void **state)
{
	struct net_switch *sw = net_switch_new();
	struct net_port p = { .deliver = rec_deliver };
	struct rec guest = { .frames = 0 }, host = { .frames = 0 }, node;
	int wg, wh, en;
	uint8_t f[60];

	(void)state;
	assert_non_null(sw);
	memset(&node, 0, sizeof(node));
	memcpy(node.mac, GUEST, 6);
	p.name = "guest", p.ctx = &guest;
	wg = net_switch_attach(sw, &p);
	p.name = "tap", p.ctx = &host;
	wh = net_switch_attach(sw, &p);
	p.name = "node", p.ctx = &node, p.wants = ep_wants, p.no_learn = true;
	en = net_switch_attach(sw, &p);
	assert_true(wg >= 0 && wh >= 0 && en >= 0);
	net_switch_input(sw, wg, f, frame(f, BCAST, GUEST, ET_OTHER)); /* learned on the guest's port */
	net_switch_input(sw, wh, f, frame(f, BCAST, HOST, ET_OTHER));  /* and the host on the tap's */
	guest.frames = host.frames = 0;
	net_switch_input(sw, en, f, frame(f, HOST, GUEST, ET_WANTED)); /* the node speaks as the guest */
	assert_int_equal(host.frames, 1);
	assert_int_equal(guest.frames, 0);
	/* the host answers the guest: the node's kind goes to the node, the rest to the guest's port */
	net_switch_input(sw, wh, f, frame(f, GUEST, HOST, ET_WANTED));
	assert_int_equal(node.frames, 1);
	assert_int_equal(guest.frames, 0);
	net_switch_input(sw, wh, f, frame(f, GUEST, HOST, ET_OTHER));
	assert_int_equal(guest.frames, 1);
	assert_int_equal(node.frames, 1);
	assert_int_equal(net_switch_stats(sw)->dropped_unwanted, 0);
	net_switch_free(sw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoint_to_endpoint),
		cmocka_unit_test(test_unwanted_not_flooded),
		cmocka_unit_test(test_wire_learning),
		cmocka_unit_test(test_no_learn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
