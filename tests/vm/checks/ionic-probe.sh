#!/bin/sh
# shellcheck disable=SC2317 # the probes below run through wait_for
# Guest checks: the emulated NIC appears on the PCI bus with the Pensando ionic PF id, the
# in-kernel ionic driver binds to it, and the driver logs the firmware version the device
# reports (ERNIC_FW_VERSION, from the job's env file). Every boot and every QEMU run of the
# job runs the same checks, so a reboot or a second QEMU against the same server must bring
# the device up again just as well.
# shellcheck source=SCRIPTDIR/../guest/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

ID=1dd8:1002
FW=${ERNIC_FW_VERSION:-1.0.0-ernic}
echo "run ${ERNIC_RUN:-?} boot $ERNIC_BOOT: expecting $ID, firmware $FW"
lspci -nnk

# The sysfs directory of the first PCI function with vendor 0x1dd8, device 0x1002.
ionic_dev() {
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1dd8 ] && [ "$(cat "$d/device")" = 0x1002 ] && { echo "$d"; return 0; }
	done
	return 1
}
bound_to_ionic() {
	d=$(ionic_dev) && [ "$(basename "$(readlink "$d/driver")")" = ionic ]
}
fw_logged() {
	dmesg | grep -i ionic | grep -qF -- "$FW"
}

if lspci -nn | grep -qi "\[$ID\]"; then
	pass ionic-pci-id
else
	fail ionic-pci-id "no [$ID] in lspci -nn: $(lspci -nn | tr '\n' ';')"
fi

# modprobe returns once the probe ran, but give a slow (TCG) probe some room anyway.
if wait_for 20 bound_to_ionic; then
	pass ionic-driver-bound
elif d=$(ionic_dev); then
	drv=$(readlink "$d/driver" 2>/dev/null)
	fail ionic-driver-bound "$(basename "$d") driver '${drv:+$(basename "$drv")}'; ionic log: $(dmesg | grep -i ionic | tail -3)"
else
	fail ionic-driver-bound "no $ID device"
fi

if wait_for 10 fw_logged; then
	pass ionic-fw-version
	dmesg | grep -i ionic | grep -F -- "$FW"
else
	fail ionic-fw-version "no ionic line with '$FW'; ionic log: $(dmesg | grep -i ionic | tail -3)"
fi

echo "--- ionic kernel log"
dmesg | grep -i ionic
finish
