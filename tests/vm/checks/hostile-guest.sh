#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# A hostile guest (server: the loopback backend). As root the guest:
#   1. posts thousands of random work requests through libionic (hostile_verbs.c: random
#      opcodes, flags, scatter lists, keys and addresses on an RC and a UD queue pair), and
#      checks that a SEND, an RDMA WRITE and an RDMA READ are still exact afterwards;
#   2. with the drivers bound, stores random values into the doorbell BAR and the interrupt
#      control block (hostile_mmio.py doorbells);
#   3. unbinds the driver, turns bus mastering off, and stores random values into every
#      register of every BAR, dev_cmd and its doorbell included (hostile_mmio.py all);
#   4. binds the driver again: the driver resets the device, and the device works: link,
#      ionic_0 with an active port, ibv_rc_pingpong, and hostile_verbs' exact exchange.
# The runner checks that the server is still alive after the run and exits cleanly.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

JOB=$(dirname "$0")
IP=192.168.200.2
SEED=${ERNIC_HOSTILE_SEED:-1796112290} # fixed for CI; any other value explores further
N=${ERNIC_HOSTILE_WRS:-4000}
STORES=${ERNIC_HOSTILE_STORES:-20000}
echo "seed $SEED"

modprobe rdma_ucm 2>/dev/null
ionic_up $IP/24 && rdma_up $IP || { fail hostile-setup "$WHY"; finish; }
BDF=$(basename "$(readlink -f "/sys/class/net/$IF/device")")
HV=/tmp/hostile_verbs
if out=$(gcc -std=c17 -O2 -Wall -Wextra -Werror "$JOB/hostile_verbs.c" -libverbs -o $HV 2>&1); then
	pass hostile-setup "$IF at $BDF, $IB, GID index $GID"
else
	fail hostile-setup "hostile_verbs.c does not build: $out"
	finish
fi

# 1. Random work requests; the program itself checks the exact exchange at the end.
if timeout 900 $HV "$IB" "$GID" "$SEED" "$N" >/tmp/hv.out 2>&1; then
	pass hostile-verbs "$(head -1 /tmp/hv.out)"
else
	fail hostile-verbs "$(tail -3 /tmp/hv.out | tr '\n' ' ') $(dmesg | grep -i -e ionic -e rdma | tail -3 | tr '\n' ';')"
fi

# 2. Random doorbells and interrupt-control stores under the bound drivers.
if out=$(timeout 600 python3 "$JOB/hostile_mmio.py" "$BDF" "$SEED" "$STORES" doorbells 2>&1); then
	pass hostile-doorbells "$out"
else
	fail hostile-doorbells "$out"
fi

# 3. Unbound, bus mastering off (memory decoding on, so the stores reach the device): every
#    register of every BAR.
drv=/sys/bus/pci/drivers/ionic
echo "$BDF" >$drv/unbind 2>/dev/null
gone() { [ ! -e "/sys/bus/pci/devices/$BDF/driver" ]; }
wait_for 60 gone || { fail hostile-unbind "the driver does not let go of $BDF"; finish; }
python3 - "$BDF" <<'EOF'
import sys
p = "/sys/bus/pci/devices/%s/config" % sys.argv[1]
with open(p, "r+b", buffering=0) as f:
    f.seek(4)
    cmd = int.from_bytes(f.read(2), "little")
    f.seek(4)
    f.write(((cmd | 0x2) & ~0x4).to_bytes(2, "little"))
EOF
cmd=$(od -An -tx2 -j4 -N2 "/sys/bus/pci/devices/$BDF/config" | tr -d ' ')
echo "command register 0x$cmd after the unbind"
if out=$(timeout 600 python3 "$JOB/hostile_mmio.py" "$BDF" "$((SEED + 1))" "$STORES" all 2>&1); then
	pass hostile-registers "$out (command register 0x$cmd)"
else
	fail hostile-registers "$out"
fi

# 4. Bound again: the driver's reset brings the device back.
echo "$BDF" >$drv/bind 2>/dev/null
bound() { [ -e "/sys/bus/pci/devices/$BDF/driver" ] && ionic_if; }
if wait_for 120 bound; then
	pass hostile-rebind "$(ionic_if)"
else
	fail hostile-rebind "$(dmesg | grep -i ionic | tail -5 | tr '\n' ';')"
	finish
fi
if ionic_up $IP/24 && rdma_up $IP; then
	pass hostile-device-back "$IF, $IB port active, GID index $GID"
else
	fail hostile-device-back "$WHY"
	finish
fi
if both_ends hostile-pingpong 120 ibv_rc_pingpong -d "$IB" -g "$GID" -n 100 -s 4096 -c; then
	pass hostile-pingpong
else
	fail hostile-pingpong "$WHY"
fi
if timeout 300 $HV "$IB" "$GID" "$SEED" 0 >/tmp/hv2.out 2>&1; then
	pass hostile-exact "$(tail -1 /tmp/hv2.out)"
else
	fail hostile-exact "$(tail -3 /tmp/hv2.out | tr '\n' ' ')"
fi
echo "--- kernel log"
dmesg | grep -i -e ionic -e rdma | tail -20
finish
